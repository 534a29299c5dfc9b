/**
 * Warmup (as Psyche's client, shared/client/src/state/): load the model, tell the epoch's peers
 * over gossip (`Finished{warmup}`), and once every Healthy client of the epoch said so, report to
 * the coordinator with a warmup witness whose proof index is this client's own index. The
 * coordinator starts round 0 when all expected warmup witnesses are in (or at its timer).
 *
 * Pure.
 *
 * @module
 */
import { epochIndexOf } from "../round_view.ts";
import { healthyPeers } from "./common.ts";
import { type Intent, intentKey, type PlanInput } from "./intent.ts";

/** What to do during Warmup. */
export function planWarmup(input: PlanInput): Intent[] {
  const { state, signer, progress, facts } = input;
  const epoch = state.progress.epoch;
  const index = epochIndexOf(state, signer);
  if (index < 0 || state.epochState.clients[index].state !== "Healthy") return [];
  const load: Intent = { kind: "LoadModel", epoch };
  if (!progress.started(intentKey(load))) return [load];
  if (!progress.done(intentKey(load)) || !progress.modelReady) return []; // loading, or failed
  const announce: Intent = { kind: "AnnounceWarmupFinished", epoch };
  if (!progress.started(intentKey(announce))) return [announce];
  if (!progress.done(intentKey(announce))) return [];
  const report: Intent = {
    kind: "SendWarmupWitness",
    epoch,
    proof: { position: index, index, witness: false },
  };
  if (progress.started(intentKey(report))) return [];
  return facts.warmupFinishedBy(healthyPeers(state)) ? [report] : [];
}
