/**
 * Plain TypeScript references of the elementwise kernels and the sum of squares (f64 sums).
 *
 * @module
 */

/** `a + b` elementwise. */
export function addRef(a: ArrayLike<number>, b: ArrayLike<number>): Float64Array {
  return Float64Array.from({ length: a.length }, (_, i) => a[i] + b[i]);
}

/** `y + alpha·x` elementwise. */
export function axpyRef(x: ArrayLike<number>, y: ArrayLike<number>, alpha: number): Float64Array {
  return Float64Array.from({ length: y.length }, (_, i) => y[i] + alpha * x[i]);
}

/** Σ x² over every array, in f64. */
export function sumsqRef(arrays: readonly ArrayLike<number>[]): number {
  let s = 0;
  for (const a of arrays) for (let i = 0; i < a.length; i++) s += a[i] * a[i];
  return s;
}
