/**
 * The DisTrO payload format (wire.ts) stated as plainly as possible, for tests of the fast
 * decoder: bytes and bits read one at a time, each field in the order of the table in
 * wire.ts, each index code read as its definition in index_code.ts says. It refuses exactly the
 * payloads `decodePayload` refuses, naming the same spot (`where`); messages are not compared.
 *
 * @module
 */

import type { SparseParam } from "../compress.ts";
import type { DistroResult } from "../result.ts";
import type { PayloadExpectation } from "../wire.ts";

/** What the reference refuses a payload for: the spot, named as `PayloadDecodeError.where`. */
export class ReferenceRefusal extends Error {
  constructor(readonly where: string) {
    super(`refused at ${where}`);
  }
}

/** Decodes `bytes` by the format's definition; throws {@link ReferenceRefusal}. */
export function decodeReference(bytes: Uint8Array, expect: PayloadExpectation): DistroResult {
  let at = 0;
  const take = (n: number, where: string): number[] => {
    if (at + n > bytes.length) throw new ReferenceRefusal(where);
    const out = [...bytes.subarray(at, at + n)];
    at += n;
    return out;
  };
  /** A little-endian unsigned integer of `n` bytes (exact for the values it is compared to). */
  const uint = (n: number, where: string) =>
    take(n, where).reduce((sum, b, i) => sum + b * 2 ** (8 * i), 0);
  const u64 = (where: string) => {
    const low = uint(4, where), high = uint(4, where);
    if (high >= 2 ** 21) throw new ReferenceRefusal(where); // 2^53 or more
    return high * 2 ** 32 + low;
  };

  if (take(4, "header magic").join() !== [0x44, 0x54, 0x52, 0x4f].join()) {
    throw new ReferenceRefusal("header magic");
  }
  if (uint(1, "header version") !== 1) throw new ReferenceRefusal("header version");
  const flags = (expect.quantize1bit ? 1 : 0) + (expect.stateDigests ? 2 : 0);
  if (uint(1, "header flags") !== flags) throw new ReferenceRefusal("header flags");
  const step = uint(4, "header step");
  const start = u64("header batch start");
  const end = u64("header batch end");
  if (end < start) throw new ReferenceRefusal("header batch");
  if (expect.step !== undefined && step !== expect.step) throw new ReferenceRefusal("header step");
  if (expect.batch && (start !== expect.batch.start || end !== expect.batch.end)) {
    throw new ReferenceRefusal("header batch");
  }
  const trainerNonce = uint(4, "header trainer nonce");
  if (uint(4, "header parameter count") !== expect.layouts.length) {
    throw new ReferenceRefusal("header parameter count");
  }
  const states = expect.stateDigests
    ? {
      input: Uint8Array.from(take(32, "input state digest")),
      output: Uint8Array.from(take(32, "output state digest")),
    }
    : undefined;

  const params: SparseParam[] = [];
  for (const [n, layout] of expect.layouts.entries()) {
    const where = `parameter ${n} ("${layout.name}")`;
    const rank = uint(1, `${where} rank`);
    if (rank !== layout.encodedShape.length) throw new ReferenceRefusal(`${where} rank`);
    const dims: number[] = [];
    for (let i = 0; i < rank; i++) dims.push(uint(4, `${where} shape`));
    if (dims.join() !== layout.encodedShape.join()) throw new ReferenceRefusal(`${where} shape`);
    const totalk = uint(4, `${where} totalk`);
    if (totalk !== layout.totalk) throw new ReferenceRefusal(`${where} totalk`);
    const k = uint(4, `${where} k`);
    if (k !== layout.k) throw new ReferenceRefusal(`${where} k`);

    // Index codes: L low bits per index, then a unary high vector, chunk after chunk.
    const universe = totalk - k + 1;
    let low = 0;
    while (k * 2 ** (low + 1) <= universe) low++;
    const high = k + Math.floor((universe - 1) / 2 ** low);
    const codeBits = layout.chunks * (k * low + high);
    const code = take(Math.ceil(codeBits / 8), `${where} indices`);
    const bit = (i: number) => (code[Math.floor(i / 8)] >> (i % 8)) & 1;
    let b = 0;
    const indices: number[] = [];
    for (let c = 0; c < layout.chunks; c++) {
      const lows: number[] = [];
      for (let i = 0; i < k; i++) {
        let v = 0;
        for (let j = 0; j < low; j++) v += bit(b++) * 2 ** j;
        lows.push(v);
      }
      const ones: number[] = [];
      for (let p = 0; p < high; p++) if (bit(b++)) ones.push(p);
      if (ones.length !== k) throw new ReferenceRefusal(`${where} chunk ${c}`);
      // The i-th one at position p is index (p − i)·2^L + low_i + i.
      const xs = ones.map((p, i) => (p - i) * 2 ** low + lows[i] + i);
      for (const [i, x] of xs.entries()) {
        if (x >= totalk || (i > 0 && x <= xs[i - 1])) {
          throw new ReferenceRefusal(`${where} chunk ${c}`);
        }
      }
      indices.push(...xs);
    }
    for (; b < code.length * 8; b++) if (bit(b)) throw new ReferenceRefusal(`${where} indices`);

    const entries = layout.chunks * k;
    const values: number[] = [];
    if (expect.quantize1bit) {
      const signs = take(Math.ceil(entries / 8), `${where} signs`);
      const sign = (i: number) => (signs[Math.floor(i / 8)] >> (i % 8)) & 1;
      for (let e = 0; e < entries; e++) values.push(sign(e) ? -1 : 1);
      for (let e = entries; e < signs.length * 8; e++) {
        if (sign(e)) throw new ReferenceRefusal(`${where} signs`);
      }
    } else {
      const raw = take(2 * entries, `${where} values`);
      for (let e = 0; e < entries; e++) {
        // bf16: sign, 8 exponent bits (all ones: infinite or NaN), 7 mantissa bits.
        const h = raw[2 * e] + 256 * raw[2 * e + 1];
        const sign = h >= 0x8000 ? -1 : 1;
        const exponent = (h >> 7) & 0xff;
        const mantissa = h & 0x7f;
        if (exponent === 0xff) throw new ReferenceRefusal(`${where} chunk ${Math.floor(e / k)}`);
        values.push(
          exponent === 0
            ? sign * mantissa * 2 ** -133
            : sign * (1 + mantissa / 128) * 2 ** (exponent - 127),
        );
      }
    }
    params.push({ indices: Uint32Array.from(indices), values: Float32Array.from(values) });
  }
  if (at !== bytes.length) throw new ReferenceRefusal("end");
  const batch = { start, end };
  return states === undefined
    ? { step, batch, trainerNonce, params }
    : { step, batch, trainerNonce, params, states };
}
