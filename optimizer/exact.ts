/**
 * Exact, adapter-independent aggregation and sign decision for DisTrO's update.
 *
 * The applied update is `θ -= lr·sign(x)`, `x = decode(mean of peers' coefficients)`.
 * Evaluated in floats, `sign(x)` near zero depends on summation order, FMA contraction
 * and the adapter's rounding, so honest clients could disagree. Here the protocol
 * defines `x` in integers instead:
 *
 * - per chunk, each chosen coefficient's mean `m` (f64, peers in canonical order) is
 *   scaled by `M`, the smallest power of two >= the chunk's largest |m|, and rounded
 *   (half away from zero) to `q = round(m/M · 2^15)`, so `|q| <= 2^15`;
 * - the DCT basis is a fixed-point table `Q[u][i] = round(C[u][i] · 2^14)`; the f64
 *   values are checked to lie >= 1e-9 from a rounding boundary, so any libm whose cos
 *   is within 1e-12 yields the same table;
 * - `X[i][j] = Σ q · Q₁[u][i] · Q₂[v][j]` over the chunk's chosen `(u, v)` is an integer
 *   with `|X| < 2^51.01` for chunks up to 256 (see docs/protocol.md), so it is exact in
 *   f64 (< 2^53) in any order and exact in the WGSL kernel's 64-bit integer emulation.
 *
 * `sign(X)` is therefore identical on every adapter and for every arrival order.
 *
 * @module
 */

import type { SparseParam } from "./compress.ts";
import { dctMatrix } from "./dct.ts";
import type { ChunkLayout } from "./layout.ts";

/** Fractional bits of the fixed-point DCT basis table. */
export const BASIS_BITS = 14;
/** Fractional bits of an aggregated coefficient relative to its chunk's scale. */
export const COEFF_BITS = 15;
/** Minimum distance of a basis value from a rounding boundary (in units of 2^-14). */
export const BASIS_ROUNDING_MARGIN = 1e-9;

const fixedCache = new Map<number, Int32Array>();

/**
 * The fixed-point DCT basis `Q[u·n + i] = round(C[u][i] · 2^14)` for size `n`, cached.
 * Throws if a value lies within {@link BASIS_ROUNDING_MARGIN} of a rounding boundary
 * (the table would then depend on the last bit of `Math.cos`); never happens for n <= 256.
 */
export function fixedBasis(n: number): Int32Array {
  let q = fixedCache.get(n);
  if (q) return q;
  const c = dctMatrix(n);
  q = new Int32Array(n * n);
  for (let i = 0; i < c.length; i++) {
    const scaled = c[i] * 2 ** BASIS_BITS;
    const frac = Math.abs(scaled - Math.trunc(scaled));
    if (Math.abs(frac - 0.5) < BASIS_ROUNDING_MARGIN) {
      throw new RangeError(`fixedBasis(${n}): entry ${i} = ${scaled} is too close to a tie`);
    }
    q[i] = Math.sign(scaled) * Math.round(Math.abs(scaled));
  }
  fixedCache.set(n, q);
  return q;
}

/**
 * One parameter's aggregated update in fixed point, as a per-chunk sparse list (CSR).
 * Chunk `c` owns entries `[offsets[c], offsets[c+1])`, ascending by index.
 */
export interface AggregatedParam {
  /** Shape `[chunks + 1]`: entry range of each chunk. */
  readonly offsets: Uint32Array;
  /** Shape `[entries]`: coefficient index within its chunk (`u·n2 + v`). */
  readonly indices: Uint32Array;
  /** Shape `[entries]`: `round(mean/M · 2^15)`, nonzero, `|q| <= 2^15`. */
  readonly coeffs: Int32Array;
  /** Shape `[chunks]`: the chunk's scale exponent `e` (`M = 2^e`), 0 for empty chunks. */
  readonly scaleExp: Int32Array;
}

const bitsView = new DataView(new ArrayBuffer(8));

/** Exponent `e` of the smallest power of two >= `x` (finite, > 0), read from the bits. */
export function ceilLog2(x: number): number {
  if (!(x > 0) || !Number.isFinite(x)) throw new RangeError(`ceilLog2: bad input ${x}`);
  bitsView.setFloat64(0, x); // big-endian view: independent of the host's byte order
  const hi = bitsView.getUint32(0);
  const biased = (hi >>> 20) & 0x7ff;
  if (biased === 0) return ceilLog2(x * 2 ** 64) - 64; // subnormal
  const exact = (hi & 0xfffff) === 0 && bitsView.getUint32(4) === 0;
  return biased - 1023 + (exact ? 0 : 1);
}

