/**
 * Order statistics for benchmark and run reports: the median of repeated timings and
 * nearest-rank quantiles (p90 round overheads). Every bench reports through these, so two
 * benches' medians mean the same thing.
 *
 * @module
 */

/** The median of a non-empty list (mean of the middle two for an even length). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new RangeError("median of an empty list");
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  if (s.length % 2 === 1) return s[mid] + 0; // + 0: -0 and 0 sort as equals, give one answer
  const [lo, hi] = [s[mid - 1], s[mid]];
  // Halves first: (lo + hi) / 2 overflows near ±MAX_VALUE; the clamp keeps the result between
  // the two when halving a subnormal rounds it away.
  return Math.min(Math.max(lo / 2 + hi / 2, lo), hi) + 0;
}

/**
 * The `q` quantile (0..1) of `values` by the nearest-rank method (the smallest value with at
 * least `q` of the values at or below it). Throws on an empty list or `q` outside 0..1.
 *
 * @example
 * ```ts
 * import { quantile } from "./stats.ts";
 * if (quantile([5, 1, 3, 2, 4], 0.5) !== 3) throw new Error("median");
 * ```
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new RangeError("quantile of no values");
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile must be in 0..1, found ${q}`);
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1];
}
