/**
 * The `Dummy` data location: sequences of zero tokens (Psyche's dummy provider), for
 * tests and runs that exercise the protocol without real data.
 *
 * @module
 */
import type { DataProvider, TokenBatch } from "./provider.ts";
import { checkBatch } from "./sequence_index.ts";
import type { BatchId } from "../common/mod.ts";

/** Largest number of sequences the dummy provider claims to have. */
export const DUMMY_NUM_SEQUENCES = 2 ** 32 - 1;

/** Serves all-zero sequences of `seqLen` tokens for any in-range batch. */
export class DummyDataProvider implements DataProvider {
  /** Tokens per sequence. */
  readonly seqLen: number;
  /** Claims {@linkcode DUMMY_NUM_SEQUENCES} sequences. */
  readonly numSequences: number = DUMMY_NUM_SEQUENCES;

  /** A provider of `seqLen`-token zero sequences. */
  constructor(seqLen: number) {
    if (!Number.isInteger(seqLen) || seqLen < 1) {
      throw new RangeError(`seqLen must be a positive integer, found ${seqLen}`);
    }
    this.seqLen = seqLen;
  }

  /** `count` rows of zeros. */
  getSamples(batch: BatchId): Promise<TokenBatch> {
    try {
      checkBatch(batch, this.numSequences);
    } catch (e) {
      return Promise.reject(e);
    }
    const count = batch.end - batch.start + 1;
    return Promise.resolve({
      count,
      seqLen: this.seqLen,
      tokens: new Uint32Array(count * this.seqLen),
    });
  }

  /** Nothing to release. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}
