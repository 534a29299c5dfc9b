/**
 * Plain TypeScript reference (f64) of `../kv_cache.ts`: the new tokens' queries and keys rotated
 * at their own positions (`start + token`) by `./rope.ts`'s independent angles, and the cache rows
 * they fill.
 *
 * @module
 */
import { ropeRef } from "./rope.ts";
import type { RopeFrequencies } from "../rope.ts";

/** Rotates `x [n, heads, D]` as tokens at positions `start..start+n−1`; returns a copy. */
export function ropeAtRef(
  x: ArrayLike<number>,
  o: { n: number; start: number; heads: number; d: number; rope: RopeFrequencies },
): Float64Array {
  const { n, start, heads, d, rope } = o;
  // ropeRef rotates token j by position j: put the tokens after `start` unused ones.
  const padded = new Float64Array((start + n) * heads * d);
  padded.set(Array.from(x).slice(0, n * heads * d), start * heads * d);
  const t = start + n;
  return ropeRef(padded, { n: t, t, heads, d, rope }).slice(start * heads * d);
}

/**
 * The append: rotated queries `[n, H, D]`, and the caches `[S, KVH, D]` given as `kCache` and
 * `vCache` with rows `start..start+n−1` replaced by the rotated keys and the values.
 */
export function kvCacheAppendRef(
  io: {
    q: ArrayLike<number>;
    k: ArrayLike<number>;
    v: ArrayLike<number>;
    kCache: ArrayLike<number>;
    vCache: ArrayLike<number>;
  },
  o: { n: number; start: number; h: number; kvh: number; d: number; rope: RopeFrequencies },
): { q: Float64Array; kCache: Float64Array; vCache: Float64Array } {
  const { n, start, h, kvh, d, rope } = o;
  const q = ropeAtRef(io.q, { n, start, heads: h, d, rope });
  const k = ropeAtRef(io.k, { n, start, heads: kvh, d, rope });
  const kCache = Float64Array.from(io.kCache), vCache = Float64Array.from(io.vCache);
  const row = kvh * d;
  kCache.set(k, start * row);
  vCache.set(Array.from(io.v).slice(0, n * row), start * row);
  return { q, kCache, vCache };
}
