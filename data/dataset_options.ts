/**
 * The settings every provider needs to cut and check a dataset the same way.
 *
 * @module
 */
import type { Shuffle, TokenSize } from "../common/mod.ts";

/** How to cut and check a dataset; shared by every provider. */
export interface DatasetOptions {
  /** Tokens per sequence. */
  seqLen: number;
  /** Width of raw tokens (and the width `.npy` dtypes must have). */
  tokenSize: TokenSize;
  /** Default `DontShuffle`. */
  shuffle?: Shuffle;
  /** When given, tokens `>= vocabSize` are rejected with the file and offset. */
  vocabSize?: number;
}
