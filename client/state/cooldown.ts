/**
 * Cooldown after the epoch's last round `H` (docs/protocol.md, "The end of an epoch"):
 * apply round `H − 1`'s results with round `H`'s witnesses (an epoch that ended early
 * loses only round `H`), then write the checkpoint, so it holds every applied step.
 *
 * Pure.
 *
 * @module
 */
import { epochIndexOf } from "../round_view.ts";
import { appliesDone, planApplies } from "./common.ts";
import { type Intent, intentKey, type PlanInput } from "./intent.ts";

/** What to do during Cooldown. */
export function planCooldown(input: PlanInput): Intent[] {
  const { state, signer, progress } = input;
  if (!progress.modelReady) return [];
  if (epochIndexOf(state, signer) < 0) return [];
  const out: Intent[] = [...planApplies(input)];
  if (!input.checkpoints || !appliesDone(input)) return out;
  const checkpoint: Intent = {
    kind: "Checkpoint",
    epoch: state.progress.epoch,
    step: state.progress.step,
  };
  if (!progress.started(intentKey(checkpoint))) out.push(checkpoint);
  return out;
}
