import assert from "node:assert/strict";
import fc from "fast-check";
import type { SparseParam } from "./compress.ts";
import { indexCodeBits } from "./index_code.ts";
import { type ChunkLayout, chunkLayout } from "./layout.ts";
import type { DistroResult } from "./result.ts";
import { decodeReference, ReferenceRefusal } from "./testing/wire_reference.ts";
import {
  decodePayload,
  encodePayload,
  fromBf16,
  payloadBytes,
  PayloadDecodeError,
  type PayloadExpectation,
  toBf16,
} from "./wire.ts";

/** A random model (1-D and 2-D parameters) and a random valid result for it. */
const scenario = fc
  .record({
    shapes: fc.array(
      fc.oneof(
        fc.tuple(fc.integer({ min: 1, max: 40 })),
        fc.tuple(fc.integer({ min: 1, max: 24 }), fc.integer({ min: 1, max: 24 })),
      ),
      { minLength: 1, maxLength: 4 },
    ),
    chunk: fc.integer({ min: 1, max: 16 }),
    topk: fc.integer({ min: 1, max: 20 }),
    quantize1bit: fc.boolean(),
    seed: fc.integer(),
    step: fc.nat(),
    start: fc.nat({ max: 2 ** 40 }),
    len: fc.nat({ max: 1000 }),
    nonce: fc.nat(),
  })
  .map((s) => {
    const layouts = s.shapes.map((shape, i) =>
      chunkLayout(`p${i}`, shape, { chunk: s.chunk, topk: s.topk })
    );
    let r = s.seed >>> 0;
    const next = () => (r = (Math.imul(r, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const params: SparseParam[] = layouts.map((l) => {
      const indices = new Uint32Array(l.chunks * l.k);
      const values = new Float32Array(l.chunks * l.k);
      for (let c = 0; c < l.chunks; c++) {
        const pool = Array.from({ length: l.totalk }, (_, i) => i);
        for (let e = 0; e < l.k; e++) {
          const pick = e + Math.floor(next() * (pool.length - e));
          [pool[e], pool[pick]] = [pool[pick], pool[e]];
          indices[c * l.k + e] = pool[e];
          values[c * l.k + e] = s.quantize1bit ? (next() < 0.5 ? -1 : 1) : (next() - 0.5) * 1e-3;
        }
      }
      return { indices, values };
    });
    const result: DistroResult = {
      step: s.step,
      batch: { start: s.start, end: s.start + s.len },
      trainerNonce: s.nonce,
      params,
    };
    const expect: PayloadExpectation = { layouts, quantize1bit: s.quantize1bit };
    return { result, expect };
  });

/** The result as the decoder returns it: entries sorted by index in each chunk, bf16 values. */
function canonical(result: DistroResult, expect: PayloadExpectation): DistroResult {
  const params = result.params.map((p, n) => {
    const { chunks, k } = expect.layouts[n];
    const indices = new Uint32Array(p.indices.length);
    const values = new Float32Array(p.values.length);
    for (let c = 0; c < chunks; c++) {
      const order = Array.from({ length: k }, (_, r) => c * k + r)
        .sort((a, b) => p.indices[a] - p.indices[b]);
      order.forEach((e, r) => {
        indices[c * k + r] = p.indices[e];
        values[c * k + r] = expect.quantize1bit ? p.values[e] : fromBf16(toBf16(p.values[e]));
      });
    }
    return { indices, values };
  });
  return { ...result, batch: { ...result.batch }, params };
}

function decodeOrError(bytes: Uint8Array, expect: PayloadExpectation) {
  try {
    return decodePayload(bytes, expect);
  } catch (e) {
    if (e instanceof PayloadDecodeError) return e;
    throw new Error(`decodePayload threw ${e} instead of PayloadDecodeError`);
  }
}

Deno.test("random results round-trip and have the predicted size", () => {
  fc.assert(
    fc.property(scenario, ({ result, expect }) => {
      const bytes = encodePayload(result, expect);
      assert.equal(bytes.length, payloadBytes(expect.layouts, expect.quantize1bit));
      assert.deepEqual(decodePayload(bytes, expect), canonical(result, expect));
    }),
    { numRuns: 200 },
  );
});

Deno.test("every truncation is rejected with PayloadDecodeError", () => {
  fc.assert(
    fc.property(scenario, ({ result, expect }) => {
      const bytes = encodePayload(result, expect);
      for (let n = 0; n < bytes.length; n++) {
        assert.ok(decodeOrError(bytes.subarray(0, n), expect) instanceof PayloadDecodeError);
      }
      const longer = new Uint8Array(bytes.length + 1);
      longer.set(bytes);
      assert.match(String(decodeOrError(longer, expect)), /1 trailing bytes/);
    }),
    { numRuns: 40 },
  );
});

Deno.test("mutated payloads are rejected cleanly or decode to exactly what they encode", () => {
  fc.assert(
    fc.property(
      scenario,
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), {
        minLength: 1,
        maxLength: 3,
      }),
      ({ result, expect }, edits) => {
        const bytes = encodePayload(result, expect);
        for (const [pos, xor] of edits) bytes[pos % bytes.length] ^= xor;
        const out = decodeOrError(bytes, expect);
        // Canonical encoding: anything accepted re-encodes to the very same bytes.
        if (!(out instanceof PayloadDecodeError)) {
          assert.deepEqual(encodePayload(out, expect), bytes);
        }
      },
    ),
    { numRuns: 500 },
  );
});

/** Byte ranges `[start, end)` of each parameter's index codes and of its values. */
function bodyRanges(expect: PayloadExpectation, digests: boolean): [number, number][] {
  let at = 34 + (digests ? 64 : 0);
  const ranges: [number, number][] = [];
  for (const l of expect.layouts) {
    at += 9 + 4 * l.encodedShape.length;
    const codes = Math.ceil((l.chunks * indexCodeBits(l.k, l.totalk)) / 8);
    const values = expect.quantize1bit ? Math.ceil((l.chunks * l.k) / 8) : 2 * l.chunks * l.k;
    ranges.push([at, at + codes], [at + codes, at + codes + values]);
    at += codes + values;
  }
  return ranges;
}

Deno.test("decode agrees with the plain reference: same result, or refused at the same spot", () => {
  const digest = fc.uint8Array({ minLength: 32, maxLength: 32 });
  fc.assert(
    fc.property(
      scenario,
      fc.option(fc.record({ input: digest, output: digest })),
      // Anywhere: a byte xor-ed; in the index codes and values: single bits, the last byte of
      // a range (its padding) as often as any other.
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { maxLength: 2 }),
      fc.array(fc.tuple(fc.nat(), fc.nat(), fc.boolean(), fc.nat(7)), { maxLength: 2 }),
      fc.nat(),
      ({ result, expect }, states, edits, flips, cut) => {
        const expectation = { ...expect, stateDigests: states !== null };
        const bytes = encodePayload(states ? { ...result, states } : result, expectation);
        const edited = bytes.slice();
        for (const [pos, xor] of edits) edited[pos % bytes.length] ^= xor;
        const flipped = bytes.slice();
        const ranges = bodyRanges(expect, states !== null);
        for (const [r, pos, last, bit] of flips) {
          const [start, end] = ranges[r % ranges.length];
          if (end > start) flipped[last ? end - 1 : start + (pos % (end - start))] ^= 1 << bit;
        }
        const longer = new Uint8Array(bytes.length + 1);
        longer.set(bytes);
        const cutShort = bytes.subarray(0, cut % bytes.length);
        for (const b of [bytes, edited, flipped, cutShort, longer]) {
          const fast = decodeOrError(b, expectation);
          let plain;
          try {
            plain = decodeReference(b, expectation);
          } catch (e) {
            if (!(e instanceof ReferenceRefusal)) throw e;
            assert.ok(fast instanceof PayloadDecodeError, `the reference refuses at ${e.where}`);
            assert.equal(fast.where, e.where);
            continue;
          }
          assert.deepEqual(fast, plain);
        }
      },
    ),
    { numRuns: 400 },
  );
});