/**
 * Fixed-point aggregation of several results for one parameter. Coefficients chosen by
 * several results get the mean of their values (f64 sums in the order given: sort the
 * results canonically first). Throws `RangeError` on malformed results or non-finite values.
 */
export function aggregateFixed(
  layout: ChunkLayout,
  results: readonly SparseParam[],
): AggregatedParam {
  const { chunks, totalk, k } = layout;
  for (const [n, r] of results.entries()) {
    if (r.indices.length !== chunks * k || r.values.length !== chunks * k) {
      throw new RangeError(
        `aggregate "${layout.name}": result ${n} has ${r.indices.length} indices and ` +
          `${r.values.length} values, expected ${chunks * k} each`,
      );
    }
  }
  const most = Math.min(totalk, k * results.length);
  const work: Aggregation = {
    layout,
    indices: results.map((r) => r.indices),
    values: results.map((r) => r.values),
    sum: new Float64Array(totalk),
    count: new Uint32Array(totalk),
    chosen: new Int32Array(Math.ceil(totalk / 32)),
    chosenWords: new Int32Array(Math.ceil(totalk / 1024)),
    touched: new Uint32Array(most),
    mean: new Float64Array(most),
    outIdx: new Uint32Array(chunks * most),
    outQ: new Int32Array(chunks * most),
    scaleExp: new Int32Array(chunks),
  };
  const offsets = new Uint32Array(chunks + 1);
  let out = 0;
  for (let c = 0; c < chunks; c++) {
    out = aggregateChunk(work, c, out);
    offsets[c + 1] = out;
  }
  const { outIdx, outQ, scaleExp } = work;
  return {
    offsets,
    indices: outIdx.slice(0, out),
    coeffs: outQ.slice(0, out),
    scaleExp,
  };
}

/** One parameter's aggregation: its results, scratch shared by its chunks, and its output. */
interface Aggregation {
  readonly layout: ChunkLayout;
  /** Per result, its indices and values (pulled out of the result objects once). */
  readonly indices: readonly Uint32Array[];
  readonly values: readonly Float32Array[];
  /** Shape `[totalk]`: per coefficient, the sum of its values so far and their count. */
  readonly sum: Float64Array;
  readonly count: Uint32Array;
  /**
   * The coefficients the chunk's results chose, as bits: one per coefficient, and one per
   * word of those, so they come out ascending in time proportional to their number.
   */
  readonly chosen: Int32Array;
  readonly chosenWords: Int32Array;
  /** The chunk's chosen coefficients, ascending, and their means. */
  readonly touched: Uint32Array;
  readonly mean: Float64Array;
  readonly outIdx: Uint32Array;
  readonly outQ: Int32Array;
  readonly scaleExp: Int32Array;
}

/**
 * Aggregates chunk `c` into `work`'s output from entry `out` on; returns the entry after its
 * last. A function of its own, called per chunk, so V8 optimizes it as a whole early on
 * rather than replacing a long loop's frame mid-call (which deoptimized at every call's end).
 */
function aggregateChunk(work: Aggregation, c: number, out: number): number {
  const { layout, sum, count, chosen, chosenWords, touched, mean } = work;
  const { totalk, k } = layout;
  for (let r = 0; r < work.indices.length; r++) {
    const indices = work.indices[r], values = work.values[r];
    for (let e = c * k; e < (c + 1) * k; e++) {
      const i = indices[e];
      const v = values[e];
      if (i >= totalk) {
        throw new RangeError(
          `aggregate "${layout.name}": result ${r} chunk ${c} index ${i} >= totalk ${totalk}`,
        );
      }
      if (!Number.isFinite(v)) {
        throw new RangeError(`aggregate "${layout.name}": result ${r} chunk ${c} value ${v}`);
      }
      chosen[i >>> 5] |= 1 << (i & 31);
      chosenWords[i >>> 10] |= 1 << ((i >>> 5) & 31);
      sum[i] += v;
      count[i]++;
    }
  }
  // Lowest set bit first, clearing the bits for the next chunk.
  let n = 0;
  for (let s = 0; s < chosenWords.length; s++) {
    let words = chosenWords[s];
    chosenWords[s] = 0;
    while (words !== 0) {
      const word = 32 * s + 31 - Math.clz32(words & -words);
      words &= words - 1;
      let bits = chosen[word];
      chosen[word] = 0;
      while (bits !== 0) {
        touched[n++] = 32 * word + 31 - Math.clz32(bits & -bits);
        bits &= bits - 1;
      }
    }
  }
  let max = 0;
  for (let t = 0; t < n; t++) {
    const i = touched[t];
    mean[t] = sum[i] / count[i];
    max = Math.max(max, Math.abs(mean[t]));
    sum[i] = 0; // ready for the next chunk
    count[i] = 0;
  }
  if (max === 0) return out;
  const e = ceilLog2(max);
  work.scaleExp[c] = e;
  // mean / 2^e · 2^15 as one exact power-of-two product (2^(15-e) is a normal f64 for
  // every finite f32 mean, so no step rounds or leaves the normal range).
  const unit = 2 ** (COEFF_BITS - e);
  const { outIdx, outQ } = work;
  for (let t = 0; t < n; t++) {
    const v = mean[t] * unit;
    // Rounded half away from zero: Math.round rounds halves up, so a negative half is
    // moved down (q − v is exact: q is within a half of v). No branch on v's sign.
    let q = Math.round(v);
    if (q - v === 0.5 && v < 0) q -= 1;
    if (q !== 0) {
      outIdx[out] = touched[t];
      outQ[out++] = q;
    }
  }
  return out;
}

