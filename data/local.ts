/**
 * The local-folder data provider: every `.ds`/`.bin`/`.npy` file directly in a
 * folder, in byte-wise sorted name order, read with positional reads (safe under
 * concurrent `getSamples` calls).
 *
 * @module
 */
import type { FileHandle } from "node:fs/promises";
import { readBatch } from "./batch_reader.ts";
import type { DatasetOptions } from "./dataset_options.ts";
import { DataError } from "./errors.ts";
import { openForReading, readAt } from "./file_read.ts";
import { NPY_PREAMBLE_BYTES, npyHeaderLength, parseNpyHeader } from "./npy.ts";
import type { DataProvider, TokenBatch } from "./provider.ts";
import { buildSequenceIndex, type SequenceIndex } from "./sequence_index.ts";
import {
  isNpyFileName,
  isTokenFileName,
  npyLayout,
  rawLayout,
  sortByteWise,
  type TokenFileLayout,
} from "./token_file.ts";
import type { BatchId } from "../common/mod.ts";

/** A dataset in a local folder. */
export class LocalDataProvider implements DataProvider {
  readonly seqLen: number;
  readonly numSequences: number;
  /** The sample table, for callers that want to see the layout. */
  readonly index: SequenceIndex;
  readonly #handles: FileHandle[];
  readonly #vocabSize?: number;
  #closed = false;

  private constructor(index: SequenceIndex, handles: FileHandle[], vocabSize?: number) {
    this.index = index;
    this.seqLen = index.seqLen;
    this.numSequences = index.numSequences;
    this.#handles = handles;
    this.#vocabSize = vocabSize;
  }

  /**
   * Opens every token file in `dir`. Throws {@linkcode DataError} for a missing folder,
   * a folder without token files, a truncated or malformed file, or an empty dataset.
   */
  static async open(dir: string, options: DatasetOptions): Promise<LocalDataProvider> {
    let names: string[];
    try {
      names = [];
      for await (const entry of Deno.readDir(dir)) {
        if (entry.isFile && isTokenFileName(entry.name)) names.push(entry.name);
      }
    } catch (cause) {
      throw new DataError(`Cannot read data folder "${dir}": ${(cause as Error).message}`, {
        file: dir,
      }, { cause });
    }
    if (names.length === 0) {
      throw new DataError(`Data folder "${dir}" has no .ds, .bin or .npy files`, { file: dir });
    }
    const paths = sortByteWise(names).map((n) => `${dir.replace(/\/+$/, "")}/${n}`);
    return await LocalDataProvider.openFiles(paths, options);
  }

  /** Opens the given token files, in the given order. */
  static async openFiles(paths: string[], options: DatasetOptions): Promise<LocalDataProvider> {
    const handles: FileHandle[] = [];
    try {
      const layouts: TokenFileLayout[] = [];
      for (const path of paths) {
        const handle = await openForReading(path);
        handles.push(handle);
        layouts.push(await layoutOf(path, handle, options));
      }
      const index = buildSequenceIndex(layouts, options);
      return new LocalDataProvider(index, handles, options.vocabSize);
    } catch (e) {
      await Promise.all(handles.map((h) => h.close()));
      throw e;
    }
  }

  /** The sequences `batch.start..batch.end`, read and checked. */
  getSamples(batch: BatchId, options: { signal?: AbortSignal } = {}): Promise<TokenBatch> {
    if (this.#closed) return Promise.reject(new Error("LocalDataProvider is closed"));
    return readBatch(this.index, batch, async (run) => {
      const file = this.index.files[run.file].name;
      return await readAt(this.#handles[run.file], file, run.byteOffset, run.byteLength);
    }, { vocabSize: this.#vocabSize, signal: options.signal });
  }

  /** Closes the files. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(this.#handles.map((h) => h.close()));
  }
}

async function layoutOf(
  path: string,
  handle: FileHandle,
  options: DatasetOptions,
): Promise<TokenFileLayout> {
  const size = (await handle.stat()).size;
  if (!isNpyFileName(path)) return rawLayout(path, size, options.tokenSize);
  const preamble = await readAt(handle, path, 0, Math.min(NPY_PREAMBLE_BYTES, size));
  const headerBytes = npyHeaderLength(preamble, path);
  const header = parseNpyHeader(await readAt(handle, path, 0, Math.min(headerBytes, size)), path);
  return npyLayout(path, size, header, options.tokenSize);
}