Deno.test("decode names what is wrong", () => {
  const layouts = [chunkLayout("w", [8, 8], { chunk: 4, topk: 2 })];
  const expect = { layouts, quantize1bit: true };
  const params = [{
    indices: Uint32Array.from([0, 5, 1, 2, 3, 15, 7, 6]),
    values: Float32Array.from([1, -1, 1, 1, -1, -1, 1, 1]),
  }];
  const result: DistroResult = { step: 3, batch: { start: 10, end: 19 }, trainerNonce: 1, params };
  const good = encodePayload(result, expect);
  const err = (bytes: Uint8Array, exp: PayloadExpectation = expect) =>
    String(decodeOrError(bytes, exp));
  const bad = good.slice();
  bad[0] = 0x58;
  assert.match(err(bad), /header magic: expected "DTRO"/);
  assert.match(err(good, { layouts, quantize1bit: false }), /header flags: expected 0, found 1/);
  const other = [chunkLayout("w", [8, 16], { chunk: 4, topk: 2 })];
  assert.match(
    err(good, { layouts: other, quantize1bit: true }),
    /shape: expected \[2,4,4,4\], found \[2,2,4,4\]/,
  );
  const k3 = [chunkLayout("w", [8, 8], { chunk: 4, topk: 3 })];
  assert.match(
    err(good, { layouts: k3, quantize1bit: true }),
    /parameter 0 \("w"\) k: expected 3, found 2/,
  );
  assert.match(err(good, { ...expect, step: 4 }), /header step: expected 4, found 3/);
  assert.match(
    err(good, { ...expect, batch: { start: 10, end: 20 } }),
    /header batch: expected \[10, 20\], found \[10, 19\]/,
  );
  assert.equal(decodePayload(good, { ...expect, step: 3, batch: { start: 10, end: 19 } }).step, 3);
  assert.match(
    err(good, { layouts: [...layouts, ...layouts], quantize1bit: true }),
    /count: expected 2, found 1/,
  );
  // An index code with all high bits set holds more than k indices.
  const idxAt = 34 + 9 + 16;
  const many = good.slice();
  many[idxAt + 1] = 0xff;
  assert.match(err(many), /parameter 0 \("w"\) chunk 0: index code/);
});

