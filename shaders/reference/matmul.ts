/**
 * Plain TypeScript matmul, the reference the WGSL kernels are tested against: f64 accumulation,
 * same layouts, scale, accumulation and batching as {@link ../matmul.ts}.
 *
 * @module
 */

/** Layout names, as in the kernel. */
export type RefLayout = "nn" | "nt" | "tn";

/** Options of {@link matmulRef}. */
export interface MatmulRefOptions {
  readonly m: number;
  readonly n: number;
  readonly k: number;
  readonly layout?: RefLayout;
  readonly alpha?: number;
  readonly batch?: number;
  readonly strideA?: number;
  readonly strideB?: number;
  readonly strideC?: number;
  /** When given, the result is added to a copy of it (gradient accumulation). */
  readonly accumulateInto?: ArrayLike<number>;
}

/**
 * `c = alpha·op(a)·op(b) (+ accumulateInto)` with f64 sums; returns C (`batch·strideC` long).
 *
 * @example
 * ```ts
 * import { matmulRef } from "./matmul.ts";
 * const c = matmulRef([1, 2, 3, 4], [1, 0, 0, 1], { m: 2, n: 2, k: 2, layout: "nt" });
 * if (c[1] !== 2) throw new Error();
 * ```
 */
export function matmulRef(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  o: MatmulRefOptions,
): Float64Array {
  const { m, n, k } = o;
  const layout = o.layout ?? "nn";
  const batch = o.batch ?? 1;
  const sa = o.strideA ?? m * k, sb = o.strideB ?? k * n, sc = o.strideC ?? m * n;
  const alpha = o.alpha ?? 1;
  const c = new Float64Array((batch - 1) * sc + m * n);
  if (o.accumulateInto) { for (let i = 0; i < c.length; i++) c[i] = o.accumulateInto[i]; }
  for (let z = 0; z < batch; z++) {
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let p = 0; p < k; p++) {
          const av = layout === "tn" ? a[z * sa + p * m + i] : a[z * sa + i * k + p];
          const bv = layout === "nt" ? b[z * sb + j * k + p] : b[z * sb + p * n + j];
          s += av * bv;
        }
        c[z * sc + i * n + j] += alpha * s;
      }
    }
  }
  return c;
}

/**
 * The fastest plain-TypeScript f32 matmul we know for `C = A·Bᵀ` (B stored `[n, k]`): four
 * independent accumulators over contiguous rows. Benchmarks compare the GPU kernels against it.
 */
export function matmulNtF32(
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  m: number,
  n: number,
  k: number,
): void {
  for (let i = 0; i < m; i++) {
    const ao = i * k;
    for (let j = 0; j < n; j++) {
      const bo = j * k;
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      let p = 0;
      for (; p + 3 < k; p += 4) {
        s0 += a[ao + p] * b[bo + p];
        s1 += a[ao + p + 1] * b[bo + p + 1];
        s2 += a[ao + p + 2] * b[bo + p + 2];
        s3 += a[ao + p + 3] * b[bo + p + 3];
      }
      for (; p < k; p++) s0 += a[ao + p] * b[bo + p];
      c[i * n + j] = s0 + s1 + s2 + s3;
    }
  }
}
