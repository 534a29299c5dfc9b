/**
 * Plain TypeScript softmax cross-entropy with ignore index −100 (f64), the reference of
 * `../cross_entropy.ts`.
 *
 * @module
 */

/** Mean loss over non-ignored rows, the row log-sum-exps and `d(mean loss)/d(logits)`. */
export function crossEntropyRef(
  logits: ArrayLike<number>,
  targets: ArrayLike<number>,
  n: number,
  v: number,
): { loss: number; count: number; lse: Float64Array; dLogits: Float64Array } {
  const lse = new Float64Array(n), dLogits = new Float64Array(n * v);
  let sum = 0, count = 0;
  for (let r = 0; r < n; r++) {
    let m = -Infinity;
    for (let j = 0; j < v; j++) m = Math.max(m, logits[r * v + j]);
    let s = 0;
    for (let j = 0; j < v; j++) s += Math.exp(logits[r * v + j] - m);
    lse[r] = m + Math.log(s);
    if (targets[r] === -100) continue;
    sum += lse[r] - logits[r * v + targets[r]];
    count++;
  }
  for (let r = 0; r < n && count > 0; r++) {
    if (targets[r] === -100) continue;
    for (let j = 0; j < v; j++) {
      const p = Math.exp(logits[r * v + j] - lse[r]);
      dLogits[r * v + j] = (p - (j === targets[r] ? 1 : 0)) / count;
    }
  }
  return { loss: count > 0 ? sum / count : 0, count, lse, dLogits };
}
