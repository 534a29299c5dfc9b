/**
 * The DisTrO payload: one client's result for one step as compact, versioned bytes, and
 * the single entry point that decodes and validates untrusted payloads.
 *
 * Layout (integers little-endian):
 *
 * | field | bytes |
 * |---|---|
 * | magic `"DTRO"` | 4 |
 * | version (1) | 1 |
 * | flags (bit 0: 1-bit values; bit 1: state digests; others 0) | 1 |
 * | step u32, batch start u64, batch end u64, trainer nonce u32, parameter count u32 | 28 |
 * | with flag bit 1: input and output state digests (result.ts `StateDigests`) | 64 |
 * | per parameter: rank u8 (2 or 4), encoded dims u32 × rank, totalk u32, k u32 | 9 + 4·rank |
 * | per parameter: index code, every chunk (index_code.ts), zero-padded to a byte | ⌈chunks·bits/8⌉ |
 * | per parameter: values, 1 sign bit each LSB-first padded to a byte, or bf16 u16 each | |
 *
 * Within a chunk, entries are sorted by index; values follow that order. With k = 8 in
 * 64×64 chunks an entry costs 10.9 + 1 bits (Psyche: 16 + 1).
 *
 * @module
 */

import { bitsZeroFrom, BitWriter } from "./bits.ts";
import type { SparseParam } from "./compress.ts";
import { indexCodeBits, readIndices, writeIndices } from "./index_code.ts";
import type { ChunkLayout } from "./layout.ts";
import type { DistroResult } from "./result.ts";
import { type BatchId, concatBytes } from "../common/mod.ts";

/** First four bytes of every payload. */
export const PAYLOAD_MAGIC = new Uint8Array([0x44, 0x54, 0x52, 0x4f]); // "DTRO"
/** The format version written and accepted. */
export const PAYLOAD_VERSION = 1;
const HEADER_BYTES = 34;
const FLAG_ONE_BIT = 1;
const FLAG_STATE_DIGESTS = 2;
/** Bytes of the two state digests of a verifying run's payload. */
export const STATE_DIGESTS_BYTES = 64;

/** A payload that is not a valid result for the expected model; `where` names the spot. */
export class PayloadDecodeError extends Error {
  constructor(readonly where: string, detail: string) {
    super(`Invalid DisTrO payload at ${where}: ${detail}`);
    this.name = "PayloadDecodeError";
  }
}

/**
 * What a payload must match: the model's chunk layouts (in order) and the value format; when
 * given, also the step and batch the payload was announced for.
 */
export interface PayloadExpectation {
  readonly layouts: readonly ChunkLayout[];
  readonly quantize1bit: boolean;
  /**
   * Whether payloads carry the trainer's state digests (a run with `verification_percent > 0`):
   * then required, else refused. Default false.
   */
  readonly stateDigests?: boolean;
  /** The step the commitment named (checked against the header when set). */
  readonly step?: number;
  /** The batch the commitment named (checked against the header when set). */
  readonly batch?: BatchId;
}

/** One f32 and its bits, reused by the conversions below (no allocation per value). */
const f32 = new Float32Array(1);
const f32Bits = new Uint32Array(f32.buffer);

