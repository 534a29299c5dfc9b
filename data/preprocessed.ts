/**
 * The `Preprocessed` data provider: Psyche's parquet datasets for finetuning, one sequence per
 * row (data/parquet_columns.ts says which columns and what each row must hold), read with
 * hyparquet (npm, MIT; snappy built in, gzip/zstd/brotli/lz4 through hyparquet-compressors).
 *
 * Opening reads each file's footer only (schema and row groups). A batch reads the blocks of
 * rows its samples are in (data/preprocessed_index.ts): the row group's column chunk, or only
 * the pages holding those rows when the file has an offset index. Decoded blocks are kept in a
 * small cache, so reading a dataset in order decodes each block once. Every row read is checked
 * (length `max_seq_len`, integer token ids below the vocabulary) and a bad one is a
 * {@linkcode DataError} naming the file, row and column.
 *
 * `getSamples` serves `inputs` and the `labels`, `position_ids` and `sequence_lengths` the files
 * have, checked too (the trainer uses them: model/rows.ts); `getPreprocessedSamples` is the same
 * with `null` for a column the files lack.
 *
 * @module
 */
import type { FileHandle } from "node:fs/promises";
import { basename, join } from "node:path";
import { type AsyncBuffer, type FileMetaData, parquetMetadataAsync, parquetRead } from "hyparquet";
import { compressors } from "hyparquet-compressors";
import { forEachLimited } from "./concurrency.ts";
import { DataError } from "./errors.ts";
import { openForReading, readAt } from "./file_read.ts";
import {
  decodeInputs,
  decodeLabels,
  decodePositionIds,
  decodeSequenceLengths,
  type PreprocessedColumn,
  preprocessedColumns,
} from "./parquet_columns.ts";
import {
  blockOf,
  buildPreprocessedIndex,
  locateSample,
  type ParquetFileRows,
  type PreprocessedIndex,
  type RowBlock,
  selectPreprocessedFiles,
} from "./preprocessed_index.ts";
import type { DataProvider, TokenBatch } from "./provider.ts";
import { checkBatch } from "./sequence_index.ts";
import type { BatchId, Shuffle } from "../common/mod.ts";

/** Bytes of decoded tokens per block, by default (4 MiB: 512 rows of 2048 tokens). */
export const DEFAULT_BLOCK_BYTES = 4 << 20;
/** Decoded blocks kept, by default (so at most about 64 MiB of `inputs`). */
export const DEFAULT_CACHED_BLOCKS = 16;

/** Options of {@linkcode PreprocessedDataProvider.open}. */
export interface PreprocessedOptions {
  /** Tokens per row: the run's `max_seq_len`. */
  seqLen: number;
  /** When given, token ids and labels must be below it. */
  vocabSize?: number;
  /** Order of the samples (default `DontShuffle`, as Psyche opens `Preprocessed` runs). */
  shuffle?: Shuffle;
  /** Rows decoded at once (default: {@linkcode DEFAULT_BLOCK_BYTES} of tokens, at least 1). */
  blockRows?: number;
  /** Decoded blocks kept (default {@linkcode DEFAULT_CACHED_BLOCKS}). */
  cachedBlocks?: number;
  /** Blocks read at once per batch (default 4). */
  concurrency?: number;
}

/** A batch with every column the dataset has; a column it lacks is `null`. */
export interface PreprocessedBatch
  extends Omit<TokenBatch, "labels" | "positionIds" | "sequenceLengths"> {
  /** `[count, seqLen]` labels, -100 where masked. */
  labels: Int32Array | null;
  /** `[count, seqLen]` position of each token in its packed document. */
  positionIds: Int32Array | null;
  /** `[count][documents]` lengths of the documents packed in each row. */
  sequenceLengths: number[][] | null;
}

/** Decoded rows `block.start..block.end-1`, `[rows, seqLen]` each. */
interface DecodedBlock {
  inputs: Uint32Array;
  labels: Int32Array | null;
  positionIds: Int32Array | null;
  sequenceLengths: number[][] | null;
}

interface OpenFile {
  path: string;
  handle: FileHandle;
  buffer: AsyncBuffer;
  metadata: FileMetaData;
}

/** A folder of Psyche-format parquet files. */
export class PreprocessedDataProvider implements DataProvider {
  readonly seqLen: number;
  readonly numSequences: number;
  /** The columns every file has, `inputs` first. */
  readonly columns: readonly PreprocessedColumn[];
  /** The numbering of the rows. */
  readonly index: PreprocessedIndex;
  readonly #files: OpenFile[];
  readonly #vocabSize?: number;
  readonly #blockRows: number;
  readonly #cachedBlocks: number;
  readonly #concurrency: number;
  /** Key `file:start` → the block; insertion order is recency. */
  readonly #cache = new Map<string, Promise<DecodedBlock>>();
  #closed = false;

