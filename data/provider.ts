/**
 * The one interface every data source implements (local folder, HTTP, TCP data server),
 * so the trainer and the client never care where tokens come from.
 *
 * @module
 */
import type { BatchId } from "../common/mod.ts";

/**
 * A batch of token sequences, row-major `[count, seqLen]`.
 * Labels are the inputs themselves: the model predicts token t+1 from tokens 0..t,
 * so a sequence of `seqLen` tokens yields `seqLen - 1` predictions.
 */
export interface TokenBatch {
  /** Number of sequences (rows). */
  count: number;
  /** Tokens per sequence (columns). */
  seqLen: number;
  /** `[count, seqLen]` token ids. */
  tokens: Uint32Array;
}

/** Where training sequences come from. Implementations must return exactly the requested rows. */
export interface DataProvider {
  /** Tokens per sequence. */
  readonly seqLen: number;
  /** Number of sequences available; valid sequence indices are `0..numSequences-1`. */
  readonly numSequences: number;
  /**
   * The sequences `batch.start..batch.end` (inclusive), in that order.
   * Rejects (never returns a short or partial batch) when any index is out of range or a read fails.
   */
  getSamples(batch: BatchId, options?: { signal?: AbortSignal }): Promise<TokenBatch>;
  /** Releases files, sockets and timers. */
  close(): Promise<void>;
}
