/**
 * Which parquet files of a folder a `Preprocessed` dataset reads, how its rows are numbered,
 * and which block of rows is decoded to serve one. Pure: names and row counts in, numbers out.
 *
 * - **Files** (Psyche's `Dataset::load_dataset` for the `train` split): every `.parquet` file
 *   directly in the folder when the folder's name, up to its first `-`, is `train` (any case);
 *   otherwise the `.parquet` files whose names start with `train`. Sorted by name without the
 *   extension, byte-wise.
 * - **Rows.** Row `r` of file `f` is sequence `Σ rows(files before f) + r`; with a seeded
 *   shuffle, sample `i` is sequence `perm[i]` (`shufflePermutation`, data/shuffle.ts). Psyche
 *   opens `Preprocessed` runs unshuffled.
 * - **Blocks.** Rows are decoded a block at a time: the row group cut into blocks of
 *   `blockRows` rows from its first row. A block never spans two row groups.
 *
 * @module
 */
import { DataError } from "./errors.ts";
import { shufflePermutation } from "./shuffle.ts";
import { sortByteWise } from "./token_file.ts";
import type { Shuffle } from "../common/mod.ts";

/** The parquet files of a `Preprocessed` folder called `folderName`, in reading order. */
export function selectPreprocessedFiles(folderName: string, names: readonly string[]): string[] {
  const parquet = names.filter((n) => /\.parquet$/i.test(n));
  const trainFolder = folderName.split("-")[0].toLowerCase() === "train";
  const chosen = trainFolder ? parquet : parquet.filter((n) => n.startsWith("train"));
  const stem = (n: string) => n.slice(0, n.length - ".parquet".length);
  const byStem = new Map(chosen.map((n) => [stem(n), n]));
  return sortByteWise([...byStem.keys()]).map((s) => byStem.get(s)!);
}

/** One parquet file's rows. */
export interface ParquetFileRows {
  /** Path, for errors. */
  name: string;
  /** Rows in each row group, in order. */
  rowGroups: readonly number[];
}

/** Where a sample lives. */
export interface RowAddress {
  /** Index of the file. */
  file: number;
  /** Row in that file. */
  row: number;
}

/** A block of rows decoded together: rows `start..end-1` of one file, inside one row group. */
export interface RowBlock {
  file: number;
  /** First row (in the file). */
  start: number;
  /** One past the last row. */
  end: number;
}

/** The numbering of a `Preprocessed` dataset's samples. */
export interface PreprocessedIndex {
  /** The files, in numbering order. */
  readonly files: readonly ParquetFileRows[];
  /** Samples; valid indices are `0..numSequences-1`. */
  readonly numSequences: number;
  /** `[files + 1]` first sequence of each file, then the total. */
  readonly fileStarts: readonly number[];
  /** Sample → sequence, or `null` when unshuffled. */
  readonly perm: Uint32Array | null;
}

/**
 * Numbers the rows of `files`. Throws {@linkcode DataError} when they hold no row, or more
 * than 2^32 − 1.
 */
export function buildPreprocessedIndex(
  files: readonly ParquetFileRows[],
  options: { shuffle?: Shuffle } = {},
): PreprocessedIndex {
  const fileStarts = [0];
  for (const f of files) {
    for (const rows of f.rowGroups) {
      if (!Number.isSafeInteger(rows) || rows < 0) {
        throw new RangeError(`${f.name}: row group of ${rows} rows`);
      }
    }
    fileStarts.push(fileStarts[fileStarts.length - 1] + f.rowGroups.reduce((a, b) => a + b, 0));
  }
  const n = fileStarts[fileStarts.length - 1];
  if (n === 0) {
    const names = files.length === 0 ? "no files" : files.map((f) => f.name).join(", ");
    throw new DataError(`Empty dataset: ${names} hold no rows`, { file: files[0]?.name });
  }
  if (n > 0xffff_ffff) {
    throw new DataError(`Dataset of ${n} rows exceeds 2^32 - 1`, { file: files[0]?.name });
  }
  const shuffle = options.shuffle ?? { kind: "DontShuffle" };
  const perm = shuffle.kind === "Seeded" ? shufflePermutation(n, shuffle.seed) : null;
  return { files, numSequences: n, fileStarts, perm };
}

/** The file and row of sample `i` (`0 <= i < numSequences`; the caller checks the batch). */
export function locateSample(index: PreprocessedIndex, i: number): RowAddress {
  const sequence = index.perm === null ? i : index.perm[i];
  const starts = index.fileStarts;
  let lo = 0;
  let hi = starts.length - 2;
  while (lo < hi) { // the last file whose start is <= sequence
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= sequence) lo = mid;
    else hi = mid - 1;
  }
  return { file: lo, row: sequence - starts[lo] };
}

/**
 * The block holding `row` of file `f`: its row group cut into blocks of `blockRows` rows.
 *
 * @example
 * ```ts
 * import { blockOf } from "./preprocessed_index.ts";
 * // Row groups of 10 and 7 rows, blocks of 4: row 12 is in the second group's rows 10..13.
 * const block = blockOf({ name: "a.parquet", rowGroups: [10, 7] }, 0, 12, 4);
 * if (block.start !== 10 || block.end !== 14) throw new Error(JSON.stringify(block));
 * ```
 */
export function blockOf(
  file: ParquetFileRows,
  f: number,
  row: number,
  blockRows: number,
): RowBlock {
  if (!Number.isInteger(blockRows) || blockRows < 1) {
    throw new RangeError(`blockRows must be a positive integer, found ${blockRows}`);
  }
  let groupStart = 0;
  for (const rows of file.rowGroups) {
    if (row < groupStart + rows) {
      const start = groupStart + Math.floor((row - groupStart) / blockRows) * blockRows;
      return { file: f, start, end: Math.min(start + blockRows, groupStart + rows) };
    }
    groupStart += rows;
  }
  throw new RangeError(`${file.name}: row ${row} is past its ${groupStart} rows`);
}