  private constructor(
    files: OpenFile[],
    index: PreprocessedIndex,
    columns: PreprocessedColumn[],
    options: PreprocessedOptions,
  ) {
    this.#files = files;
    this.index = index;
    this.columns = columns;
    this.seqLen = options.seqLen;
    this.numSequences = index.numSequences;
    this.#vocabSize = options.vocabSize;
    this.#blockRows = options.blockRows ??
      Math.max(1, Math.floor(DEFAULT_BLOCK_BYTES / (4 * options.seqLen)));
    this.#cachedBlocks = options.cachedBlocks ?? DEFAULT_CACHED_BLOCKS;
    this.#concurrency = options.concurrency ?? 4;
  }

  /**
   * Opens the `train` parquet files of `dir` (Psyche's choice, data/preprocessed_index.ts).
   * Throws {@linkcode DataError} for a missing folder or one without such files.
   */
  static async open(dir: string, options: PreprocessedOptions): Promise<PreprocessedDataProvider> {
    const names: string[] = [];
    try {
      for await (const entry of Deno.readDir(dir)) {
        if (entry.isFile) names.push(entry.name);
      }
    } catch (cause) {
      throw new DataError(`Cannot read data folder "${dir}": ${(cause as Error).message}`, {
        file: dir,
      }, { cause });
    }
    const chosen = selectPreprocessedFiles(basename(dir.replace(/\/+$/, "")), names);
    if (chosen.length === 0) {
      const parquet = names.filter((n) => /\.parquet$/i.test(n)).length;
      throw new DataError(
        `Data folder "${dir}" has no training parquet files: expected .parquet files whose ` +
          `names start with "train", or a folder named "train"; found ${parquet} .parquet ` +
          `file${parquet === 1 ? "" : "s"} of other names`,
        { file: dir },
      );
    }
    return await PreprocessedDataProvider.openFiles(chosen.map((n) => join(dir, n)), options);
  }

  /**
   * Opens the given parquet files, in this order, reading each footer. Throws
   * {@linkcode DataError} for an unreadable file, a file without an `inputs` column, a known
   * column that is not a list of integers, files whose columns differ, or no rows at all.
   */
  static async openFiles(
    paths: readonly string[],
    options: PreprocessedOptions,
  ): Promise<PreprocessedDataProvider> {
    if (!Number.isInteger(options.seqLen) || options.seqLen < 1) {
      throw new DataError(`max_seq_len must be a positive integer, found ${options.seqLen}`, {
        key: "max_seq_len",
      });
    }
    const files: OpenFile[] = [];
    try {
      let columns: PreprocessedColumn[] | null = null;
      for (const path of paths) {
        const file = await openParquet(path);
        files.push(file);
        const has = preprocessedColumns(path, file.metadata);
        if (columns === null) columns = has;
        else if (has.join() !== columns.join()) {
          throw new DataError(
            `${path} has the columns ${has.join(", ")}, but ${files[0].path} has ` +
              `${columns.join(", ")}; every file of a dataset must have the same columns`,
            { file: path },
          );
        }
      }
      const rows: ParquetFileRows[] = files.map((f) => ({
        name: f.path,
        rowGroups: f.metadata.row_groups.map((g) => Number(g.num_rows)),
      }));
      const index = buildPreprocessedIndex(rows, { shuffle: options.shuffle });
      return new PreprocessedDataProvider(files, index, columns ?? ["inputs"], options);
    } catch (e) {
      await Promise.allSettled(files.map((f) => f.handle.close()));
      throw e;
    }
  }

