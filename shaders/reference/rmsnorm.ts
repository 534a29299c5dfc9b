/**
 * Plain TypeScript RMSNorm forward and backward (f64), the reference of `../rmsnorm.ts`.
 *
 * @module
 */

/** Forward: returns `y [N, C]` and `rstd [N]`. */
export function rmsnormForwardRef(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  n: number,
  c: number,
  eps: number,
): { y: Float64Array; rstd: Float64Array } {
  const y = new Float64Array(n * c), rstd = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    let ss = 0;
    for (let j = 0; j < c; j++) ss += x[r * c + j] ** 2;
    rstd[r] = 1 / Math.sqrt(ss / c + eps);
    for (let j = 0; j < c; j++) y[r * c + j] = x[r * c + j] * rstd[r] * w[j];
  }
  return { y, rstd };
}

/** Backward: returns `dx [N, C]` and `dw [C]` (not accumulated). */
export function rmsnormBackwardRef(
  x: ArrayLike<number>,
  w: ArrayLike<number>,
  dy: ArrayLike<number>,
  n: number,
  c: number,
  eps: number,
): { dx: Float64Array; dw: Float64Array } {
  const { rstd } = rmsnormForwardRef(x, w, n, c, eps);
  const dx = new Float64Array(n * c), dw = new Float64Array(c);
  for (let r = 0; r < n; r++) {
    let dot = 0;
    for (let j = 0; j < c; j++) dot += dy[r * c + j] * w[j] * x[r * c + j];
    const k = rstd[r] ** 3 * dot / c;
    for (let j = 0; j < c; j++) {
      dx[r * c + j] = rstd[r] * w[j] * dy[r * c + j] - k * x[r * c + j];
      dw[j] += dy[r * c + j] * x[r * c + j] * rstd[r];
    }
  }
  return { dx, dw };
}
