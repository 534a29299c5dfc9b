/**
 * Helpers for kernel tests: a seeded random source (tests are reproducible), closeness checks
 * that report the worst element, and bf16 operands rounded and encoded as the kernels read them.
 *
 * @module
 */
import { bf16RoundRef, bf16Value } from "../reference/cast.ts";

/** Deterministic uniform floats in `[lo, hi)` from a 32-bit seed (mulberry32). */
export function randomF32(seed: number, length: number, lo = -1, hi = 1): Float32Array {
  let s = seed >>> 0;
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const u = ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    out[i] = lo + (hi - lo) * u;
  }
  return out;
}

/** Deterministic integers in `[0, bound)`. */
export function randomInts(seed: number, length: number, bound: number): Uint32Array {
  const f = randomF32(seed, length, 0, 1);
  return Uint32Array.from(f, (x) => Math.min(bound - 1, Math.floor(x * bound)));
}

/**
 * Throw unless `|got[i] - want[i]| <= tol(i)` for every i < want.length, naming the worst index,
 * both values and the tolerance. `tol` is a number or a per-element bound.
 */
export function assertClose(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  tol: number | ((i: number) => number),
  what: string,
): void {
  if (got.length < want.length) {
    throw new Error(`${what}: got ${got.length} values, expected ${want.length}`);
  }
  let worst = -1, worstRatio = 0;
  for (let i = 0; i < want.length; i++) {
    const t = typeof tol === "number" ? tol : tol(i);
    const d = Math.abs(got[i] - want[i]);
    if (!(d <= t)) {
      const ratio = Number.isNaN(d) ? Infinity : d / t;
      if (worst < 0 || ratio > worstRatio) [worst, worstRatio] = [i, ratio];
    }
  }
  if (worst >= 0) {
    const t = typeof tol === "number" ? tol : tol(worst);
    throw new Error(
      `${what}: element ${worst} is ${got[worst]}, expected ${want[worst]} ± ${t.toExponential(2)}`,
    );
  }
}

/** Unit roundoff of f32 (2⁻²⁴). */
export const F32_EPS = 2 ** -24;

/** bf16 bits of f32 values (round to nearest even), padded to whole u32 words for upload. */
export function bf16Encode(x: Float32Array): Uint16Array {
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  const out = new Uint16Array(x.length + (x.length % 2));
  for (let i = 0; i < x.length; i++) out[i] = bf16RoundRef(bits[i]);
  return out;
}

/** The bf16 value nearest `x` (rounded to f32 first). */
export function bf16Round(x: number): number {
  return bf16Value(bf16RoundRef(new Uint32Array(Float32Array.of(x).buffer)[0]));
}