  /**
   * Samples `batch.start..batch.end`, checked: `inputs` as the tokens, and the labels, position
   * ids and sequence lengths when the files have them (absent keys otherwise).
   */
  async getSamples(batch: BatchId, options: { signal?: AbortSignal } = {}): Promise<TokenBatch> {
    const { count, seqLen, tokens, labels, positionIds, sequenceLengths } = await this.#read(
      batch,
      options.signal,
    );
    return {
      count,
      seqLen,
      tokens,
      ...(labels === null ? {} : { labels }),
      ...(positionIds === null ? {} : { positionIds }),
      ...(sequenceLengths === null ? {} : { sequenceLengths }),
    };
  }

  /** Every column of samples `batch.start..batch.end`, checked. */
  getPreprocessedSamples(
    batch: BatchId,
    options: { signal?: AbortSignal } = {},
  ): Promise<PreprocessedBatch> {
    return this.#read(batch, options.signal);
  }

  async #read(batch: BatchId, signal?: AbortSignal): Promise<PreprocessedBatch> {
    if (this.#closed) throw new Error("PreprocessedDataProvider is closed");
    checkBatch(batch, this.numSequences);
    const count = batch.end - batch.start + 1;
    const { seqLen } = this;
    // Each row of the batch: its block and its row inside the block.
    const blocks = new Map<string, { block: RowBlock; rows: Array<[number, number]> }>();
    for (let r = 0; r < count; r++) {
      const { file, row } = locateSample(this.index, batch.start + r);
      const block = blockOf(this.index.files[file], file, row, this.#blockRows);
      const key = `${file}:${block.start}`;
      let entry = blocks.get(key);
      if (entry === undefined) blocks.set(key, entry = { block, rows: [] });
      entry.rows.push([r, row - block.start]);
    }
    const has = (c: PreprocessedColumn) => this.columns.includes(c);
    const out: PreprocessedBatch = {
      count,
      seqLen,
      tokens: new Uint32Array(count * seqLen),
      labels: has("labels") ? new Int32Array(count * seqLen) : null,
      positionIds: has("position_ids") ? new Int32Array(count * seqLen) : null,
      sequenceLengths: has("sequence_lengths") ? new Array(count) : null,
    };
    const list = [...blocks.values()];
    await forEachLimited(list.length, this.#concurrency, async (i, s) => {
      const { block, rows } = list[i];
      const decoded = await this.#block(block, s);
      for (const [to, from] of rows) {
        const src = from * seqLen;
        out.tokens.set(decoded.inputs.subarray(src, src + seqLen), to * seqLen);
        out.labels?.set(decoded.labels!.subarray(src, src + seqLen), to * seqLen);
        out.positionIds?.set(decoded.positionIds!.subarray(src, src + seqLen), to * seqLen);
        if (out.sequenceLengths !== null) out.sequenceLengths[to] = decoded.sequenceLengths![from];
      }
    }, signal);
    return out;
  }

  /** The decoded block, from the cache or read now (one read shared by concurrent callers). */
  #block(block: RowBlock, signal: AbortSignal): Promise<DecodedBlock> {
    signal.throwIfAborted();
    const key = `${block.file}:${block.start}`;
    const hit = this.#cache.get(key);
    if (hit !== undefined) {
      this.#cache.delete(key);
      this.#cache.set(key, hit);
      return hit;
    }
    // Not tied to one caller's signal: the read is shared with later callers.
    const read = this.#decode(block);
    this.#cache.set(key, read);
    read.catch(() => this.#cache.get(key) === read && this.#cache.delete(key));
    while (this.#cache.size > this.#cachedBlocks) {
      this.#cache.delete(this.#cache.keys().next().value!);
    }
    return read;
  }

  async #decode(block: RowBlock): Promise<DecodedBlock> {
    const file = this.#files[block.file];
    const columns = [...this.columns];
    let data: unknown[][] = [];
    try {
      await parquetRead({
        file: file.buffer,
        metadata: file.metadata,
        columns,
        rowStart: block.start,
        rowEnd: block.end,
        compressors,
        useOffsetIndex: true,
        onComplete: (rows) => data = rows,
      });
    } catch (cause) {
      if (cause instanceof DataError) throw cause;
      throw new DataError(
        `${file.path}: cannot read rows ${block.start}..${block.end - 1}: ` +
          `${(cause as Error).message}`,
        { file: file.path },
        { cause },
      );
    }
    const rows = block.end - block.start;
    if (data.length !== rows) {
      throw new DataError(
        `${file.path}: rows ${block.start}..${block.end - 1} decoded to ${data.length} rows`,
        { file: file.path },
      );
    }
    const source = { file: file.path, firstRow: block.start };
    const limits = { seqLen: this.seqLen, vocabSize: this.#vocabSize };
    const column = (name: PreprocessedColumn) => data.map((row) => row[columns.indexOf(name)]);
    const inputs = new Uint32Array(rows * this.seqLen);
    decodeInputs(column("inputs"), inputs, source, limits);
    const decoded: DecodedBlock = {
      inputs,
      labels: null,
      positionIds: null,
      sequenceLengths: null,
    };
    if (columns.includes("labels")) {
      decoded.labels = new Int32Array(rows * this.seqLen);
      decodeLabels(column("labels"), decoded.labels, source, limits);
    }
    if (columns.includes("position_ids")) {
      decoded.positionIds = new Int32Array(rows * this.seqLen);
      decodePositionIds(column("position_ids"), decoded.positionIds, source, limits);
    }
    if (columns.includes("sequence_lengths")) {
      decoded.sequenceLengths = decodeSequenceLengths(column("sequence_lengths"), source, limits);
    }
    return decoded;
  }

  /** Closes the files. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#cache.clear();
    await Promise.all(this.#files.map((f) => f.handle.close()));
  }
}

/** Opens `path` and reads its parquet footer. */
async function openParquet(path: string): Promise<OpenFile> {
  const handle = await openForReading(path);
  try {
    const size = (await handle.stat()).size;
    const buffer: AsyncBuffer = {
      byteLength: size,
      async slice(start: number, end: number = size): Promise<ArrayBuffer> {
        const bytes = await readAt(handle, path, start, end - start);
        if (bytes.length !== end - start) {
          throw new DataError(
            `${path}: short read at byte offset ${start}: expected ${end - start} bytes, got ` +
              `${bytes.length}; the file looks truncated`,
            { file: path, offset: start + bytes.length },
          );
        }
        return bytes.buffer as ArrayBuffer;
      },
    };
    let metadata: FileMetaData;
    try {
      metadata = await parquetMetadataAsync(buffer);
    } catch (cause) {
      if (cause instanceof DataError) throw cause;
      throw new DataError(`${path}: not a readable parquet file: ${(cause as Error).message}`, {
        file: path,
      }, { cause });
    }
    return { path, handle, buffer, metadata };
  } catch (e) {
    await handle.close();
    throw e;
  }
}
