import assert from "node:assert/strict";
import { CastBf16, CastF16 } from "./cast.ts";
import { GpuRuntime } from "./gpu.ts";
import { bf16RoundRef } from "./reference/cast.ts";
import { randomF32 } from "./testing/kernels.ts";

/** Spacing of f16 values around |x| (subnormal spacing 2⁻²⁴ below 2⁻¹⁴). */
function f16Ulp(x: number): number {
  const a = Math.abs(x);
  return a < 2 ** -14 ? 2 ** -24 : 2 ** (Math.floor(Math.log2(a)) - 10);
}

Deno.test("f32 to f16 conversion rounds to a neighbouring half, odd lengths included", async () => {
  using rt = await GpuRuntime.create();
  for (const [n, items] of [[1, 1], [7, 16], [1001, 16], [4096, 1]]) {
    const cast = new CastF16(rt, 64, items);
    const x = randomF32(n, n, -70, 70);
    x[0] = 1 + 2 ** -11; // a tie: either neighbour is allowed
    if (n > 3) x[3] = 3e-6; // subnormal in f16
    const gx = rt.buffer("x", x), out = rt.buffer("out", CastF16.bytes(n));
    const step = rt.beginStep("cast");
    cast.encode(step.pass, { x: gx, out, n });
    await step.submit();
    const got = new Float16Array(await rt.readBytes(out)).subarray(0, n);
    for (let i = 0; i < n; i++) {
      const err = Math.abs(got[i] - x[i]);
      assert.ok(err <= f16Ulp(x[i]), `n=${n} element ${i}: ${x[i]} became ${got[i]}`);
      if (err > f16Ulp(x[i]) / 2) assert.equal(i, 0, `only the tie may round away at ${i}`);
    }
  }
});

Deno.test("f16 conversion refuses a short output", async () => {
  using rt = await GpuRuntime.create();
  const cast = new CastF16(rt);
  using step = rt.beginStep("bad");
  assert.throws(
    () => cast.encode(step.pass, { x: rt.buffer("x", 40), out: rt.buffer("o", 16), n: 10 }),
    /cast to f16: binding "out" \(f16\) holds 8 elements, needs \[n\] = 10/,
  );
});

/** f32 bit patterns at the edges of bf16 rounding, with what each one tests. */
const BF16_EDGES: [number, string][] = [
  [0x3f800000, "1 (exact)"],
  [0x3f808000, "1 + 2⁻⁸: tie, down to the even 1"],
  [0x3f818000, "1 + 3·2⁻⁸: tie, up to the even 1 + 2⁻⁶"],
  [0x3f808001, "just above a tie: up"],
  [0x3f807fff, "just below a tie: down"],
  [0xbf818000, "negative tie: up in magnitude"],
  [0x3f80ffff, "rounds up into the next exponent"],
  [0x00000000, "+0"],
  [0x80000000, "-0"],
  [0x00000001, "smallest subnormal: to +0"],
  [0x00008000, "subnormal tie: down to even 0"],
  [0x00018000, "subnormal tie: up to even 2"],
  [0x00012345, "subnormal, kept subnormal"],
  [0x807fffff, "largest negative subnormal: up to -2⁻¹²⁶"],
  [0x7f7f7fff, "largest f32 below the bf16 overflow tie: largest bf16"],
  [0x7f7f8000, "overflow tie: to +inf (even)"],
  [0x7f7fffff, "largest f32: to +inf"],
  [0xff7fffff, "most negative f32: to -inf"],
  [0x7f800000, "+inf"],
  [0xff800000, "-inf"],
];

/** NaN bit patterns and the bf16 the conversion keeps: sign and top payload, never infinity. */
const BF16_NANS: [number, number][] = [
  [0x7fc00000, 0x7fc0], // the quiet NaN
  [0xffc00000, 0xffc0], // negative
  [0x7f812345, 0x7f81], // signalling, payload in the top half
  [0x7f800001, 0x7fc0], // payload only in the bottom half: top half alone is +inf
  [0xff80ffff, 0xffc0], // the same with a sign, and a carry that would reach the exponent
  [0x7fffffff, 0x7fff], // all ones: rounding would carry out
];

async function castBf16(rt: GpuRuntime, bits: Uint32Array, items = 1): Promise<Uint16Array> {
  const n = bits.length;
  const cast = new CastBf16(rt, 64, items);
  const gx = rt.buffer("x", bits), out = rt.buffer("out", CastBf16.bytes(n));
  const step = rt.beginStep("cast bf16");
  cast.encode(step.pass, { x: gx, out, n });
  await step.submit();
  const got = new Uint16Array(await rt.readBytes(out)).slice(0, n);
  rt.destroyBuffer(gx);
  rt.destroyBuffer(out);
  return got;
}

const hex = (x: number) => `0x${x.toString(16).padStart(8, "0")}`;

Deno.test("f32 to bf16 rounds to nearest even: ties, overflow, subnormals, signed zeros", async () => {
  using rt = await GpuRuntime.create();
  const bits = Uint32Array.from(BF16_EDGES, ([b]) => b);
  const got = await castBf16(rt, bits);
  for (const [i, [b, why]] of BF16_EDGES.entries()) {
    assert.equal(got[i], bf16RoundRef(b), `${hex(b)} (${why}): got 0x${got[i].toString(16)}`);
  }
});

Deno.test("f32 to bf16 keeps NaN a NaN, with its sign and high payload", async () => {
  using rt = await GpuRuntime.create();
  const got = await castBf16(rt, Uint32Array.from(BF16_NANS, ([b]) => b));
  for (const [i, [b, want]] of BF16_NANS.entries()) {
    assert.equal(got[i], want, `${hex(b)}: got 0x${got[i].toString(16)}`);
  }
});

Deno.test("f32 to bf16 matches the reference on random bits and odd lengths", async () => {
  using rt = await GpuRuntime.create();
  for (const [n, items] of [[1, 1], [7, 16], [1001, 16], [4096, 1]]) {
    // Random patterns over the whole f32 range (NaNs included), and typical values.
    const bits = new Uint32Array(n);
    const f = randomF32(n, n, -70, 70);
    const fBits = new Uint32Array(f.buffer);
    let s = n * 2654435761;
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      bits[i] = i % 2 === 0 ? s : fBits[i];
    }
    const got = await castBf16(rt, bits, items);
    for (let i = 0; i < n; i++) {
      const want = bf16RoundRef(bits[i]);
      const nan = (got[i] & 0x7f80) === 0x7f80 && (got[i] & 0x7f) !== 0;
      if (Number.isNaN(want)) assert.ok(nan, `n=${n} ${hex(bits[i])}: NaN became ${got[i]}`);
      else assert.equal(got[i], want, `n=${n} element ${i}: ${hex(bits[i])}`);
    }
  }
});

Deno.test("bf16 conversion refuses a short output", async () => {
  using rt = await GpuRuntime.create();
  const cast = new CastBf16(rt);
  using step = rt.beginStep("bad");
  assert.throws(
    () => cast.encode(step.pass, { x: rt.buffer("x", 40), out: rt.buffer("o", 16), n: 10 }),
    /cast to bf16: binding "out" \(bf16\) holds 8 elements, needs \[n\] = 10/,
  );
});
