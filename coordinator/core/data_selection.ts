/**
 * Which sequence indices each trainer works on in a round (Psyche's
 * shared/coordinator/src/data_selection.rs), and the global batch-size ramp (§2.2).
 *
 * Trainers (clients whose committee is Trainer, in index order) are shuffled with the
 * LCG Fisher–Yates of the round's seed; the round's `batchSize` sequences starting at
 * `dataIndex` are cut into one contiguous inclusive range per trainer, the first
 * `batchSize % trainers` getting one more than the rest. Trainers beyond `batchSize`
 * get nothing.
 *
 * @module
 */

import type { CommitteeSelection } from "./committee_selection.ts";
import { deterministicShuffle } from "./deterministic_shuffle.ts";
import type { CoordinatorConfig } from "./types.ts";
import type { BatchId } from "../../common/mod.ts";

/** The config fields the batch-size ramp reads (a whole CoordinatorConfig also fits). */
export type BatchRampConfig = Pick<
  CoordinatorConfig,
  "globalBatchSizeStart" | "globalBatchSizeEnd" | "globalBatchSizeWarmupTokens"
>;

/**
 * Sequences in the global batch after `tokens` tokens have been processed: `end` once
 * `tokens >= globalBatchSizeWarmupTokens`, else
 * `round(start + (end - start) * tokens / warmupTokens)` with halves rounded up.
 *
 * Computed in exact integer arithmetic (not floating point as Psyche does) so that every
 * backend, including the C Solana program, gets the same answer; the two agree except
 * where a float rounding error crosses a .5 boundary.
 *
 * @example
 * ```ts
 * import { batchSizeForTokens } from "./data_selection.ts";
 * const config = { globalBatchSizeStart: 8, globalBatchSizeEnd: 16, globalBatchSizeWarmupTokens: 1000 };
 * // 8 + 8 * 500 / 1000 = 12
 * if (batchSizeForTokens(config, 500) !== 12) throw new Error("halfway is 12");
 * ```
 */
export function batchSizeForTokens(config: BatchRampConfig, tokens: number): number {
  if (!Number.isSafeInteger(tokens) || tokens < 0) {
    throw new RangeError(`tokens must be a non-negative safe integer, found ${String(tokens)}`);
  }
  const start = config.globalBatchSizeStart;
  const end = config.globalBatchSizeEnd;
  const warmup = config.globalBatchSizeWarmupTokens;
  if (tokens >= warmup) return end;
  // round((start*W + (end-start)*t) / W), half up: floor((2*num + W) / (2*W)).
  const w = BigInt(warmup);
  const num = BigInt(start) * w + (BigInt(end) - BigInt(start)) * BigInt(tokens);
  const rounded = (2n * num + w) / (2n * w);
  return Number(rounded);
}

/**
 * The data index of `step` (steps start at 1) when the run started at data index 0 and
 * every step consumed the ramp's batch size: the replay Psyche's
 * `get_data_index_for_step` does for `--restart-from-step`. Steps `<= 1` give 0.
 */
export function dataIndexForStep(
  config: BatchRampConfig,
  maxSeqLen: number,
  step: number,
): number {
  if (!Number.isSafeInteger(step)) {
    throw new RangeError(`step must be an integer, found ${String(step)}`);
  }
  if (!Number.isSafeInteger(maxSeqLen) || maxSeqLen <= 0) {
    throw new RangeError(`maxSeqLen must be a positive integer, found ${String(maxSeqLen)}`);
  }
  let dataIndex = 0;
  for (let s = 1; s < step; s++) {
    dataIndex += batchSizeForTokens(config, dataIndex * maxSeqLen);
  }
  return dataIndex;
}

/** Options of {@linkcode assignDataForRound} and {@linkcode batchIdsForRound}. */
export interface AssignDataOptions {
  /** Clients in the round (`round.clientsLen`); must equal `selection.totalNodes`. */
  clientsLen: number;
  /** The round's committee selection. */
  selection: CommitteeSelection;
  /** First sequence index of the round (`round.dataIndex`). */
  dataIndex: number;
  /** Sequences in the round (`batchSizeForTokens(config, dataIndex * maxSeqLen)`). */
  batchSize: number;
  /** The round's random seed: seeds the trainer shuffle. */
  randomSeed: bigint;
}

/** One trainer's share of a round. */
export interface DataAssignment {
  batch: BatchId;
  clientIndex: number;
}

/**
 * Every trainer's inclusive range of sequence indices for the round, sorted by batch
 * start. Trainers that get no sequences (more trainers than sequences) are absent.
 *
 * @example
 * ```ts
 * import { CommitteeSelection } from "./committee_selection.ts";
 * import { assignDataForRound } from "./data_selection.ts";
 * const selection = CommitteeSelection.create({
 *   tieBreakerNodes: 0, verificationPercent: 0, witnessNodes: 1, totalNodes: 3, randomSeed: 1n,
 * });
 * const a = assignDataForRound({ clientsLen: 3, selection, dataIndex: 10, batchSize: 7, randomSeed: 1n });
 * // 7 = 3 + 2 + 2, contiguous from 10.
 * if (a[0].batch.start !== 10 || a[2].batch.end !== 16) throw new Error("covers [10, 16]");
 * ```
 */
export function assignDataForRound(opts: AssignDataOptions): DataAssignment[] {
  const { clientsLen, selection, dataIndex, batchSize, randomSeed } = opts;
  if (clientsLen !== selection.totalNodes) {
    throw new RangeError(
      `clientsLen (${clientsLen}) does not match the selection's totalNodes (${selection.totalNodes})`,
    );
  }
  if (!Number.isSafeInteger(dataIndex) || dataIndex < 0) {
    throw new RangeError(`dataIndex must be a non-negative safe integer, found ${dataIndex}`);
  }
  if (!Number.isSafeInteger(batchSize) || batchSize < 0) {
    throw new RangeError(`batchSize must be a non-negative integer, found ${batchSize}`);
  }
  const trainers = deterministicShuffle(selection.trainerIndices(), randomSeed);
  const n = trainers.length;
  const out: DataAssignment[] = [];
  if (n === 0) return out;
  const base = Math.floor(batchSize / n);
  const rem = batchSize % n;
  let cursor = dataIndex;
  for (let k = 0; k < n; k++) {
    const size = base + (k < rem ? 1 : 0);
    if (size === 0) continue;
    out.push({ batch: { start: cursor, end: cursor + size - 1 }, clientIndex: trainers[k] });
    cursor += size;
  }
  return out;
}

/** The round's batch ranges without owners (what witnesses wait for), sorted by start. */
export function batchIdsForRound(opts: AssignDataOptions): BatchId[] {
  return assignDataForRound(opts).map((a) => a.batch);
}

/** The batch assigned to client `clientIndex`, or null if it trains nothing this round. */
export function batchForClient(
  assignments: readonly DataAssignment[],
  clientIndex: number,
): BatchId | null {
  for (const a of assignments) if (a.clientIndex === clientIndex) return a.batch;
  return null;
}
