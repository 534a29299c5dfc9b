import assert from "node:assert/strict";
import { GpuRuntime } from "./gpu.ts";
import { RoundBf16 } from "./round_bf16.ts";
import { decodeBf16, encodeBf16 } from "../model/mod.ts";

/** f32 bit patterns at the edges of bf16 rounding (as cast_test.ts), NaNs included. */
const EDGES = [
  0x3f800000, // 1 (exact)
  0x3f808000, // tie, down to the even 1
  0x3f818000, // tie, up to the even 1 + 2⁻⁶
  0x3f808001, // just above a tie
  0x3f807fff, // just below a tie
  0xbf818000, // negative tie
  0x3f80ffff, // rounds up into the next exponent
  0x00000000, // +0
  0x80000000, // -0
  0x00000001, // smallest subnormal: to +0
  0x00008000, // subnormal tie: down to even 0
  0x00018000, // subnormal tie: up to even
  0x00012345, // subnormal, kept subnormal
  0x807fffff, // largest negative subnormal: up to -2⁻¹²⁶
  0x7f7f7fff, // largest bf16
  0x7f7f8000, // overflow tie: +inf
  0x7f7fffff, // largest f32: +inf
  0xff7fffff, // most negative f32: -inf
  0x7f800000, // +inf
  0xff800000, // -inf
  0x7fc00000, // quiet NaN
  0xffc00000, // negative NaN
  0x7f812345, // signalling NaN, payload in the top half
  0x7f800001, // NaN with its payload only in the bottom half
  0xff80ffff, // the same with a sign and a carry that would reach the exponent
  0x7fffffff, // all ones
];

/** Rounds `bits` in place on the GPU at byte `offset` of a larger buffer; returns all words. */
async function roundOnGpu(
  rt: GpuRuntime,
  bits: Uint32Array,
  options: { items?: number; before?: number; after?: number } = {},
): Promise<Uint32Array> {
  const { items = 1, before = 0, after = 0 } = options;
  const all = new Uint32Array(before + bits.length + after).fill(0x3f808001);
  all.set(bits, before);
  const x = rt.buffer("x", all);
  const step = rt.beginStep("round bf16");
  new RoundBf16(rt, 64, items).encode(step.pass, {
    x: { buffer: x, offset: before * 4, size: bits.length * 4 },
    n: bits.length,
  });
  await step.submit();
  const got = new Uint32Array(await rt.readBytes(x)).slice(0, all.length);
  rt.destroyBuffer(x);
  return got;
}

/** float_codec's bf16 round trip, bit for bit (what a joiner expands a bf16 blob to). */
function codecRoundTrip(bits: Uint32Array): Uint32Array {
  const values = new Float32Array(bits.slice().buffer);
  return new Uint32Array(decodeBf16(encodeBf16(values)).buffer);
}

const hex = (x: number) => `0x${x.toString(16).padStart(8, "0")}`;

Deno.test("round to bf16 in place equals float_codec's bf16 round trip bit for bit at the edges", async () => {
  using rt = await GpuRuntime.create();
  const bits = Uint32Array.from(EDGES);
  const got = await roundOnGpu(rt, bits);
  const want = codecRoundTrip(bits);
  for (let i = 0; i < bits.length; i++) {
    assert.equal(hex(got[i]), hex(want[i]), `${hex(bits[i])}`);
    assert.equal(got[i] & 0xffff, 0, `${hex(bits[i])} keeps low bits`);
  }
});

Deno.test("round to bf16 matches float_codec on random bits, touches only its range, is idempotent", async () => {
  using rt = await GpuRuntime.create();
  for (const [n, items] of [[1, 1], [7, 16], [1001, 4], [4096, 1]]) {
    const bits = new Uint32Array(n);
    let s = n * 2654435761;
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      // Half raw patterns over the whole range (NaNs, subnormals), half typical weights.
      bits[i] = i % 2 === 0
        ? s
        : new Uint32Array(Float32Array.of((s / 2 ** 32 - 0.5) / 8).buffer)[0];
    }
    // The view starts 256 bytes in (the storage offset alignment), as a segment's range does.
    const got = await roundOnGpu(rt, bits, { items, before: 64, after: 5 });
    const want = codecRoundTrip(bits);
    for (let i = 0; i < n; i++) {
      assert.equal(got[64 + i], want[i], `n=${n} element ${i}: ${hex(bits[i])}`);
    }
    for (const i of [0, 63, n + 64, n + 68]) {
      assert.equal(got[i], 0x3f808001, `n=${n}: word ${i} outside the view changed`);
    }
    const rounded = got.slice(64, 64 + n);
    assert.deepEqual(await roundOnGpu(rt, rounded, { items }), rounded, `n=${n}: idempotent`);
  }
});

Deno.test("round to bf16 refuses a view shorter than n", async () => {
  using rt = await GpuRuntime.create();
  using step = rt.beginStep("bad");
  assert.throws(
    () => new RoundBf16(rt).encode(step.pass, { x: rt.buffer("x", 16), n: 5 }),
    /round to bf16: binding "x" holds 4 elements, needs \[n\] = 5/,
  );
});
