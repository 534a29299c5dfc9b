import assert from "node:assert/strict";
import fc from "fast-check";
import {
  bf16BitsToF32,
  decodeBf16,
  decodeF16,
  encodeBf16,
  encodeF16,
  f16BitsToF32,
  f32Bits,
  f32FromBits,
  f32ToBf16Bits,
  f32ToF16Bits,
} from "./float_codec.ts";

const ALL16 = Uint16Array.from({ length: 65536 }, (_, i) => i);

Deno.test("every bf16 and f16 bit pattern survives a trip through f32", () => {
  assert.deepEqual(encodeBf16(decodeBf16(ALL16)), ALL16);
  assert.deepEqual(encodeF16(decodeF16(ALL16)), ALL16);
});

Deno.test("f16 decode agrees with the platform's Float16 semantics", () => {
  for (let h = 0; h < 65536; h++) {
    const v = f16BitsToF32(h);
    const isNan = (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;
    if (isNan) assert.ok(Number.isNaN(v), `0x${h.toString(16)}`);
    else assert.equal(Math.f16round(v), v, `0x${h.toString(16)}`);
  }
  assert.equal(f16BitsToF32(0x0001), 2 ** -24);
  assert.equal(f16BitsToF32(0x3c00), 1);
  assert.equal(f16BitsToF32(0xfbff), -65504);
  assert.equal(f16BitsToF32(0x7c00), Infinity);
  assert.ok(Object.is(f16BitsToF32(0x8000), -0));
});

Deno.test("f32 → f16 rounds to nearest even like Math.f16round", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 0xffffffff }), (bits) => {
      const x = f32FromBits(bits);
      const got = f16BitsToF32(f32ToF16Bits(x));
      if (Number.isNaN(x)) return Number.isNaN(got);
      return Object.is(got, Math.f16round(x));
    }),
    { numRuns: 200_000 },
  );
  // Ties: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 → even (1); 1 + 3·2^-11 → 1 + 2^-9.
  assert.equal(f16BitsToF32(f32ToF16Bits(1 + 2 ** -11)), 1);
  assert.equal(f16BitsToF32(f32ToF16Bits(1 + 3 * 2 ** -11)), 1 + 2 ** -9);
  assert.equal(f32ToF16Bits(65520), 0x7c00); // halfway past the largest half → inf
  assert.equal(f32ToF16Bits(2 ** -25), 0); // half the smallest subnormal, tie to even 0
  assert.equal(f32ToF16Bits(3 * 2 ** -26), 1);
});

/**
 * Reference bf16 rounding in f64: the nearer of the two bf16 neighbours of x, ties to even.
 * Infinity counts as the value 2^128 (one step past the largest finite bf16) for distances.
 */
function bf16Reference(x: number): number {
  const lo = f32Bits(x) >>> 16; // truncation: the neighbour towards zero
  const hi = lo + 1;
  const value = (h: number) => (h & 0x7fff) === 0x7f80 ? Math.sign(x) * 2 ** 128 : bf16BitsToF32(h);
  const dLo = Math.abs(x - value(lo));
  const dHi = Math.abs(value(hi) - x);
  if (dLo < dHi) return lo;
  if (dHi < dLo) return hi;
  return (lo & 1) === 0 ? lo : hi;
}

Deno.test("f32 → bf16 rounds to nearest even", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 0xffffffff }), (bits) => {
      const x = f32FromBits(bits);
      const got = f32ToBf16Bits(x);
      if (Number.isNaN(x)) return (got & 0x7f80) === 0x7f80 && (got & 0x7f) !== 0;
      return got === bf16Reference(x);
    }),
    { numRuns: 200_000 },
  );
  assert.equal(f32ToBf16Bits(1 + 2 ** -8), 0x3f80); // tie → even
  assert.equal(f32ToBf16Bits(1 + 3 * 2 ** -8), 0x3f82); // tie → even (up)
  assert.equal(f32ToBf16Bits(3.4028234663852886e38), 0x7f80); // max f32 rounds to inf
  assert.equal(f32ToBf16Bits(-Infinity), 0xff80);
  assert.equal(f32ToBf16Bits(f32FromBits(0x7f800001)) & 0x7f, 0x40); // NaN stays NaN
});

Deno.test("f32 → bf16 matches hand-computed vectors (ties, overflow, inf, NaN, zeros)", () => {
  // [f32 bits, bf16 bits]: bf16 keeps the top 16 bits; the low 16 decide the rounding.
  const cases: [number, number][] = [
    [0x3f800000, 0x3f80], // 1.0 exact
    [0x3f807fff, 0x3f80], // just below half an ulp: down
    [0x3f808000, 0x3f80], // exactly half, kept bits even (…80): stays
    [0x3f808001, 0x3f81], // just above half: up
    [0x3f818000, 0x3f82], // exactly half, kept bits odd (…81): up to even
    [0xbfc00000, 0xbfc0], // -1.5 exact
    [0xbf808000, 0xbf80], // -(1 + 2^-8): tie to even, sign kept
    [0x7f7f7fff, 0x7f7f], // below the tie at the largest finite bf16
    [0x7f7f8000, 0x7f80], // tie with odd kept bits: rounds up to +inf
    [0x7f7fffff, 0x7f80], // largest f32 → +inf
    [0x7f800000, 0x7f80], // +inf
    [0xff800000, 0xff80], // -inf
    [0x7fc00000, 0x7fc0], // quiet NaN
    [0x7f800001, 0x7fc0], // NaN whose payload is all in the dropped bits: stays NaN (not inf)
    [0xffffffff, 0xffff], // NaN with every bit set: no carry into the sign
    [0x7fbfffff, 0x7fbf], // signalling NaN keeps its high payload (no rounding up)
    [0x00000000, 0x0000], // +0
    [0x80000000, 0x8000], // -0
    [0x00000001, 0x0000], // smallest subnormal: below half an ulp
    [0x00008000, 0x0000], // subnormal tie, even: stays 0
    [0x00018000, 0x0002], // subnormal tie, odd: up
    [0x0000ffff, 0x0001], // subnormal above half
    [0x807fffff, 0x8080], // largest negative subnormal rounds up to the smallest normal
  ];
  for (const [f32, bf16] of cases) {
    // A JS number cannot carry a signalling NaN (reading it as f64 quiets it): the array path
    // below, which works on the raw bits, covers that case.
    if (f32 === 0x7fbfffff) continue;
    const hex = (x: number) => `0x${x.toString(16).padStart(8, "0")}`;
    assert.equal(f32ToBf16Bits(f32FromBits(f32)), bf16, `${hex(f32)} → ${hex(bf16)}`);
  }
  const input = new Uint32Array(cases.map(([f]) => f));
  assert.deepEqual(
    encodeBf16(new Float32Array(input.buffer)),
    Uint16Array.from(cases, ([, b]) => b),
  );
});
