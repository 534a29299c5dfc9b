/**
 * Cuts token files into sequences and plans the reads for a batch. Pure: the
 * providers do the I/O from the plan.
 *
 * Every file is cut into non-overlapping windows of `seqLen` tokens from its first
 * token; the last partial window is dropped. Sequences are numbered file by file in
 * the given file order, then optionally permuted with {@linkcode shufflePermutation}:
 * sample `i` is unshuffled sequence `perm[i]`.
 *
 * @module
 */
import { DataError } from "./errors.ts";
import { shufflePermutation } from "./shuffle.ts";
import type { TokenFileLayout } from "./token_file.ts";
import { DTYPE_BYTES } from "./token_format.ts";
import type { BatchId, Shuffle } from "../common/mod.ts";

/** Where every sample lives: file index and byte offset, indexed by sample number. */
export interface SequenceIndex {
  /** The files, in sequence-numbering order. */
  readonly files: readonly TokenFileLayout[];
  /** Tokens per sequence. */
  readonly seqLen: number;
  /** Number of samples; valid sample indices are `0..numSequences-1`. */
  readonly numSequences: number;
  /** `[numSequences]` index into `files` of each sample. */
  readonly fileOf: Uint32Array;
  /** `[numSequences]` byte offset in its file of each sample's first token. */
  readonly offsetOf: Float64Array;
}

/** Options for {@linkcode buildSequenceIndex}. */
export interface SequenceIndexOptions {
  /** Tokens per sequence. */
  seqLen: number;
  /** Default `DontShuffle`. */
  shuffle?: Shuffle;
}

/**
 * The sample table for `files` (in the order given). Throws {@linkcode DataError}
 * when no file holds a whole sequence (an empty dataset).
 */
export function buildSequenceIndex(
  files: readonly TokenFileLayout[],
  options: SequenceIndexOptions,
): SequenceIndex {
  const { seqLen } = options;
  if (!Number.isInteger(seqLen) || seqLen < 1) {
    throw new DataError(`seq_len must be a positive integer, found ${seqLen}`, { key: "seq_len" });
  }
  const counts = files.map((f) => Math.floor(f.dataBytes / (seqLen * DTYPE_BYTES[f.dtype])));
  const total = counts.reduce((a, b) => a + b, 0);
  if (total === 0) {
    const names = files.length === 0 ? "no files" : files.map((f) => f.name).join(", ");
    throw new DataError(
      `Empty dataset: ${names} hold no whole sequence of ${seqLen} tokens`,
      { file: files[0]?.name, key: "seq_len" },
    );
  }
  if (total > 0xffff_ffff) {
    throw new DataError(`Dataset of ${total} sequences exceeds 2^32 - 1`, { key: "seq_len" });
  }
  let fileOf = new Uint32Array(total);
  let offsetOf = new Float64Array(total);
  let at = 0;
  files.forEach((f, fi) => {
    const seqBytes = seqLen * DTYPE_BYTES[f.dtype];
    for (let s = 0; s < counts[fi]; s++) {
      fileOf[at] = fi;
      offsetOf[at] = f.dataOffset + s * seqBytes;
      at++;
    }
  });
  const shuffle = options.shuffle ?? { kind: "DontShuffle" };
  if (shuffle.kind === "Seeded") {
    const perm = shufflePermutation(total, shuffle.seed);
    const shuffledFile = new Uint32Array(total);
    const shuffledOffset = new Float64Array(total);
    for (let i = 0; i < total; i++) {
      shuffledFile[i] = fileOf[perm[i]];
      shuffledOffset[i] = offsetOf[perm[i]];
    }
    fileOf = shuffledFile;
    offsetOf = shuffledOffset;
  }
  return { files, seqLen, numSequences: total, fileOf, offsetOf };
}

/**
 * Throws {@linkcode DataError} (key `"batch"`) unless `batch` is a valid inclusive range
 * of integer sample indices below `numSequences`.
 */
export function checkBatch(batch: BatchId, numSequences: number): void {
  const { start, end } = batch;
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new DataError(
      `Batch ${start}..${end} is not an inclusive range of non-negative integers`,
      { key: "batch" },
    );
  }
  if (end >= numSequences) {
    throw new DataError(
      `Batch ${start}..${end} is out of range: the dataset has ${numSequences} sequences ` +
        `(indices 0..${numSequences - 1})`,
      { key: "batch" },
    );
  }
}

/** One contiguous read: `rows` whole sequences starting at `byteOffset` in `files[file]`. */
export interface ReadRun {
  /** Index into the index's `files`. */
  file: number;
  /** Where the run starts in the file. */
  byteOffset: number;
  /** `rows` sequences' worth of bytes. */
  byteLength: number;
  /** Row of the batch the first sequence goes to. */
  firstRow: number;
  /** Sequences in the run. */
  rows: number;
}

/**
 * The reads for a batch, merging samples that lie back to back in the same file into
 * one run (one HTTP request, one file read). Rows stay in batch order.
 *
 * @example
 * ```ts
 * import { buildSequenceIndex, planReads } from "./sequence_index.ts";
 * const index = buildSequenceIndex(
 *   [{ name: "a.ds", dataOffset: 0, dataBytes: 64, dtype: "u16" }],
 *   { seqLen: 4 },
 * );
 * const runs = planReads(index, { start: 1, end: 3 });
 * if (runs.length !== 1 || runs[0].byteOffset !== 8 || runs[0].byteLength !== 24) {
 *   throw new Error("unexpected plan");
 * }
 * ```
 */
export function planReads(index: SequenceIndex, batch: BatchId): ReadRun[] {
  checkBatch(batch, index.numSequences);
  const runs: ReadRun[] = [];
  let current: ReadRun | null = null;
  for (let i = batch.start; i <= batch.end; i++) {
    const file = index.fileOf[i];
    const offset = index.offsetOf[i];
    const seqBytes = index.seqLen * DTYPE_BYTES[index.files[file].dtype];
    if (
      current !== null && current.file === file &&
      current.byteOffset + current.byteLength === offset
    ) {
      current.byteLength += seqBytes;
      current.rows++;
    } else {
      current = {
        file,
        byteOffset: offset,
        byteLength: seqBytes,
        firstRow: i - batch.start,
        rows: 1,
      };
      runs.push(current);
    }
  }
  return runs;
}
