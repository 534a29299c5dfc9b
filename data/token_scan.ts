/**
 * The largest token id in a local dataset, so a run can be checked against its model's
 * vocabulary before anything trains (`validate-config --data-config`): a 512-token model paired
 * with LLaMA-2 token ids would otherwise fail on every batch.
 *
 * Every token is read when the data fits the byte budget (256 MiB by default; the bundled Brown
 * corpus is 2.6 MB); a larger dataset is sampled with evenly spaced chunks that add up to the
 * budget, and the result says how much was read. Reads go file by file, one chunk at a time.
 *
 * @module
 */
import { DataError } from "./errors.ts";
import type { TokenFileLayout } from "./token_file.ts";
import { DTYPE_BYTES, type TokenDtype } from "./token_format.ts";

/** Default bytes read by {@linkcode scanTokenFiles}. */
export const DEFAULT_SCAN_BUDGET_BYTES = 256 * 1024 * 1024;
/** Default bytes per read. */
export const DEFAULT_SCAN_CHUNK_BYTES = 4 * 1024 * 1024;

/** One read of a scan: `byteLength` bytes at `byteOffset` of `files[file]`. */
export interface ScanRead {
  readonly file: number;
  readonly byteOffset: number;
  readonly byteLength: number;
}

/** What a scan found. */
export interface TokenScan {
  /** The largest token id read. */
  readonly maxToken: number;
  /** The file holding its first occurrence. */
  readonly file: string;
  /** Its byte offset in that file. */
  readonly byteOffset: number;
  /** Token bytes read. */
  readonly scannedBytes: number;
  /** Token bytes in the dataset (equal to `scannedBytes` when every token was read). */
  readonly totalBytes: number;
}

/** Options of {@linkcode planScan} and {@linkcode scanTokenFiles}. */
export interface ScanOptions {
  /** Most token bytes to read (default {@linkcode DEFAULT_SCAN_BUDGET_BYTES}). */
  readonly budgetBytes?: number;
  /** Bytes per read (default {@linkcode DEFAULT_SCAN_CHUNK_BYTES}). */
  readonly chunkBytes?: number;
}

/**
 * The reads of a scan of `files`: all of every file's tokens in chunks when they fit the budget,
 * else chunks at evenly spaced positions of the concatenated data, each inside one file and
 * aligned to its token width. Pure.
 *
 * @example
 * ```ts
 * import { planScan } from "./token_scan.ts";
 * const files = [{ name: "a.ds", dataOffset: 0, dataBytes: 10, dtype: "u16" as const }];
 * const reads = planScan(files, { chunkBytes: 4 });
 * if (reads.map((r) => r.byteLength).join() !== "4,4,2") throw new Error();
 * ```
 */
export function planScan(files: readonly TokenFileLayout[], options: ScanOptions = {}): ScanRead[] {
  const budget = options.budgetBytes ?? DEFAULT_SCAN_BUDGET_BYTES;
  const chunk = options.chunkBytes ?? DEFAULT_SCAN_CHUNK_BYTES;
  if (!(chunk >= 4) || !Number.isInteger(chunk)) {
    throw new RangeError(`chunkBytes must be an integer >= 4, found ${chunk}`);
  }
  if (!(budget >= chunk)) {
    throw new RangeError(`budgetBytes must be at least chunkBytes (${chunk}), found ${budget}`);
  }
  const total = files.reduce((sum, f) => sum + f.dataBytes, 0);
  const reads: ScanRead[] = [];
  if (total <= budget) {
    files.forEach((f, file) => {
      const step = chunk - (chunk % DTYPE_BYTES[f.dtype]);
      for (let at = 0; at < f.dataBytes; at += step) {
        reads.push({
          file,
          byteOffset: f.dataOffset + at,
          byteLength: Math.min(step, f.dataBytes - at),
        });
      }
    });
    return reads;
  }
  const count = Math.floor(budget / chunk);
  let file = 0;
  let fileStart = 0; // position of files[file]'s first token byte in the concatenation
  for (let i = 0; i < count; i++) {
    const position = Math.floor((i * total) / count);
    while (position >= fileStart + files[file].dataBytes) fileStart += files[file++].dataBytes;
    const f = files[file];
    const width = DTYPE_BYTES[f.dtype];
    const within = position - fileStart;
    const at = within - (within % width);
    const length = Math.min(chunk - (chunk % width), f.dataBytes - at);
    reads.push({ file, byteOffset: f.dataOffset + at, byteLength: length });
  }
  return reads;
}

