/**
 * Plain TypeScript references of the embedding lookup and its gradient (f64).
 *
 * @module
 */

/** `out[n, :] = table[tokens[n], :]` (NaN rows for ids ≥ vocab, as the kernel). */
export function embeddingForwardRef(
  tokens: ArrayLike<number>,
  table: ArrayLike<number>,
  c: number,
  vocab: number,
): Float64Array {
  const out = new Float64Array(tokens.length * c);
  for (let n = 0; n < tokens.length; n++) {
    for (let j = 0; j < c; j++) {
      out[n * c + j] = tokens[n] < vocab ? table[tokens[n] * c + j] : NaN;
    }
  }
  return out;
}

/** `dTable = init + Σ_n onehot(tokens[n]) ⊗ dOut[n, :]`. */
export function embeddingBackwardRef(
  tokens: ArrayLike<number>,
  dOut: ArrayLike<number>,
  init: ArrayLike<number>,
  c: number,
  vocab: number,
): Float64Array {
  const d = Float64Array.from(init);
  for (let n = 0; n < tokens.length; n++) {
    if (tokens[n] >= vocab) continue;
    for (let j = 0; j < c; j++) d[tokens[n] * c + j] += dOut[n * c + j];
  }
  return d;
}
