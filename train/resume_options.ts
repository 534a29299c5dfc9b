/**
 * A resumed run's settings: what the command line left unset comes from the checkpoint's
 * `trainer_state.json`, so `--resume DIR` alone continues the saved run with its optimizer, batch
 * geometry and data order (and the memory plan is made for that shape, not the defaults). Pure: the
 * caller reads the state.
 *
 * @module
 */
import type { CheckpointSetting, TrainOptions } from "./cli.ts";
import { type TrainerState, TrainerStateError } from "./train_state.ts";

/** Flags of a resumed run with where each inherited value came from. */
export interface ResumedOptions {
  options: TrainOptions;
  /** The settings taken from the checkpoint, as flags with their values (`--total-batch 4`). */
  inherited: string[];
}

/**
 * `options` with every setting of `options.fromCheckpoint` taken from `saved`. A checkpoint
 * written before `micro_batch` was recorded keeps the command line's (or default) micro-batch
 * when it divides the total batch, else the largest divisor of it not above that. Throws a
 * TrainerStateError when the result is not a valid batch geometry.
 */
export function resumeOptions(options: TrainOptions, saved: TrainerState): ResumedOptions {
  const from = new Set<CheckpointSetting>(options.fromCheckpoint);
  const optimizer = from.has("optimizer") ? saved.optimizer : options.optimizer;
  const totalBatch = from.has("total-batch") ? saved.totalBatch : options.totalBatch;
  let microBatch = options.microBatch;
  if (from.has("micro-batch")) {
    microBatch = saved.microBatch ?? largestDivisorAtMost(totalBatch, options.microBatch);
  }
  const sequenceLength = from.has("sequence-length")
    ? saved.sequenceLength
    : options.sequenceLength;
  const seed = saved.data.shuffleSeed;
  const shuffle = from.has("shuffle") ? seed !== null : options.shuffle;
  const inherited: string[] = [];
  if (from.has("optimizer")) inherited.push(`--optimizer ${optimizer}`);
  if (from.has("total-batch")) inherited.push(`--total-batch ${totalBatch}`);
  if (from.has("micro-batch")) inherited.push(`--micro-batch ${microBatch}`);
  if (from.has("sequence-length")) inherited.push(`--sequence-length ${sequenceLength}`);
  if (from.has("shuffle")) inherited.push(seed === null ? "--no-shuffle" : `--seed ${seed}`);
  if (totalBatch % microBatch !== 0) {
    throw new TrainerStateError(
      `Cannot resume from "${options.resume}": --total-batch ${totalBatch} is not a multiple ` +
        `of --micro-batch ${microBatch}`,
    );
  }
  return {
    options: {
      ...options,
      optimizer,
      totalBatch,
      microBatch,
      sequenceLength,
      shuffle,
      seed: from.has("shuffle") && seed !== null ? seed : options.seed,
    },
    inherited,
  };
}

/** The largest divisor of `n` that is at most `limit` (at least 1). */
export function largestDivisorAtMost(n: number, limit: number): number {
  for (let d = Math.min(n, limit); d > 1; d--) if (n % d === 0) return d;
  return 1;
}
