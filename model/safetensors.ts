/**
 * The safetensors container: an 8-byte little-endian header length, a JSON header mapping each
 * tensor name to `{dtype, shape, data_offsets: [begin, end]}` (plus an optional string map
 * `__metadata__`), then the tensors' bytes. Offsets are relative to the end of the header.
 *
 * Decoding checks everything a corrupt or hostile file could get wrong (header length, JSON shape,
 * dtype, offsets inside the data, byte size = product of shape × dtype size, no overlaps, no
 * holes) and names the tensor at fault. Tensor bytes are kept as stored; conversion to f32 is a
 * separate, explicit step ({@link tensorToFloat32}), so a load-then-save is bit-exact.
 *
 * @module
 */
import { decodeBf16, decodeF16, encodeBf16, encodeF16 } from "./float_codec.ts";

/** Bytes per element of every dtype the format defines. */
export const DTYPE_SIZES = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  F64: 8,
  I64: 8,
  U64: 8,
} as const;
/** A safetensors dtype name. */
export type Dtype = keyof typeof DTYPE_SIZES;
/** The float dtypes weights can be converted from and to. */
export type FloatDtype = "F32" | "F16" | "BF16";

/** One tensor as stored: raw little-endian bytes plus dtype and shape. */
export interface StoredTensor {
  dtype: Dtype;
  shape: number[];
  /** `product(shape) * DTYPE_SIZES[dtype]` bytes. */
  bytes: Uint8Array;
}

/** A whole safetensors file: tensors in file order and the optional `__metadata__` map. */
export interface SafetensorsFile {
  tensors: Map<string, StoredTensor>;
  metadata: Record<string, string> | null;
}

/** A safetensors file that cannot be read; the message names the file and the tensor. */
export class SafetensorsError extends Error {
  /** The tensor at fault, or `null` for the header as a whole. */
  readonly tensor: string | null;
  constructor(tensor: string | null, message: string) {
    super(message);
    this.name = "SafetensorsError";
    this.tensor = tensor;
  }
}

/** Refuse headers larger than this (the reference implementation's limit). */
export const MAX_HEADER_BYTES = 100_000_000;

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new Error("safetensors.ts assumes a little-endian host");
}

function isDtype(x: unknown): x is Dtype {
  return typeof x === "string" && Object.hasOwn(DTYPE_SIZES, x);
}

/** One tensor's header entry: dtype, shape and its byte range within the data section. */
export interface TensorHeader {
  dtype: Dtype;
  shape: number[];
  /** Byte offsets relative to the start of the data section (`8 + header length`). */
  begin: number;
  end: number;
}

/** A validated safetensors header: what a file holds, known before any tensor byte is read. */
export interface SafetensorsHeader {
  tensors: Map<string, TensorHeader>;
  metadata: Record<string, string> | null;
  /** Where the data section starts in the file: 8 + the header length. */
  dataStart: number;
  /** Bytes of the data section (the file's size minus {@link dataStart}). */
  dataBytes: number;
}

/** Reads the 8-byte header length; throws naming the file when it cannot fit `fileBytes`. */
function headerLength(prefix: Uint8Array, fileBytes: number, where: string): number {
  if (fileBytes < 8) {
    throw new SafetensorsError(
      null,
      `Cannot load "${where}": file is ${fileBytes} bytes, shorter than the 8-byte header`,
    );
  }
  const len = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (len > BigInt(Math.min(MAX_HEADER_BYTES, fileBytes - 8))) {
    throw new SafetensorsError(
      null,
      `Cannot load "${where}": header length ${len} exceeds the ${fileBytes - 8} bytes after it`,
    );
  }
  return Number(len);
}

/**
 * Validates the JSON header of a file whose data section is `dataBytes` long: every entry's
 * dtype, shape and offsets, byte size = product of shape × dtype size, and tensors tiling the
 * data section exactly. Throws {@link SafetensorsError} naming the file and tensor.
 */
