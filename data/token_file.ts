/**
 * Which files are token files and where their tokens lie: raw `.ds`/`.bin` files are
 * tokens from byte 0; `.npy` files have a header first. Pure: callers do the I/O and
 * pass sizes and header bytes in.
 *
 * @module
 */
import { DataError } from "./errors.ts";
import type { NpyHeader } from "./npy.ts";
import { DTYPE_BYTES, dtypeForTokenSize, type TokenDtype } from "./token_format.ts";
import type { TokenSize } from "../common/mod.ts";

/** Extensions of token files (Psyche's `npy|bin|ds`). */
export const TOKEN_FILE_EXTENSIONS = [".ds", ".bin", ".npy"] as const;

/** Where one file's tokens are. */
export interface TokenFileLayout {
  /** Path or URL, used in error messages and by the reader. */
  name: string;
  /** Byte offset of the first token. */
  dataOffset: number;
  /** Bytes of tokens (a multiple of the token width). */
  dataBytes: number;
  /** How each token is stored. */
  dtype: TokenDtype;
}

/** Whether a file name ends in a token-file extension. */
export function isTokenFileName(name: string): boolean {
  return TOKEN_FILE_EXTENSIONS.some((ext) => name.endsWith(ext));
}

/** Whether a file name is a `.npy` file, whose header must be read first. */
export function isNpyFileName(name: string): boolean {
  return name.endsWith(".npy");
}

/**
 * Layout of a raw token file of `size` bytes. Throws {@linkcode DataError} if the size
 * is not a whole number of tokens (a truncated file), naming the trailing offset.
 */
export function rawLayout(name: string, size: number, tokenSize: TokenSize): TokenFileLayout {
  const dtype = dtypeForTokenSize(tokenSize);
  const width = DTYPE_BYTES[dtype];
  const extra = size % width;
  if (extra !== 0) {
    throw new DataError(
      `${name}: ${size} bytes is not a multiple of the ${width}-byte token size ` +
        `(${extra} trailing bytes at offset ${size - extra}); the file looks truncated`,
      { file: name, offset: size - extra },
    );
  }
  return { name, dataOffset: 0, dataBytes: size, dtype };
}

/**
 * Layout of a `.npy` file of `size` bytes with the given parsed header. The header's
 * element width must match the run's token size and the data must fill the file exactly.
 */
export function npyLayout(
  name: string,
  size: number,
  header: NpyHeader,
  tokenSize: TokenSize,
): TokenFileLayout {
  const width = DTYPE_BYTES[header.dtype];
  const expectedWidth = DTYPE_BYTES[dtypeForTokenSize(tokenSize)];
  if (width !== expectedWidth) {
    throw new DataError(
      `${name}: .npy dtype ${header.dtype} has ${width}-byte tokens, ` +
        `but token_size is ${tokenSize} (${expectedWidth} bytes)`,
      { file: name, offset: 0, key: "token_size" },
    );
  }
  const dataBytes = header.length * width;
  const available = size - header.dataOffset;
  if (dataBytes !== available) {
    const what = available < dataBytes ? "truncated" : "has trailing bytes";
    throw new DataError(
      `${name}: .npy shape (${header.length},) needs ${dataBytes} data bytes after the ` +
        `${header.dataOffset}-byte header, found ${available}; the file ${what}`,
      { file: name, offset: header.dataOffset + Math.min(dataBytes, available) },
    );
  }
  return { name, dataOffset: header.dataOffset, dataBytes, dtype: header.dtype };
}

/** Sorts names by their UTF-8 bytes (a fix of Psyche's unsorted `read_dir`). */
export function sortByteWise(names: readonly string[]): string[] {
  const enc = new TextEncoder();
  const keyed = names.map((name) => ({ name, key: enc.encode(name) }));
  keyed.sort((a, b) => {
    const n = Math.min(a.key.length, b.key.length);
    for (let i = 0; i < n; i++) {
      if (a.key[i] !== b.key[i]) return a.key[i] - b.key[i];
    }
    return a.key.length - b.key.length;
  });
  return keyed.map((k) => k.name);
}