/**
 * The exact integer decode `X[i][j] = Σ q·Q₁[u][i]·Q₂[v][j]` of an aggregated parameter,
 * parameter-shaped (row-major). Every value is an integer below 2^52 in magnitude, exact in f64.
 */
export function decodeFixed(layout: ChunkLayout, agg: AggregatedParam): Float64Array {
  const { n1, n2, colChunks, chunks } = layout;
  const b = layout.shape.length === 2 ? layout.shape[1] : 1;
  const q1 = fixedBasis(n1);
  const q2 = fixedBasis(n2);
  const out = new Float64Array(layout.size);
  for (let c = 0; c < chunks; c++) {
    const r0 = Math.floor(c / colChunks) * n1;
    const c0 = (c % colChunks) * n2;
    for (let e = agg.offsets[c]; e < agg.offsets[c + 1]; e++) {
      const u = Math.floor(agg.indices[e] / n2);
      const v = agg.indices[e] % n2;
      const q = agg.coeffs[e];
      for (let i = 0; i < n1; i++) {
        const w = q * q1[u * n1 + i];
        const row = (r0 + i) * b + c0;
        for (let j = 0; j < n2; j++) out[row + j] += w * q2[v * n2 + j];
      }
    }
  }
  return out;
}

/** `sign(X)` per element (-1, 0 or +1) of the exact decode: the update's direction. */
export function updateSigns(layout: ChunkLayout, agg: AggregatedParam): Int8Array {
  const x = decodeFixed(layout, agg);
  const out = new Int8Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = Math.sign(x[i]);
  return out;
}

/**
 * The real value the fixed-point decode approximates: `X · M / 2^(15+28)` per element, with
 * `X = decodeFixed(layout, agg)` and `M` each chunk's scale (tests, diagnostics).
 */
export function dequantize(layout: ChunkLayout, agg: AggregatedParam): Float64Array {
  const x = decodeFixed(layout, agg);
  const out = new Float64Array(x.length);
  const b = layout.shape.length === 2 ? layout.shape[1] : 1;
  const unit = 2 ** -(COEFF_BITS + 2 * BASIS_BITS);
  for (let idx = 0; idx < x.length; idx++) {
    const r = Math.floor(idx / b), col = idx % b;
    const c = Math.floor(r / layout.n1) * layout.colChunks + Math.floor(col / layout.n2);
    out[idx] = x[idx] * unit * 2 ** agg.scaleExp[c];
  }
  return out;
}

/**
 * Bound on `|dequantized − exact real decode|` at one element of a chunk with `entries`
 * aggregated coefficients and scale `2^e`. Where the real decode exceeds this in
 * magnitude, the exact integer sign equals the real sign.
 */
export function fixedErrorBound(entries: number, e: number): number {
  // Per entry, with a = m/M (|a| <= 1), â = q/2^15, ĉ = Q/2^14 and |c|, |ĉ| <= 1:
  // |â ĉ₁ ĉ₂ − a c₁ c₂| <= |â − a| + |ĉ₁ − c₁| + |ĉ₂ − c₂| <= 2^-16 + 2·2^-15.
  return entries * (2 ** -16 + 2 ** -14) * 2 ** e;
}
