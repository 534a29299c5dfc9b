/**
 * Validation loss over a held-out provider, independent of the model: the caller
 * passes `lossOf(batch)`, the model's mean next-token loss over one batch. Batches
 * are taken in order from sequence 0 (no randomness), so every run evaluates the same
 * tokens and losses are comparable across runs and clients.
 *
 * @module
 */
import type { DataProvider, TokenBatch } from "./provider.ts";

/** Options of {@linkcode evaluateLoss}. */
export interface EvaluateLossOptions {
  /** Sequences per batch handed to `lossOf`. */
  batchSize: number;
  /** Stop after this many batches (default: the whole provider). */
  maxBatches?: number;
  /** Aborts between and during batch reads. */
  signal?: AbortSignal;
}

/** The result of {@linkcode evaluateLoss}. */
export interface LossReport {
  /** Mean of the per-batch losses, weighted by sequences per batch. */
  meanLoss: number;
  /** Sequences evaluated. */
  sequences: number;
  /** Batches evaluated. */
  batches: number;
}

/**
 * Evaluates `lossOf` over consecutive batches of `provider` (the last one may be
 * smaller) and averages, weighting each batch by its sequence count. Throws if
 * `lossOf` returns a non-finite loss, naming the batch.
 *
 * @example
 * ```ts
 * import { evaluateLoss } from "./validation.ts";
 * import { DummyDataProvider } from "./dummy.ts";
 * const report = await evaluateLoss(new DummyDataProvider(8), async (b) => b.count, {
 *   batchSize: 4,
 *   maxBatches: 2,
 * });
 * if (report.meanLoss !== 4 || report.sequences !== 8) throw new Error("wrong");
 * ```
 */
export async function evaluateLoss(
  provider: DataProvider,
  lossOf: (batch: TokenBatch) => Promise<number>,
  options: EvaluateLossOptions,
): Promise<LossReport> {
  const { batchSize } = options;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new RangeError(`batchSize must be a positive integer, found ${batchSize}`);
  }
  const available = Math.ceil(provider.numSequences / batchSize);
  const batches = Math.min(available, options.maxBatches ?? available);
  let weighted = 0;
  let sequences = 0;
  for (let b = 0; b < batches; b++) {
    options.signal?.throwIfAborted();
    const start = b * batchSize;
    const end = Math.min(start + batchSize, provider.numSequences) - 1;
    const batch = await provider.getSamples({ start, end }, { signal: options.signal });
    const loss = await lossOf(batch);
    if (!Number.isFinite(loss)) {
      throw new RangeError(`lossOf returned ${loss} for validation batch ${start}..${end}`);
    }
    weighted += loss * batch.count;
    sequences += batch.count;
  }
  return { meanLoss: sequences === 0 ? NaN : weighted / sequences, sequences, batches };
}
