/**
 * The `.npy` header (NumPy format versions 1.0, 2.0 and 3.0): magic, version, header
 * length, then a Python dict literal such as
 * `{'descr': '<u2', 'fortran_order': False, 'shape': (1024,), }`.
 * Only 1-D little-endian u16/u32/i32 arrays in C order are token files. Pure: no I/O.
 *
 * @module
 */
import { DataError } from "./errors.ts";
import type { TokenDtype } from "./token_format.ts";

/** The six magic bytes every `.npy` file starts with. */
export const NPY_MAGIC = new Uint8Array([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);
/** Bytes needed to learn the header length: magic, 2 version bytes, up to 4 length bytes. */
export const NPY_PREAMBLE_BYTES = 12;
/** Largest header accepted (NumPy writes 64..~200 bytes; this bounds a hostile length). */
export const NPY_MAX_HEADER_BYTES = 64 * 1024;

const DESCR_TO_DTYPE: Record<string, TokenDtype> = { "<u2": "u16", "<u4": "u32", "<i4": "i32" };

/** What a `.npy` header says about the array after it. */
export interface NpyHeader {
  /** Byte offset of the first element: the whole header's length. */
  dataOffset: number;
  /** Element type. */
  dtype: TokenDtype;
  /** Number of elements (the single dimension). */
  length: number;
}

/**
 * Total header length (magic through dict) from the first {@linkcode NPY_PREAMBLE_BYTES}
 * bytes, so a remote reader knows how much more to fetch.
 */
export function npyHeaderLength(preamble: Uint8Array, file: string): number {
  if (preamble.length < 10) {
    throw new DataError(`${file}: ${preamble.length} bytes is too short for a .npy header`, {
      file,
      offset: 0,
    });
  }
  for (let i = 0; i < NPY_MAGIC.length; i++) {
    if (preamble[i] !== NPY_MAGIC[i]) {
      throw new DataError(`${file}: not a .npy file (bad magic at byte offset ${i})`, {
        file,
        offset: i,
      });
    }
  }
  const major = preamble[6];
  const view = new DataView(preamble.buffer, preamble.byteOffset, preamble.byteLength);
  let total: number;
  if (major === 1) total = 10 + view.getUint16(8, true);
  else if (major === 2 || major === 3) {
    if (preamble.length < 12) {
      throw new DataError(`${file}: .npy v${major} header needs 12 preamble bytes`, {
        file,
        offset: 8,
      });
    }
    total = 12 + view.getUint32(8, true);
  } else {
    throw new DataError(`${file}: unsupported .npy version ${major}.${preamble[7]}`, {
      file,
      offset: 6,
    });
  }
  if (total > NPY_MAX_HEADER_BYTES) {
    throw new DataError(
      `${file}: .npy header of ${total} bytes exceeds ${NPY_MAX_HEADER_BYTES}`,
      { file, offset: 8 },
    );
  }
  return total;
}

/**
 * Parses a complete `.npy` header (`bytes` holds at least the whole header).
 * Throws {@linkcode DataError} naming the file and what was found when the dtype,
 * order or shape is not a 1-D little-endian u16/u32/i32 C-order array.
 *
 * @example
 * ```ts
 * import { parseNpyHeader } from "./npy.ts";
 * const dict = "{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }\n";
 * const bytes = new Uint8Array(10 + dict.length);
 * bytes.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, dict.length, 0]);
 * bytes.set(new TextEncoder().encode(dict), 10);
 * const h = parseNpyHeader(bytes, "x.npy");
 * if (h.length !== 3 || h.dtype !== "u16") throw new Error("bad header");
 * ```
 */
export function parseNpyHeader(bytes: Uint8Array, file: string): NpyHeader {
  const dataOffset = npyHeaderLength(bytes.subarray(0, NPY_PREAMBLE_BYTES), file);
  const dictStart = bytes[6] === 1 ? 10 : 12;
  if (bytes.length < dataOffset) {
    throw new DataError(
      `${file}: .npy header is ${dataOffset} bytes but only ${bytes.length} are available`,
      { file, offset: bytes.length },
    );
  }
  const dict = new TextDecoder("latin1").decode(bytes.subarray(dictStart, dataOffset)).trim();
  const field = (key: string, pattern: string): string => {
    const m = new RegExp(`['"]${key}['"]\\s*:\\s*${pattern}`).exec(dict);
    if (m === null) {
      throw new DataError(`${file}: .npy header has no valid '${key}' entry in ${dict}`, {
        file,
        offset: dictStart,
        key,
      });
    }
    return m[1];
  };
  const descr = field("descr", `['"]([^'"]*)['"]`);
  const dtype = DESCR_TO_DTYPE[descr];
  if (dtype === undefined) {
    throw new DataError(
      `${file}: .npy dtype '${descr}' is not a token type, expected '<u2', '<u4' or '<i4'`,
      { file, offset: dictStart, key: "descr" },
    );
  }
  const fortran = field("fortran_order", "(True|False)");
  if (fortran !== "False") {
    throw new DataError(`${file}: .npy array is in Fortran order, expected C order`, {
      file,
      offset: dictStart,
      key: "fortran_order",
    });
  }
  const shape = field("shape", "\\(([^)]*)\\)");
  const dims = shape.split(",").map((d) => d.trim()).filter((d) => d !== "");
  if (dims.length !== 1 || !/^\d+$/.test(dims[0])) {
    throw new DataError(`${file}: .npy shape (${shape}) is not 1-D, expected (N,)`, {
      file,
      offset: dictStart,
      key: "shape",
    });
  }
  return { dataOffset, dtype, length: Number(dims[0]) };
}