/**
 * The largest token of `bytes` (little-endian `dtype` tokens) and the index of its first
 * occurrence; `{ token: -1, index: -1 }` when empty. Throws {@linkcode DataError} naming `file`
 * and the offset of a negative `i32` token.
 */
export function largestToken(
  bytes: Uint8Array,
  dtype: TokenDtype,
  source: { file: string; byteOffset: number },
): { token: number; index: number } {
  const width = DTYPE_BYTES[dtype];
  const count = Math.floor(bytes.length / width);
  const view = new DataView(bytes.buffer, bytes.byteOffset, count * width);
  let token = -1;
  let index = -1;
  for (let i = 0; i < count; i++) {
    const t = dtype === "u16"
      ? view.getUint16(2 * i, true)
      : dtype === "u32"
      ? view.getUint32(4 * i, true)
      : view.getInt32(4 * i, true);
    if (t < 0) {
      const offset = source.byteOffset + i * width;
      throw new DataError(`${source.file}: negative token id (${t}) at byte offset ${offset}`, {
        file: source.file,
        offset,
      });
    }
    if (t > token) {
      token = t;
      index = i;
    }
  }
  return { token, index };
}

/**
 * Scans `files` (their layouts, from the local provider) for the largest token id. Throws
 * {@linkcode DataError} naming the file when a read fails or comes back short.
 */
export async function scanTokenFiles(
  files: readonly TokenFileLayout[],
  options: ScanOptions & { signal?: AbortSignal } = {},
): Promise<TokenScan> {
  const reads = planScan(files, options);
  let best = { maxToken: -1, file: files[0]?.name ?? "", byteOffset: 0 };
  let scannedBytes = 0;
  let handle: Deno.FsFile | null = null;
  let openFile = -1;
  try {
    for (const read of reads) {
      options.signal?.throwIfAborted();
      const layout = files[read.file];
      if (handle === null || openFile !== read.file) {
        handle?.close();
        handle = null;
        handle = await openForScan(layout.name);
        openFile = read.file;
      }
      const bytes = await readExactly(handle, layout.name, read);
      const found = largestToken(bytes, layout.dtype, {
        file: layout.name,
        byteOffset: read.byteOffset,
      });
      if (found.token > best.maxToken) {
        best = {
          maxToken: found.token,
          file: layout.name,
          byteOffset: read.byteOffset + found.index * DTYPE_BYTES[layout.dtype],
        };
      }
      scannedBytes += bytes.length;
    }
  } finally {
    handle?.close();
  }
  const totalBytes = files.reduce((sum, f) => sum + f.dataBytes, 0);
  return { ...best, scannedBytes, totalBytes };
}

async function openForScan(path: string): Promise<Deno.FsFile> {
  try {
    return await Deno.open(path, { read: true });
  } catch (cause) {
    throw new DataError(`Cannot open "${path}": ${(cause as Error).message}`, { file: path }, {
      cause,
    });
  }
}

async function readExactly(handle: Deno.FsFile, path: string, read: ScanRead): Promise<Uint8Array> {
  const buffer = new Uint8Array(read.byteLength);
  await handle.seek(read.byteOffset, Deno.SeekMode.Start);
  let filled = 0;
  while (filled < buffer.length) {
    const n = await handle.read(buffer.subarray(filled));
    if (n === null) {
      throw new DataError(
        `${path}: expected ${read.byteLength} bytes at byte offset ${read.byteOffset}, the file ` +
          `ends after ${filled}`,
        { file: path, offset: read.byteOffset + filled },
      );
    }
    filled += n;
  }
  return buffer;
}
