/**
 * Plain TypeScript reference of the f32 → bf16 conversion, worked out on values rather than bits
 * so it checks the kernel's bit trick independently: of the two bf16 values around x, the nearer;
 * on a tie the one whose last mantissa bit is 0; past the largest bf16 by half an ulp or more,
 * infinity; NaN stays NaN (the kernel's exact NaN bits are checked separately).
 *
 * @module
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The f32 value of bf16 bits `h`. */
export function bf16Value(h: number): number {
  u32[0] = (h & 0xffff) << 16;
  return f32[0];
}

/** bf16 bits of the f32 whose bits are `bits`, rounded to nearest, ties to even. */
export function bf16RoundRef(bits: number): number {
  u32[0] = bits >>> 0;
  const x = f32[0];
  if (Number.isNaN(x)) return NaN;
  const sign = bits >>> 31 ? 0x8000 : 0;
  const ax = Math.abs(x);
  if (ax === Infinity) return sign | 0x7f80;
  // Candidates below and above |x| among the non-negative bf16 patterns 0 .. 0x7f80 (infinity).
  let lo = 0, hi = 0x7f80;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (bf16Value(mid) <= ax) lo = mid;
    else hi = mid;
  }
  if (bf16Value(lo) === ax) return sign | lo;
  // Past the largest finite bf16, the upper "neighbour" is the next step of the same size.
  const vLo = bf16Value(lo);
  const vHi = hi === 0x7f80 ? vLo + (vLo - bf16Value(lo - 1)) : bf16Value(hi);
  const dLo = ax - vLo, dHi = vHi - ax;
  const pick = dLo < dHi ? lo : dHi < dLo ? hi : (lo & 1) === 0 ? lo : hi;
  return sign | pick;
}
