/**
 * Turns a read plan into a {@linkcode TokenBatch}, for any transport that can fetch a
 * byte range of a file. Checks every read's length and every token, so a short read
 * or a bad token is an error, never a wrong batch.
 *
 * @module
 */
import { forEachLimited } from "./concurrency.ts";
import { DataError } from "./errors.ts";
import type { TokenBatch } from "./provider.ts";
import { planReads, type ReadRun, type SequenceIndex } from "./sequence_index.ts";
import { decodeTokens } from "./token_format.ts";
import type { BatchId } from "../common/mod.ts";

/** Fetches exactly `run.byteLength` bytes at `run.byteOffset` of `index.files[run.file]`. */
export type RunFetcher = (run: ReadRun, signal?: AbortSignal) => Promise<Uint8Array>;

/** Options for {@linkcode readBatch}. */
export interface ReadBatchOptions {
  /** Tokens `>= vocabSize` are rejected. */
  vocabSize?: number;
  /** Reads in flight at once (default 4). */
  concurrency?: number;
  signal?: AbortSignal;
}

/** Reads `batch` through `fetchRun`, one fetch per contiguous run. */
export async function readBatch(
  index: SequenceIndex,
  batch: BatchId,
  fetchRun: RunFetcher,
  options: ReadBatchOptions = {},
): Promise<TokenBatch> {
  const runs = planReads(index, batch);
  const count = batch.end - batch.start + 1;
  const tokens = new Uint32Array(count * index.seqLen);
  await forEachLimited(runs.length, options.concurrency ?? 4, async (i, signal) => {
    const run = runs[i];
    const file = index.files[run.file];
    const bytes = await fetchRun(run, signal);
    if (bytes.length !== run.byteLength) {
      throw new DataError(
        `${file.name}: short read at byte offset ${run.byteOffset}: expected ` +
          `${run.byteLength} bytes, got ${bytes.length}`,
        { file: file.name, offset: run.byteOffset + bytes.length, retryable: true },
      );
    }
    decodeTokens(bytes, file.dtype, tokens, run.firstRow * index.seqLen, {
      file: file.name,
      byteOffset: run.byteOffset,
    }, options.vocabSize);
  }, options.signal);
  return { count, seqLen: index.seqLen, tokens };
}