/** f32 → bf16 bits, round to nearest even (as torch's `to(bfloat16)`). */
export function toBf16(x: number): number {
  f32[0] = x;
  const bits = f32Bits[0];
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/** bf16 bits → number. */
export function fromBf16(h: number): number {
  f32Bits[0] = h << 16;
  return f32[0];
}

/**
 * Exact payload size in bytes for a model, without encoding anything (with the state digests
 * of a verifying run when `stateDigests`).
 */
export function payloadBytes(
  layouts: readonly ChunkLayout[],
  quantize1bit: boolean,
  stateDigests = false,
): number {
  let bytes = HEADER_BYTES + (stateDigests ? STATE_DIGESTS_BYTES : 0);
  for (const l of layouts) {
    const entries = l.chunks * l.k;
    bytes += 9 + 4 * l.encodedShape.length;
    bytes += Math.ceil((l.chunks * indexCodeBits(l.k, l.totalk)) / 8);
    bytes += quantize1bit ? Math.ceil(entries / 8) : 2 * entries;
  }
  return bytes;
}

/**
 * Encodes `result` for the model described by `expect`. Throws `RangeError` naming the
 * parameter when the result does not fit the layout (wrong counts, an index out of range
 * or repeated in a chunk, a non-finite value in bf16 mode, a value other than ±1 in
 * 1-bit mode).
 */
export function encodePayload(result: DistroResult, expect: PayloadExpectation): Uint8Array {
  const { layouts, quantize1bit } = expect;
  const { step, batch, trainerNonce } = result;
  for (
    const [what, v, max] of [["step", step, 2 ** 32], ["trainer nonce", trainerNonce, 2 ** 32], [
      "batch start",
      batch.start,
      2 ** 53,
    ], ["batch end", batch.end, 2 ** 53]] as const
  ) {
    if (!Number.isInteger(v) || v < 0 || v >= max) throw new RangeError(`payload ${what}: ${v}`);
  }
  if (batch.end < batch.start) {
    throw new RangeError(`payload batch [${batch.start}, ${batch.end}] ends before it starts`);
  }
  if (result.params.length !== layouts.length) {
    throw new RangeError(
      `payload has ${result.params.length} parameters, the model has ${layouts.length}`,
    );
  }
  const withStates = expect.stateDigests ?? false;
  if (withStates !== (result.states !== undefined)) {
    throw new RangeError(
      withStates
        ? "payload: this run verifies results, and the result carries no state digests"
        : "payload: this run does not verify results, and the result carries state digests",
    );
  }
  const parts: Uint8Array[] = [];
  const header = new Uint8Array(HEADER_BYTES);
  const hv = new DataView(header.buffer);
  header.set(PAYLOAD_MAGIC, 0);
  hv.setUint8(4, PAYLOAD_VERSION);
  hv.setUint8(5, (quantize1bit ? FLAG_ONE_BIT : 0) | (withStates ? FLAG_STATE_DIGESTS : 0));
  hv.setUint32(6, step, true);
  hv.setBigUint64(10, BigInt(batch.start), true);
  hv.setBigUint64(18, BigInt(batch.end), true);
  hv.setUint32(26, trainerNonce, true);
  hv.setUint32(30, layouts.length, true);
  parts.push(header);
  if (result.states !== undefined) {
    for (const [what, d] of [["input", result.states.input], ["output", result.states.output]]) {
      if (!(d instanceof Uint8Array) || d.length !== 32) {
        throw new RangeError(`payload ${what} state digest must be 32 bytes`);
      }
      parts.push(d);
    }
  }
  for (const [n, layout] of layouts.entries()) {
    parts.push(...encodeParam(layout, result.params[n], quantize1bit));
  }
  return concatBytes(parts);
}

function encodeParam(layout: ChunkLayout, p: SparseParam, oneBit: boolean): Uint8Array[] {
  const { chunks, k, totalk, encodedShape } = layout;
  const name = `parameter "${layout.name}"`;
  if (p.indices.length !== chunks * k || p.values.length !== chunks * k) {
    throw new RangeError(
      `${name}: ${p.indices.length} indices and ${p.values.length} values, expected ${chunks * k}`,
    );
  }
  const meta = new Uint8Array(9 + 4 * encodedShape.length);
  const mv = new DataView(meta.buffer);
  mv.setUint8(0, encodedShape.length);
  encodedShape.forEach((d, i) => mv.setUint32(1 + 4 * i, d, true));
  mv.setUint32(1 + 4 * encodedShape.length, totalk, true);
  mv.setUint32(5 + 4 * encodedShape.length, k, true);
  const idxBits = new BitWriter();
  // Values in sorted order: a sign bit each (LSB-first) or bf16, little-endian.
  const signs = new Uint8Array(oneBit ? Math.ceil((chunks * k) / 8) : 0);
  const bf16 = new Uint8Array(oneBit ? 0 : 2 * chunks * k);
  const { indices, values } = p;
  const order = new Uint32Array(k);
  const sorted = new Uint32Array(k);
  for (let c = 0; c < chunks; c++) {
    for (let r = 0; r < k; r++) {
      // Insertion sort by index: k is small.
      const e = c * k + r;
      const i = indices[e];
      let at = r;
      while (at > 0 && indices[order[at - 1]] > i) {
        order[at] = order[at - 1];
        at--;
      }
      order[at] = e;
    }
    for (let r = 0; r < k; r++) {
      const e = order[r];
      const i = indices[e];
      if (i >= totalk) throw new RangeError(`${name} chunk ${c}: index ${i} >= totalk ${totalk}`);
      if (r > 0 && i === sorted[r - 1]) {
        throw new RangeError(`${name} chunk ${c}: index ${i} appears twice`);
      }
      sorted[r] = i;
      const v = values[e];
      const out = c * k + r;
      if (oneBit) {
        if (v !== 1 && v !== -1) throw new RangeError(`${name} chunk ${c}: 1-bit value ${v}`);
        if (v < 0) signs[out >>> 3] |= 1 << (out & 7);
      } else {
        if (!Number.isFinite(v)) throw new RangeError(`${name} chunk ${c}: value ${v}`);
        const h = toBf16(v);
        if ((h & 0x7f80) === 0x7f80) {
          throw new RangeError(`${name} chunk ${c}: ${v} overflows bf16`);
        }
        bf16[2 * out] = h & 0xff;
        bf16[2 * out + 1] = h >>> 8;
      }
    }
    writeIndices(idxBits, { sorted, totalk });
  }
  return [meta, idxBits.finish(), oneBit ? signs : bf16];
}

/** A bounds-checked cursor over the payload bytes. */
class Cursor {
  at = 0;
  readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number, where: string): void {
    if (this.at + n > this.bytes.length) {
      throw new PayloadDecodeError(
        where,
        `needs ${n} bytes at offset ${this.at}, payload has ${this.bytes.length}`,
      );
    }
  }
  u8(where: string): number {
    this.need(1, where);
    return this.view.getUint8(this.at++);
  }
  u32(where: string): number {
    this.need(4, where);
    const v = this.view.getUint32(this.at, true);
    this.at += 4;
    return v;
  }
  u64(where: string): number {
    this.need(8, where);
    const v = this.view.getBigUint64(this.at, true);
    this.at += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new PayloadDecodeError(where, `${v} exceeds 2^53 - 1`);
    }
    return Number(v);
  }
  take(n: number, where: string): Uint8Array {
    this.need(n, where);
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

/**
 * Decodes and validates an untrusted payload against the expected model. Checks the magic,
 * version, flags, the step and batch when expected, parameter count, every shape, totalk and k, every chunk's index code
 * (exactly k distinct indices below totalk), value encoding (finite bf16; zero padding) and
 * that no bytes trail. Throws only {@link PayloadDecodeError}; never returns a partial result.
 * Entries come out sorted by index within each chunk.
 */
export function decodePayload(bytes: Uint8Array, expect: PayloadExpectation): DistroResult {
  try {
    return decodeUnchecked(bytes, expect);
  } catch (e) {
    if (e instanceof PayloadDecodeError) throw e;
    // Defensive: any other failure is still reported as a bad payload, with its cause.
    throw new PayloadDecodeError("payload", `unexpected ${e instanceof Error ? e.name : e}`);
  }
}

function decodeUnchecked(bytes: Uint8Array, expect: PayloadExpectation): DistroResult {
  const cur = new Cursor(bytes);
  const magic = cur.take(4, "header magic");
  if (!magic.every((b, i) => b === PAYLOAD_MAGIC[i])) {
    throw new PayloadDecodeError("header magic", `expected "DTRO", found bytes [${magic}]`);
  }
  const version = cur.u8("header version");
  if (version !== PAYLOAD_VERSION) {
    throw new PayloadDecodeError("header version", `expected ${PAYLOAD_VERSION}, found ${version}`);
  }
  const flags = cur.u8("header flags");
  const wantFlags = (expect.quantize1bit ? FLAG_ONE_BIT : 0) |
    (expect.stateDigests ? FLAG_STATE_DIGESTS : 0);
  if (flags !== wantFlags) {
    throw new PayloadDecodeError("header flags", `expected ${wantFlags}, found ${flags}`);
  }
  const step = cur.u32("header step");
  const start = cur.u64("header batch start");
  const end = cur.u64("header batch end");
  if (end < start) {
    throw new PayloadDecodeError("header batch", `end ${end} is before start ${start}`);
  }
  if (expect.step !== undefined && step !== expect.step) {
    throw new PayloadDecodeError("header step", `expected ${expect.step}, found ${step}`);
  }
  if (expect.batch && (start !== expect.batch.start || end !== expect.batch.end)) {
    throw new PayloadDecodeError(
      "header batch",
      `expected [${expect.batch.start}, ${expect.batch.end}], found [${start}, ${end}]`,
    );
  }
  const trainerNonce = cur.u32("header trainer nonce");
  const count = cur.u32("header parameter count");
  if (count !== expect.layouts.length) {
    throw new PayloadDecodeError(
      "header parameter count",
      `expected ${expect.layouts.length}, found ${count}`,
    );
  }
  const states = expect.stateDigests
    ? {
      input: cur.take(32, "input state digest").slice(),
      output: cur.take(32, "output state digest").slice(),
    }
    : undefined;
  const params: SparseParam[] = [];
  for (const [n, layout] of expect.layouts.entries()) {
    params.push(decodeParam(cur, layout, `parameter ${n} ("${layout.name}")`, expect.quantize1bit));
  }
  if (cur.at !== bytes.length) {
    throw new PayloadDecodeError("end", `${bytes.length - cur.at} trailing bytes`);
  }
  const batch = { start, end };
  return states === undefined
    ? { step, batch, trainerNonce, params }
    : { step, batch, trainerNonce, params, states };
}

function decodeParam(cur: Cursor, layout: ChunkLayout, where: string, oneBit: boolean) {
  const rank = cur.u8(`${where} rank`);
  const shape = layout.encodedShape;
  if (rank !== shape.length) {
    throw new PayloadDecodeError(`${where} rank`, `expected ${shape.length}, found ${rank}`);
  }
  const dims: number[] = [];
  for (let i = 0; i < rank; i++) dims.push(cur.u32(`${where} shape`));
  if (dims.some((d, i) => d !== shape[i])) {
    throw new PayloadDecodeError(`${where} shape`, `expected [${shape}], found [${dims}]`);
  }
  const totalk = cur.u32(`${where} totalk`);
  if (totalk !== layout.totalk) {
    throw new PayloadDecodeError(`${where} totalk`, `expected ${layout.totalk}, found ${totalk}`);
  }
  const k = cur.u32(`${where} k`);
  if (k !== layout.k) {
    throw new PayloadDecodeError(`${where} k`, `expected ${layout.k}, found ${k}`);
  }
  const { chunks } = layout;
  const idxBytes = cur.take(Math.ceil((chunks * indexCodeBits(k, totalk)) / 8), `${where} indices`);
  const indices = new Uint32Array(chunks * k);
  const fault = readIndices(idxBytes, { into: indices, chunks, k, totalk });
  if (fault !== null) {
    const at = `${where} chunk ${fault.chunk}`;
    if (fault.problem === "ones") {
      throw new PayloadDecodeError(at, `index code does not hold ${k} indices`);
    }
    if (fault.problem === "range") {
      throw new PayloadDecodeError(at, `an index is >= totalk ${totalk}`);
    }
    throw new PayloadDecodeError(at, "indices repeat or are out of order");
  }
  if (!bitsZeroFrom(idxBytes, chunks * indexCodeBits(k, totalk))) {
    throw new PayloadDecodeError(`${where} indices`, "nonzero padding bits");
  }
  const values = new Float32Array(chunks * k);
  if (oneBit) {
    const signBytes = cur.take(Math.ceil((chunks * k) / 8), `${where} signs`);
    // ±1 written as f32 bits (1.0 with the sign bit from the payload): no branch on the sign.
    const bits = new Uint32Array(values.buffer);
    for (let e = 0; e < values.length; e++) {
      bits[e] = 0x3f800000 | (((signBytes[e >>> 3] >>> (e & 7)) & 1) << 31);
    }
    const pad = values.length & 7;
    if (pad !== 0 && signBytes[signBytes.length - 1] >>> pad !== 0) {
      throw new PayloadDecodeError(`${where} signs`, "nonzero padding bits");
    }
  } else {
    const raw = cur.take(2 * chunks * k, `${where} values`);
    // bf16 is the high half of an f32: written as bits, so no number is built per value.
    const bits = new Uint32Array(values.buffer);
    for (let e = 0; e < values.length; e++) {
      const h = raw[2 * e] | (raw[2 * e + 1] << 8);
      if ((h & 0x7f80) === 0x7f80) {
        throw new PayloadDecodeError(
          `${where} chunk ${Math.floor(e / k)}`,
          "non-finite bf16 value",
        );
      }
      bits[e] = h << 16;
    }
  }
  return { indices, values };
}
