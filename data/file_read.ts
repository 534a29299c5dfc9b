/**
 * Positional reads of local files with errors that name the file and offset: what the local
 * provider and the parquet provider share. Positional reads keep no cursor, so concurrent
 * batches can share one handle.
 *
 * @module
 */
import { type FileHandle, open } from "node:fs/promises";
import { DataError } from "./errors.ts";

/** Opens `path` for reading; a failure is a {@linkcode DataError} naming the path. */
export async function openForReading(path: string): Promise<FileHandle> {
  try {
    return await open(path, "r");
  } catch (cause) {
    throw new DataError(`Cannot open "${path}": ${(cause as Error).message}`, { file: path }, {
      cause,
    });
  }
}

/** Reads up to `length` bytes at `position`; returns fewer only at end of file. */
export async function readAt(
  handle: FileHandle,
  path: string,
  position: number,
  length: number,
): Promise<Uint8Array> {
  const buffer = new Uint8Array(length);
  let filled = 0;
  try {
    while (filled < length) {
      const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
  } catch (cause) {
    throw new DataError(
      `${path}: read of ${length} bytes at byte offset ${position} failed: ${
        (cause as Error).message
      }`,
      { file: path, offset: position },
      { cause },
    );
  }
  return filled === length ? buffer : buffer.subarray(0, filled);
}