Deno.test("encode rejects results that do not fit the model", () => {
  const layouts = [chunkLayout("w", [4], { chunk: 4, topk: 2 })];
  const base = { step: 1, batch: { start: 0, end: 0 }, trainerNonce: 0 };
  const enc = (indices: number[], values: number[], quantize1bit = false) =>
    encodePayload({
      ...base,
      params: [{ indices: Uint32Array.from(indices), values: Float32Array.from(values) }],
    }, { layouts, quantize1bit });
  assert.throws(() => enc([1, 1], [0, 0]), /chunk 0: index 1 appears twice/);
  assert.throws(() => enc([1, 4], [0, 0]), /index 4 >= totalk 4/);
  assert.throws(() => enc([1, 2], [0, NaN]), /value NaN/);
  assert.throws(() => enc([1, 2], [0, 3.4e38]), /overflows bf16/);
  assert.throws(() => enc([1, 2], [1, 0.5], true), /1-bit value 0.5/);
  assert.throws(() => enc([1], [1]), /expected 2/);
});

Deno.test("bf16 rounds to nearest even", () => {
  assert.equal(toBf16(1), 0x3f80);
  assert.equal(fromBf16(toBf16(1 + 2 ** -8)), 1); // tie → even
  assert.equal(fromBf16(toBf16(1 + 3 * 2 ** -8)), 1 + 2 ** -6); // tie → even (up)
  assert.equal(fromBf16(toBf16(-2.5)), -2.5);
});

Deno.test("index code: 87 bits for k = 8 in a 64×64 chunk, fewer than Psyche's 128", () => {
  assert.equal(indexCodeBits(8, 4096), 87);
  assert.equal(indexCodeBits(1, 1), 1);
  assert.equal(indexCodeBits(4, 4), 4);
  const l: ChunkLayout = chunkLayout("x", [4096, 4096], { chunk: 64, topk: 8 });
  assert.equal(payloadBytes([l], true), 34 + 25 + Math.ceil((4096 * 87) / 8) + 4096);
});

Deno.test("a verifying run's payloads carry the state digests; other runs refuse them", () => {
  const layouts = [chunkLayout("w", [8, 8], { chunk: 4, topk: 2 })];
  const params = [{
    indices: Uint32Array.from({ length: 8 }, (_, i) => i % 2),
    values: Float32Array.from({ length: 8 }, (_, i) => (i % 3 === 0 ? -1 : 1)),
  }];
  const states = { input: new Uint8Array(32).fill(1), output: new Uint8Array(32).fill(2) };
  const result: DistroResult = {
    step: 4,
    batch: { start: 8, end: 9 },
    trainerNonce: 1,
    params,
    states,
  };
  const verifying: PayloadExpectation = { layouts, quantize1bit: true, stateDigests: true };
  const plain: PayloadExpectation = { layouts, quantize1bit: true };
  const bytes = encodePayload(result, verifying);
  assert.equal(bytes.length, payloadBytes(layouts, true, true));
  assert.equal(bytes.length, payloadBytes(layouts, true) + 64);
  assert.equal(bytes[5], 3, "flags: 1-bit and state digests");
  const back = decodePayload(bytes, verifying);
  assert.deepEqual(back.states, states);
  const refusal = (b: Uint8Array, e: PayloadExpectation) =>
    assert.throws(
      () => decodePayload(b, e),
      (err: unknown) => err instanceof PayloadDecodeError && err.where === "header flags",
    );
  refusal(bytes, plain);
  refusal(encodePayload({ ...result, states: undefined }, plain), verifying);
  assert.throws(() => encodePayload(result, plain), /does not verify results/);
  assert.throws(
    () => encodePayload({ ...result, states: undefined }, verifying),
    /no state digests/,
  );
  assert.throws(
    () => encodePayload({ ...result, states: { ...states, input: new Uint8Array(31) } }, verifying),
    /input state digest must be 32 bytes/,
  );
});
