/**
 * One client's DisTrO result for one step, and the canonical order results are
 * aggregated in (so every honest client sums them identically).
 *
 * @module
 */

import type { SparseParam } from "./compress.ts";
import type { BatchId } from "../common/mod.ts";

/**
 * The digests (sha256 of optimizer/state_wire.ts bytes) of the trainer's DisTrO state before
 * and after the step: the commitment chain a verifier replays (docs/protocol.md,
 * "Verification"). `input` is its previous result's `output`, or the zero state's digest.
 */
export interface StateDigests {
  readonly input: Uint8Array;
  readonly output: Uint8Array;
}

/**
 * What a trainer produced for one step: for every parameter (in model order) the
 * per-chunk top-k indices and values (±1 when 1-bit quantized).
 */
export interface DistroResult {
  /** Training step the result belongs to. */
  readonly step: number;
  /** The batch the trainer was assigned (inclusive sequence-index range). */
  readonly batch: BatchId;
  /** Trainer-chosen nonce, distinguishes re-sends of the same batch. */
  readonly trainerNonce: number;
  /** One entry per parameter, in model order. */
  readonly params: readonly SparseParam[];
  /** The state chain, in runs that verify results (`verification_percent > 0`). */
  readonly states?: StateDigests;
}

/** Orders results by batch start, then batch end, then trainer nonce. */
export function compareResults(a: DistroResult, b: DistroResult): number {
  return a.batch.start - b.batch.start || a.batch.end - b.batch.end ||
    a.trainerNonce - b.trainerNonce;
}

/**
 * The results in canonical order (a new array). Two results for the same batch cannot
 * both be applied (each batch's consensus commitment is applied once): `RangeError`.
 */
export function canonicalOrder(results: readonly DistroResult[]): DistroResult[] {
  const sorted = [...results].sort(compareResults);
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1].batch, b = sorted[i].batch;
    if (a.start === b.start && a.end === b.end) {
      throw new RangeError(
        `two results for batch [${a.start}, ${a.end}]: each batch's result is applied once`,
      );
    }
  }
  return sorted;
}
