/**
 * Which sequences each micro-batch of each step reads. Step `s` (1-based) of a run with `G`
 * sequences per step covers sequence indices `[(s−1)·G, s·G)` like Psyche's train.rs, taken
 * modulo the dataset size so a small dataset is simply repeated (epochs).
 *
 * @module
 */
import type { BatchId } from "../common/mod.ts";
import type { DataProvider } from "../data/mod.ts";
import { concatRows, type TrainingRows } from "../model/mod.ts";

/** Batch geometry. */
export interface BatchPlan {
  /** Sequences per optimizer step. */
  totalBatch: number;
  /** Sequences per forward/backward pass; divides totalBatch. */
  microBatch: number;
  /** Sequences in the dataset. */
  numSequences: number;
}

/**
 * The inclusive index ranges (in order) making up micro-batch `micro` (0-based) of step `step`
 * (1-based). Usually one range; more where the micro-batch wraps past the dataset's end.
 */
export function microBatchRanges(step: number, micro: number, plan: BatchPlan): BatchId[] {
  const { totalBatch, microBatch, numSequences } = plan;
  if (!Number.isInteger(step) || step < 1) throw new RangeError(`step must be >= 1, got ${step}`);
  const perStep = totalBatch / microBatch;
  if (!Number.isInteger(micro) || micro < 0 || micro >= perStep) {
    throw new RangeError(`micro-batch index ${micro} outside [0, ${perStep})`);
  }
  if (numSequences < 1) throw new RangeError("the dataset has no sequences");
  let start = ((step - 1) * totalBatch + micro * microBatch) % numSequences;
  let left = microBatch;
  const out: BatchId[] = [];
  while (left > 0) {
    const n = Math.min(left, numSequences - start);
    out.push({ start, end: start + n - 1 });
    left -= n;
    start = 0;
  }
  return out;
}

/**
 * Reads the sequences of `ranges` and concatenates them: `[Σ rows, seqLen]` token ids, with the
 * labels, position ids and document lengths the provider serves (model/rows.ts `concatRows`).
 */
export async function readRanges(
  provider: DataProvider,
  ranges: BatchId[],
  options?: { signal?: AbortSignal },
): Promise<TrainingRows> {
  const parts = [];
  for (const r of ranges) parts.push(await provider.getSamples(r, options));
  return concatRows(parts, { seqLen: provider.seqLen });
}
