/**
 * Orthonormal DCT-II on DisTrO's chunks: the blocked transform that turns a momentum
 * tensor into per-chunk frequency coefficients (encode) and back (decode).
 *
 * `C` is the n×n orthonormal DCT-II matrix, `C[u][i] = s_u·cos(π(2i+1)u / 2n)` with
 * `s_0 = √(1/n)`, `s_u = √(2/n)`. Psyche's forward basis is `F = Cᵀ` and its inverse
 * basis `B = C`. A 2-D chunk `X` (n1×n2) encodes to `C₁ X C₂ᵀ` and decodes with
 * `C₁ᵀ Y C₂`; a 1-D chunk `x` encodes to `C x`. Arithmetic is f64, storage f32.
 *
 * @module
 */

import type { ChunkLayout } from "./layout.ts";

const basisCache = new Map<number, Float64Array>();

/**
 * The orthonormal DCT-II matrix of size `n`, row-major (`C[u·n + i]`), cached per size.
 * The returned array is shared: do not modify it.
 *
 * @example
 * ```ts
 * import { dctMatrix } from "./dct.ts";
 * const c = dctMatrix(4);
 * console.assert(Math.abs(c[4] - 0.6533) < 1e-4); // C[1][0]: first row of F = Cᵀ
 * ```
 */
export function dctMatrix(n: number): Float64Array {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`dctMatrix: bad size ${n}`);
  let c = basisCache.get(n);
  if (c) return c;
  c = new Float64Array(n * n);
  for (let u = 0; u < n; u++) {
    const s = u === 0 ? Math.sqrt(1 / n) : Math.sqrt(2 / n);
    for (let i = 0; i < n; i++) c[u * n + i] = s * Math.cos((Math.PI * (2 * i + 1) * u) / (2 * n));
  }
  basisCache.set(n, c);
  return c;
}

function checkLength(what: string, layout: ChunkLayout, found: number): void {
  if (found !== layout.size) {
    throw new RangeError(
      `${what} "${layout.name}": expected ${layout.size} elements (shape [${layout.shape}]), ` +
        `found ${found}`,
    );
  }
}

/**
 * Blocked DCT of a parameter-shaped tensor `x` (row-major, `layout.shape`) into
 * chunk-major coefficients (`layout.chunks × layout.totalk`).
 */
export function encode(layout: ChunkLayout, x: Float32Array): Float32Array {
  checkLength("encode", layout, x.length);
  const { n1, n2, colChunks, chunks, totalk } = layout;
  const b = layout.shape.length === 2 ? layout.shape[1] : 1;
  const c1 = dctMatrix(n1);
  const c2 = dctMatrix(n2);
  const out = new Float32Array(layout.size);
  const t = new Float64Array(totalk); // T[u][j] = Σ_i C1[u][i] X[i][j]
  for (let c = 0; c < chunks; c++) {
    const r0 = Math.floor(c / colChunks) * n1;
    const q0 = (c % colChunks) * n2;
    t.fill(0);
    for (let i = 0; i < n1; i++) {
      const row = (r0 + i) * b + q0;
      for (let u = 0; u < n1; u++) {
        const w = c1[u * n1 + i];
        for (let j = 0; j < n2; j++) t[u * n2 + j] += w * x[row + j];
      }
    }
    for (let u = 0; u < n1; u++) {
      for (let v = 0; v < n2; v++) {
        let s = 0;
        for (let j = 0; j < n2; j++) s += t[u * n2 + j] * c2[v * n2 + j];
        out[c * totalk + u * n2 + v] = s;
      }
    }
  }
  return out;
}

/**
 * Inverse of {@link encode}: chunk-major coefficients back to a parameter-shaped tensor.
 */
export function decode(layout: ChunkLayout, y: Float32Array): Float32Array {
  checkLength("decode", layout, y.length);
  const { n1, n2, colChunks, chunks, totalk } = layout;
  const b = layout.shape.length === 2 ? layout.shape[1] : 1;
  const c1 = dctMatrix(n1);
  const c2 = dctMatrix(n2);
  const out = new Float32Array(layout.size);
  const t = new Float64Array(totalk); // T[i][v] = Σ_u C1[u][i] Y[u][v]
  for (let c = 0; c < chunks; c++) {
    const r0 = Math.floor(c / colChunks) * n1;
    const q0 = (c % colChunks) * n2;
    t.fill(0);
    for (let u = 0; u < n1; u++) {
      for (let i = 0; i < n1; i++) {
        const w = c1[u * n1 + i];
        for (let v = 0; v < n2; v++) t[i * n2 + v] += w * y[c * totalk + u * n2 + v];
      }
    }
    for (let i = 0; i < n1; i++) {
      const row = (r0 + i) * b + q0;
      for (let j = 0; j < n2; j++) {
        let s = 0;
        for (let v = 0; v < n2; v++) s += t[i * n2 + v] * c2[v * n2 + j];
        out[row + j] = s;
      }
    }
  }
  return out;
}
