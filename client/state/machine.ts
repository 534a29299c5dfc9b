/**
 * The client state machine: one planner per run state, chosen by a `switch` over
 * `RunState` with an exhaustiveness check. Given the coordinator's latest state, what this
 * client has done ({@link ClientProgress}) and what the exchange knows
 * ({@link ExchangeFacts}), it returns the intents to carry out now. The driver
 * (client/client.ts) calls it on every coordinator update and every local event.
 *
 * ```mermaid
 * stateDiagram-v2
 *   WaitingForMembers --> Warmup: LoadModel, Finished{warmup}, warmup witness
 *   Warmup --> RoundTrain: Apply(h-2), HealthChecks, Train, Finished, Witness
 *   RoundTrain --> RoundWitness: Witness (if not sent), late Train/Finished
 *   RoundWitness --> RoundTrain
 *   RoundWitness --> Cooldown: Apply(H-1), ShareModel, CooldownWitness, Checkpoint
 *   Cooldown --> WaitingForMembers: Join again if Dropped/Withdrawn; Apply(H-1) if Cooldown was missed
 * ```
 *
 * Pure.
 *
 * @module
 */
import { epochIndexOf, isInEpoch, roundView } from "../round_view.ts";
import { planCooldown, planMissedCooldown } from "./cooldown.ts";
import { type Intent, intentKey, type PlanInput } from "./intent.ts";
import { planRoundTrain } from "./train.ts";
import { planWarmup } from "./warmup.ts";
import { planRoundWitness } from "./witness.ts";
import { equalBytes, type PublicKeyBytes } from "../../common/mod.ts";
import { type CoordinatorState, currentRound } from "../../coordinator/core/mod.ts";

/** The intents due in `input.state`, in the order they should start. */
export function planActions(input: PlanInput): Intent[] {
  const { state } = input;
  const runState = state.runState;
  // A diverged client only waits: for the next epoch's Warmup, whose load resyncs it.
  if (input.diverged && runState !== "WaitingForMembers" && runState !== "Warmup") return [];
  const left = planLeftBehind(input);
  if (left !== null) return left;
  switch (runState) {
    case "Uninitialized":
    case "Finished":
    case "Paused":
      return [];
    case "WaitingForMembers":
      return [...planMissedCooldown(input), ...planRejoin(input)];
    case "Warmup":
      return planWarmup(input);
    case "RoundTrain":
    case "RoundWitness": {
      const view = roundView(state, currentRound(state).height, input.signer);
      if (view === null) return [];
      return runState === "RoundTrain"
        ? planRoundTrain(input, view)
        : planRoundWitness(input, view);
    }
    case "Cooldown":
      return planCooldown(input);
    default: {
      const unreachable: never = runState;
      throw new Error(`unknown run state ${String(unreachable)}`);
    }
  }
}

/**
 * While waiting for members: a client the coordinator dropped or withdrew has been
 * forgotten, so it asks to join again (once per epoch).
 */
export function planRejoin(input: PlanInput): Intent[] {
  const { state, signer, progress } = input;
  if (!wasRemoved(state, signer)) return [];
  const join: Intent = { kind: "Join", epoch: state.progress.epoch };
  return progress.started(intentKey(join)) ? [] : [join];
}

/**
 * Inside an epoch this client is not in, though it was in an earlier one: it was dropped while
 * cut off (a lost link, a long stall) and the run moved on past the WaitingForMembers where it
 * would have joined again. It joins now (once per epoch), for the next epoch; otherwise it
 * would watch until the coordinator hangs up on an idle non-member. Null when not the case.
 */
export function planLeftBehind(input: PlanInput): Intent[] | null {
  const { state, signer, progress } = input;
  const last = input.lastMemberEpoch ?? null;
  if (!isInEpoch(state) || last === null || last >= state.progress.epoch) return null;
  if (epochIndexOf(state, signer) >= 0) return null;
  const join: Intent = { kind: "Join", epoch: state.progress.epoch };
  return progress.started(intentKey(join)) ? [] : [join];
}

/** Whether the state lists this client as Dropped, Withdrawn or Ejected. */
export function wasRemoved(state: CoordinatorState, signer: PublicKeyBytes): boolean {
  const { clients, exitedClients } = state.epochState;
  return [...clients, ...exitedClients].some((c) =>
    equalBytes(c.id.signer, signer) && c.state !== "Healthy"
  );
}
