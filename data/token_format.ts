/**
 * Token encodings on disk and on the wire, and the checked decoder that turns bytes
 * into token ids. Pure: no I/O.
 *
 * @module
 */
import { DataError } from "./errors.ts";
import type { TokenSize } from "../common/mod.ts";

const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** How tokens are stored: little-endian u16, u32, or i32 (some `.npy` exports). */
export type TokenDtype = "u16" | "u32" | "i32";

/** Bytes per token of each dtype. */
export const DTYPE_BYTES: Readonly<Record<TokenDtype, 2 | 4>> = { u16: 2, u32: 4, i32: 4 };

/** The dtype of raw (`.ds`, `.bin`) files for a run config's token size. */
export function dtypeForTokenSize(tokenSize: TokenSize): TokenDtype {
  switch (tokenSize) {
    case "TwoBytes":
      return "u16";
    case "FourBytes":
      return "u32";
    default: {
      const never: never = tokenSize;
      throw new TypeError(`Unknown token size ${JSON.stringify(never)}`);
    }
  }
}

/** Bytes per token for a run config's token size. */
export function tokenSizeBytes(tokenSize: TokenSize): 2 | 4 {
  return DTYPE_BYTES[dtypeForTokenSize(tokenSize)];
}

/** Where decoded bytes came from, for error messages. */
export interface TokenSource {
  /** File path or URL. */
  file: string;
  /** Byte offset of `bytes[0]` in the file. */
  byteOffset: number;
}

/**
 * Decodes little-endian tokens from `bytes` into `out[outOffset..]`.
 * Throws {@linkcode DataError} naming the file and byte offset of the first token that
 * is negative (i32) or `>= vocabSize` (when given).
 *
 * @example
 * ```ts
 * import { decodeTokens } from "./token_format.ts";
 * const out = new Uint32Array(2);
 * decodeTokens(new Uint8Array([1, 0, 2, 1]), "u16", out, 0, { file: "a.ds", byteOffset: 0 });
 * if (out[1] !== 258) throw new Error("bad decode");
 * ```
 */
export function decodeTokens(
  bytes: Uint8Array,
  dtype: TokenDtype,
  out: Uint32Array,
  outOffset: number,
  source: TokenSource,
  vocabSize?: number,
): void {
  const width = DTYPE_BYTES[dtype];
  const count = bytes.length / width;
  if (!Number.isInteger(count)) {
    throw new RangeError(`${bytes.length} bytes is not a whole number of ${width}-byte tokens`);
  }
  const limit = vocabSize ?? 0x1_0000_0000;
  if (LITTLE_ENDIAN_HOST && bytes.byteOffset % width === 0) {
    // Fast path: view the bytes in place, scan, then copy in one call.
    const src = dtype === "u16"
      ? new Uint16Array(bytes.buffer, bytes.byteOffset, count)
      : dtype === "u32"
      ? new Uint32Array(bytes.buffer, bytes.byteOffset, count)
      : new Int32Array(bytes.buffer, bytes.byteOffset, count);
    for (let i = 0; i < count; i++) {
      const token = src[i];
      if (token < 0) throw badToken(source, i * width, token, "negative token id");
      if (token >= limit) {
        throw badToken(source, i * width, token, `token id >= vocab size ${limit}`, "vocab_size");
      }
    }
    out.set(src, outOffset);
    return;
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) {
    let token: number;
    if (dtype === "u16") token = view.getUint16(2 * i, true);
    else if (dtype === "u32") token = view.getUint32(4 * i, true);
    else {
      token = view.getInt32(4 * i, true);
      if (token < 0) throw badToken(source, i * width, token, "negative token id");
    }
    if (token >= limit) {
      throw badToken(source, i * width, token, `token id >= vocab size ${limit}`, "vocab_size");
    }
    out[outOffset + i] = token;
  }
}

/** `key` is `"vocab_size"` for a token past the vocabulary: a model/data mismatch, not a bad read. */
function badToken(
  source: TokenSource,
  at: number,
  token: number,
  what: string,
  key?: "vocab_size",
): DataError {
  const offset = source.byteOffset + at;
  return new DataError(`${source.file}: ${what} (${token}) at byte offset ${offset}`, {
    file: source.file,
    offset,
    key,
  });
}