export function parseSafetensorsHeader(
  json: Uint8Array,
  dataBytes: number,
  options?: { file?: string },
): SafetensorsHeader {
  const where = options?.file ?? "safetensors";
  const fail = (tensor: string | null, msg: string): never => {
    throw new SafetensorsError(tensor, `Cannot load "${where}": ${msg}`);
  };
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(json));
  } catch (e) {
    fail(null, `header is not valid UTF-8 JSON: ${(e as Error).message}`);
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    fail(null, "header is not a JSON object");
  }
  let metadata: Record<string, string> | null = null;
  const spans: { name: string; begin: number; end: number }[] = [];
  const tensors = new Map<string, TensorHeader>();
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
        fail(null, "__metadata__ is not a JSON object");
      }
      for (const [k, v] of Object.entries(entry as Record<string, unknown>)) {
        if (typeof v !== "string") fail(null, `__metadata__ value for "${k}" is not a string`);
      }
      metadata = entry as Record<string, string>;
      continue;
    }
    if (typeof entry !== "object" || entry === null) {
      fail(name, `tensor "${name}" is not an object`);
    }
    const { dtype, shape, data_offsets: offsets } = entry as Record<string, unknown>;
    if (!isDtype(dtype)) fail(name, `tensor "${name}" has unknown dtype ${JSON.stringify(dtype)}`);
    const dt = dtype as Dtype;
    if (
      !Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)
    ) {
      fail(name, `tensor "${name}" has invalid shape ${JSON.stringify(shape)}`);
    }
    if (
      !Array.isArray(offsets) || offsets.length !== 2 ||
      !offsets.every((o) => Number.isSafeInteger(o) && (o as number) >= 0)
    ) {
      fail(name, `tensor "${name}" has invalid data_offsets ${JSON.stringify(offsets)}`);
    }
    const [begin, end] = offsets as [number, number];
    if (begin > end || end > dataBytes) {
      fail(
        name,
        `tensor "${name}" data_offsets [${begin}, ${end}] lie outside the ${dataBytes} data bytes`,
      );
    }
    const dims = shape as number[];
    const expected = dims.reduce((a, b) => a * b, 1) * DTYPE_SIZES[dt];
    if (end - begin !== expected) {
      fail(
        name,
        `tensor "${name}" of dtype ${dt} and shape [${dims.join(", ")}] needs ${expected} bytes, ` +
          `data_offsets give ${end - begin}`,
      );
    }
    spans.push({ name, begin, end });
    tensors.set(name, { dtype: dt, shape: [...dims], begin, end });
  }
  // Tensors must tile the data section exactly: no overlaps, no holes, nothing trailing.
  spans.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let pos = 0;
  for (const s of spans) {
    if (s.begin < pos) fail(s.name, `tensor "${s.name}" overlaps the previous tensor`);
    if (s.begin > pos) fail(s.name, `${s.begin - pos} unused bytes before tensor "${s.name}"`);
    pos = s.end;
  }
  if (pos !== dataBytes) fail(null, `${dataBytes - pos} unused bytes after the last tensor`);
  return { tensors, metadata, dataStart: 8 + json.length, dataBytes };
}

/**
 * Parses the bytes of a `.safetensors` file. `file` is only used in error messages.
 * The returned tensors' `bytes` are views into `data` (no copy).
 */
export function decodeSafetensors(
  data: Uint8Array,
  options?: { file?: string },
): SafetensorsFile {
  const where = options?.file ?? "safetensors";
  const n = headerLength(data, data.length, where);
  const header = parseSafetensorsHeader(data.subarray(8, 8 + n), data.length - 8 - n, {
    file: where,
  });
  const body = data.subarray(header.dataStart);
  const tensors = new Map<string, StoredTensor>();
  for (const [name, t] of header.tensors) {
    tensors.set(name, { dtype: t.dtype, shape: t.shape, bytes: body.subarray(t.begin, t.end) });
  }
  return { tensors, metadata: header.metadata };
}

/** What a safetensors header records of one tensor: everything but its bytes. */
export interface TensorSpec {
  name: string;
  dtype: Dtype;
  shape: readonly number[];
}

/** Bytes of a tensor of `spec`'s dtype and shape. */
export function tensorByteSize(spec: Pick<TensorSpec, "dtype" | "shape">): number {
  return spec.shape.reduce((a, b) => a * b, 1) * DTYPE_SIZES[spec.dtype];
}

/**
 * The file's first bytes: the 8-byte length and the JSON header of `tensors` (in file order),
 * padded with spaces so the data section starts 8-byte aligned, as the reference writer does.
 * The tensors' bytes follow in the same order ({@link encodeSafetensors}, or a streamed writer).
 */
export function encodeSafetensorsHeader(
  tensors: readonly TensorSpec[],
  metadata: Record<string, string> | null,
): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata !== null) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    if (t.name === "__metadata__") {
      throw new RangeError(`"__metadata__" is not a valid tensor name`);
    }
    const bytes = tensorByteSize(t);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.length / 8) * 8;
  const out = new Uint8Array(8 + padded).fill(0x20);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  return out;
}

