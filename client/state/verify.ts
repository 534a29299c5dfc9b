/**
 * The client's part in verification (docs/protocol.md, "Verification"), in a run with
 * `verification_percent > 0`:
 * - every member keeps θ as each round trains on it (`KeepParams`, after the round's apply and
 *   before its own training or weight decay, which therefore wait for it): whoever is seated for
 *   one of the round's samples later replays from it;
 * - a member seated in the current stage of an open task, that has not reported and kept the
 *   task's round's θ, verifies it (`Verify`). One that did not keep it cannot: it stays silent,
 *   and the coordinator counts it idle.
 *
 * Pure.
 *
 * @module
 */
import { memberIndexOf, type RoundView } from "../round_view.ts";
import { appliesDone } from "./common.ts";
import { type Intent, intentKey, type PlanInput, roundKey } from "./intent.ts";
import type { CoordinatorState } from "../../coordinator/core/mod.ts";

/** Whether the run verifies sampled results. */
export function isVerifying(state: CoordinatorState): boolean {
  return state.config.verificationPercent > 0;
}

/** The θ copy of the round, due once its applies are done (verifying runs only). */
export function planKeepParams(input: PlanInput, view: RoundView): Intent[] {
  const { state, progress } = input;
  if (!isVerifying(state) || view.self === null || !progress.modelReady) return [];
  if (!appliesDone(input)) return [];
  const keep: Intent = { kind: "KeepParams", epoch: state.progress.epoch, height: view.height };
  return progress.started(intentKey(keep)) ? [] : [keep];
}

/** Whether the round's θ was kept, or need not be (a run that does not verify). */
export function paramsKept(input: PlanInput, height: number): boolean {
  return !isVerifying(input.state) ||
    input.progress.done(roundKey("KeepParams", input.state.progress.epoch, height));
}

/** The verifications this client owes now, oldest task first. */
export function planVerifications(input: PlanInput): Intent[] {
  const { state, progress, signer } = input;
  if (!isVerifying(state) || !progress.modelReady || input.diverged) return [];
  const runState = state.runState;
  if (runState !== "RoundTrain" && runState !== "RoundWitness" && runState !== "Cooldown") {
    return [];
  }
  const self = memberIndexOf(state, signer);
  if (self < 0) return [];
  const epoch = state.progress.epoch;
  const out: Intent[] = [];
  for (const task of state.epochState.verificationTasks) {
    const seated = task.seats.some((s) =>
      s.stage === task.stage && s.verifier === self && s.verdict === null
    );
    if (!seated || !progress.done(roundKey("KeepParams", epoch, task.height))) continue;
    const verify: Intent = {
      kind: "Verify",
      epoch,
      height: task.height,
      trainer: task.trainer,
      stage: task.stage,
    };
    if (!progress.started(intentKey(verify))) out.push(verify);
  }
  return out;
}

/**
 * The rounds whose θ a verifying client keeps now: the current round and the one before (a
 * sample of the latter opens when the next round starts), and the round of every open task.
 */
export function keptParamHeights(state: CoordinatorState, current: number): number[] {
  const heights = new Set([current, current - 1]);
  for (const t of state.epochState.verificationTasks) heights.add(t.height);
  return [...heights].filter((h) => h >= 0).sort((a, b) => a - b);
}
