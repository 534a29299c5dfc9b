/**
 * Cooldown after the epoch's last round `H` (docs/protocol.md, "The end of an epoch"):
 * apply round `H − 1`'s results with round `H`'s witnesses (an epoch that ended early
 * loses only round `H`), then serve the parameters to the next epoch's joiners (P2P model
 * sharing, which also labels them with their digest; with the run's `snapshotDtype` bf16 every
 * client first rounds them to bf16) and write the checkpoint, so both hold every applied step;
 * a witness of round `H` then reports that digest to the coordinator.
 *
 * Pure.
 *
 * @module
 */
import { epochIndexOf, roundView } from "../round_view.ts";
import { appliesDone, planApplies } from "./common.ts";
import { type Intent, intentKey, type PlanInput } from "./intent.ts";
import { currentRound } from "../../coordinator/core/mod.ts";

/** What to do during Cooldown. */
export function planCooldown(input: PlanInput): Intent[] {
  const { state, signer, progress } = input;
  if (!progress.modelReady) return [];
  if (epochIndexOf(state, signer) < 0) return [];
  const out: Intent[] = [...planApplies(input)];
  if (!appliesDone(input)) return out;
  const share: Intent = {
    kind: "ShareModel",
    epoch: state.progress.epoch,
    step: state.progress.step,
    snapshotDtype: state.model.snapshotDtype,
  };
  if (!progress.started(intentKey(share))) out.push(share);
  if (progress.done(intentKey(share))) out.push(...cooldownWitness(input));
  if (!input.checkpoints) return out;
  const checkpoint: Intent = {
    kind: "Checkpoint",
    epoch: state.progress.epoch,
    step: state.progress.step,
  };
  if (!progress.started(intentKey(checkpoint))) out.push(checkpoint);
  return out;
}

/** The Cooldown witness of a witness of the epoch's last round, once, after the snapshot. */
function cooldownWitness(input: PlanInput): Intent[] {
  const { state, signer, progress } = input;
  const view = roundView(state, currentRound(state).height, signer);
  if (view === null || view.self === null || !view.self.isWitness) return [];
  const intent: Intent = {
    kind: "SendCooldownWitness",
    epoch: state.progress.epoch,
    step: state.progress.step,
    proof: view.self.witnessProof,
  };
  return progress.started(intentKey(intent)) ? [] : [intent];
}