/**
 * Serializes tensors in the given order. The header is padded with spaces so the data section
 * starts 8-byte aligned, as the reference writer does.
 */
export function encodeSafetensors(file: SafetensorsFile): Uint8Array {
  const specs: TensorSpec[] = [];
  let data = 0;
  for (const [name, t] of file.tensors) {
    const expected = tensorByteSize(t);
    if (t.bytes.length !== expected) {
      throw new RangeError(
        `tensor "${name}" of dtype ${t.dtype} and shape [${t.shape.join(", ")}] needs ` +
          `${expected} bytes, found ${t.bytes.length}`,
      );
    }
    specs.push({ name, dtype: t.dtype, shape: t.shape });
    data += expected;
  }
  const head = encodeSafetensorsHeader(specs, file.metadata);
  const out = new Uint8Array(head.length + data);
  out.set(head);
  let pos = head.length;
  for (const t of file.tensors.values()) {
    out.set(t.bytes, pos);
    pos += t.bytes.length;
  }
  return out;
}

/** Copies `bytes` into a fresh, aligned buffer. */
function aligned(bytes: Uint8Array): ArrayBuffer {
  return bytes.slice().buffer;
}

/**
 * A float tensor's values as f32 (exact for F32/F16/BF16; F64 is rounded to nearest f32).
 * Throws {@link SafetensorsError} for integer dtypes.
 */
export function tensorToFloat32(name: string, t: StoredTensor): Float32Array {
  switch (t.dtype) {
    case "F32":
      return new Float32Array(aligned(t.bytes));
    case "F16":
      return decodeF16(new Uint16Array(aligned(t.bytes)));
    case "BF16":
      return decodeBf16(new Uint16Array(aligned(t.bytes)));
    case "F64":
      return Float32Array.from(new Float64Array(aligned(t.bytes)));
    default:
      throw new SafetensorsError(
        name,
        `tensor "${name}" has dtype ${t.dtype}, expected a float dtype (F32, F16, BF16, F64)`,
      );
  }
}

/** Stores f32 values as `dtype` (round-to-nearest-even for the 16-bit formats). */
export function tensorFromFloat32(
  values: Float32Array,
  shape: number[],
  dtype: FloatDtype,
): StoredTensor {
  const count = shape.reduce((a, b) => a * b, 1);
  if (count !== values.length) {
    throw new RangeError(
      `shape [${shape.join(", ")}] holds ${count} values, found ${values.length}`,
    );
  }
  let bytes: Uint8Array;
  switch (dtype) {
    case "F32":
      bytes = new Uint8Array(values.slice().buffer);
      break;
    case "F16":
      bytes = new Uint8Array(encodeF16(values).buffer);
      break;
    case "BF16":
      bytes = new Uint8Array(encodeBf16(values).buffer);
      break;
  }
  return { dtype, shape: [...shape], bytes };
}

/** Reads and decodes a `.safetensors` file; errors name the path. */
export async function readSafetensors(path: string): Promise<SafetensorsFile> {
  return decodeSafetensors(await Deno.readFile(path), { file: path });
}

/**
 * Reads and validates only the header of a `.safetensors` file (against the file's size), so
 * a caller can check names, dtypes and shapes before reading any tensor data.
 */
export async function readSafetensorsHeader(path: string): Promise<SafetensorsHeader> {
  using file = await Deno.open(path, { read: true });
  const size = (await file.stat()).size;
  const prefix = new Uint8Array(8);
  if (size >= 8) await readExactly(file, prefix);
  const n = headerLength(prefix, size, path);
  const json = new Uint8Array(n);
  await readExactly(file, json);
  return parseSafetensorsHeader(json, size - 8 - n, { file: path });
}

async function readExactly(file: Deno.FsFile, into: Uint8Array): Promise<void> {
  let got = 0;
  while (got < into.length) {
    const n = await file.read(into.subarray(got));
    if (n === null) throw new Deno.errors.UnexpectedEof(`file ended after ${got} bytes`);
    got += n;
  }
}

/** Encodes and writes a `.safetensors` file (via a temporary file, then rename). */
export async function writeSafetensors(path: string, file: SafetensorsFile): Promise<void> {
  const tmp = `${path}.tmp`;
  await Deno.writeFile(tmp, encodeSafetensors(file));
  await Deno.rename(tmp, path);
}
