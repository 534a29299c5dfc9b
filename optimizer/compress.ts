/**
 * Per-chunk top-k selection of DCT coefficients, 1-bit sign quantization and the
 * mean-aggregating scatter that turns peers' sparse results back into dense coefficients.
 *
 * Ranking is by magnitude, read exactly from the f32 bit pattern (`bits & 0x7fffffff`,
 * which orders like |x| and puts NaN above +∞, as `torch.topk` does). Ties go to the
 * lower index. The same key is used by the WGSL kernel, so GPU and reference agree
 * bit for bit on the same input.
 *
 * @module
 */

import type { ChunkLayout } from "./layout.ts";

/**
 * One parameter's sparse result: `k` entries per chunk, chunk-major.
 * Entry `c·k + r` is the rank-`r` coefficient of chunk `c`: its index within the chunk
 * (`0 <= index < totalk`) and its value (signed; ±1 once quantized).
 */
export interface SparseParam {
  /** Shape `[chunks, k]`: coefficient index within its chunk. */
  readonly indices: Uint32Array;
  /** Shape `[chunks, k]`: coefficient value. */
  readonly values: Float32Array;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** Magnitude key of an f32: its bits without the sign (orders like |x|, NaN highest). */
export function magnitudeKey(x: number): number {
  f32[0] = x;
  return u32[0] & 0x7fffffff;
}

/** The f32 sign bit of `x`: true for negative numbers, -0, -∞ and NaNs with the bit set. */
export function signBit(x: number): boolean {
  f32[0] = x;
  return (u32[0] >>> 31) === 1;
}

/**
 * Keeps the `layout.k` largest-magnitude coefficients of every chunk of `coeffs`
 * (chunk-major, from `encode`). Entries come out by rank: larger magnitude first,
 * equal magnitudes by lower index.
 */
export function topk(layout: ChunkLayout, coeffs: Float32Array): SparseParam {
  if (coeffs.length !== layout.size) {
    throw new RangeError(
      `topk "${layout.name}": expected ${layout.size} coefficients, found ${coeffs.length}`,
    );
  }
  const { chunks, totalk, k } = layout;
  const bits = new Uint32Array(coeffs.buffer, coeffs.byteOffset, coeffs.length);
  const indices = new Uint32Array(chunks * k);
  const values = new Float32Array(chunks * k);
  const keys = new Uint32Array(k);
  const idx = new Uint32Array(k);
  for (let c = 0; c < chunks; c++) {
    const base = c * totalk;
    let filled = 0;
    for (let i = 0; i < totalk; i++) {
      const key = bits[base + i] & 0x7fffffff;
      if (filled === k && key <= keys[k - 1]) continue;
      // Insert after every kept entry with key >= this one (they have lower indices).
      let pos = filled === k ? k - 1 : filled++;
      while (pos > 0 && keys[pos - 1] < key) {
        keys[pos] = keys[pos - 1];
        idx[pos] = idx[pos - 1];
        pos--;
      }
      keys[pos] = key;
      idx[pos] = i;
    }
    for (let r = 0; r < k; r++) {
      indices[c * k + r] = idx[r];
      values[c * k + r] = coeffs[base + idx[r]];
    }
  }
  return { indices, values };
}

/**
 * 1-bit quantization of transmitted values: `signBit(v) ? -1 : +1` (so -0 → -1,
 * +0 and +∞ → +1, NaN by its sign bit). Only the copy that is sent is quantized; the
 * sender keeps the unquantized values for its own error feedback.
 */
export function quantizeSigns(values: Float32Array): Float32Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = bits[i] >>> 31 ? -1 : 1;
  return out;
}

/**
 * Dense coefficients from several sparse results of one parameter: a coefficient chosen
 * by several results gets the mean of their values, unchosen ones are 0 (Psyche's
 * `batch_decompress` + `scatter_reduce(mean, include_self=false)`). Sums are f64 in the
 * order given, so pass results in a canonical order when the result must be reproducible.
 */
export function scatterMean(layout: ChunkLayout, results: readonly SparseParam[]): Float32Array {
  const { chunks, totalk, k } = layout;
  const sum = new Float64Array(layout.size);
  const count = new Uint32Array(layout.size);
  for (const [n, r] of results.entries()) {
    if (r.indices.length !== chunks * k || r.values.length !== chunks * k) {
      throw new RangeError(
        `scatterMean "${layout.name}": result ${n} has ${r.indices.length} indices and ` +
          `${r.values.length} values, expected ${chunks * k} each`,
      );
    }
    for (let c = 0; c < chunks; c++) {
      for (let e = c * k; e < (c + 1) * k; e++) {
        const i = r.indices[e];
        if (i >= totalk) {
          throw new RangeError(
            `scatterMean "${layout.name}": result ${n} chunk ${c} index ${i} >= totalk ${totalk}`,
          );
        }
        sum[c * totalk + i] += r.values[e];
        count[c * totalk + i]++;
      }
    }
  }
  const out = new Float32Array(layout.size);
  for (let i = 0; i < out.length; i++) if (count[i] > 0) out[i] = sum[i] / count[i];
  return out;
}
