/**
 * The one interface every data source implements (local folder, HTTP, TCP data server),
 * so the trainer and the client never care where tokens come from.
 *
 * @module
 */
import type { BatchId } from "../common/mod.ts";

/**
 * A batch of token sequences, row-major `[count, seqLen]`.
 * Labels default to the inputs themselves: the model predicts token t+1 from tokens 0..t, so a
 * sequence of `seqLen` tokens yields `seqLen - 1` predictions. A source with Psyche's optional
 * columns (the `Preprocessed` parquet datasets) adds them; the trainer uses them (model/rows.ts).
 */
export interface TokenBatch {
  /** Number of sequences (rows). */
  count: number;
  /** Tokens per sequence (columns). */
  seqLen: number;
  /** `[count, seqLen]` token ids. */
  tokens: Uint32Array;
  /** `[count, seqLen]` labels, -100 where masked (no prediction); absent: the tokens. */
  labels?: Int32Array;
  /** `[count, seqLen]` RoPE position of each token, `< seqLen`; absent: `0..seqLen−1`. */
  positionIds?: Int32Array;
  /** `[count][documents]` lengths of the documents packed in each row; absent: one per row. */
  sequenceLengths?: number[][];
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
