/**
 * Operator and membership calls: withdraw clients, pause and resume the run (Psyche's
 * `withdraw`, `pause` and `resume`, shared/coordinator/src/coordinator.rs). A checkpointer's
 * report ends Cooldown: machine_cooldown.ts.
 *
 * Same contract as the rest of the machine: mutate in place, or throw before mutating.
 *
 * @module
 */

import { CoordinatorError } from "./errors.ts";
import {
  CHANGED,
  changeState,
  checkNow,
  type Outcome,
  stateAfterEpoch,
  UNCHANGED,
  withdrawHealthyClients,
} from "./machine_core.ts";
import type { CoordinatorState } from "./types.ts";

/**
 * Marks client `index` Withdrawn (the host saw it disconnect). It leaves the client list
 * at the next clean-up point (Warmup tick, end of a round, end of Cooldown).
 * `InvalidWithdraw` if there is no such client or it is no longer Healthy.
 */
export function withdraw(state: CoordinatorState, index: number): Outcome {
  const client = Number.isSafeInteger(index) ? state.epochState.clients[index] : undefined;
  if (client === undefined) {
    throw new CoordinatorError(
      "InvalidWithdraw",
      `no client ${String(index)} (${state.epochState.clients.length} clients)`,
    );
  }
  if (client.state !== "Healthy") {
    throw new CoordinatorError("InvalidWithdraw", `client ${index} is already ${client.state}`);
  }
  client.state = "Withdrawn";
  return CHANGED;
}

/** Marks every Healthy client Withdrawn. */
export function withdrawAll(state: CoordinatorState): Outcome {
  return withdrawHealthyClients(state.epochState.clients) > 0 ? CHANGED : UNCHANGED;
}

/**
 * Pauses the run. While training (RoundTrain, RoundWitness, Cooldown) the pause is
 * pending: the epoch goes to Cooldown at the end of the current round and the run is
 * Paused when Cooldown ends. In WaitingForMembers or Warmup it pauses at once, withdrawing
 * everyone. Either way the next epoch is a cold start. Pausing twice is Unchanged;
 * WrongRunState when Uninitialized, Paused or Finished (Psyche says Halted; the run is not
 * halted for operators, who may still resume it).
 */
export function pause(state: CoordinatorState, now: number): Outcome {
  checkNow(now);
  switch (state.runState) {
    case "RoundTrain":
    case "RoundWitness":
    case "Cooldown":
      if (state.pendingPause) return UNCHANGED;
      state.pendingPause = true;
      return CHANGED;
    case "WaitingForMembers":
    case "Warmup":
      withdrawHealthyClients(state.epochState.clients);
      state.epochState.coldStartEpoch = true;
      changeState(state, "Paused", now);
      return CHANGED;
    case "Uninitialized":
    case "Paused":
    case "Finished":
      throw new CoordinatorError("WrongRunState", `cannot pause a run that is ${state.runState}`);
  }
}

/**
 * Resumes a Paused (or never started, Uninitialized) run: it waits for members again, or
 * is Finished if it already reached `totalSteps`. During training it cancels a pending
 * pause. `CannotResume` otherwise.
 */
export function resume(state: CoordinatorState, now: number): Outcome {
  checkNow(now);
  if (state.runState === "Paused" || state.runState === "Uninitialized") {
    changeState(state, stateAfterEpoch(state), now);
    return CHANGED;
  }
  if (state.pendingPause) {
    state.pendingPause = false;
    return CHANGED;
  }
  throw new CoordinatorError("CannotResume", `the run is ${state.runState} and not pausing`);
}
