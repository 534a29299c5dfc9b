/**
 * The embedding backward's `links` (shaders/embedding.ts), computed on the host.
 *
 * The GPU links pass scans every token for every position: O(N²), 1.25 ms of a 105 ms H200 step at
 * N = 16384 and 16x that at N = 65536. A trainer holds the tokens on the host before it encodes
 * the step, so it can write the same links in O(N + V) beside them and skip that pass.
 *
 * @module
 */

/**
 * `links [2N]` u32 of `tokens [N]`, as the embedding's GPU links pass writes them: `links[n]` is the
 * next position holding `tokens[n]` (N when none) and `links[N + n]` is 1 when n is the token's
 * first position, 0 otherwise. Ids must lie in `[0, vocab)`: a `RangeError` names the first that
 * does not (the GPU pass links such ids too, but the gradient skips them; the host refuses them
 * where it reads them).
 *
 * @example
 * ```ts
 * import { embeddingLinks } from "./embedding_links.ts";
 * const links = embeddingLinks(Uint32Array.from([7, 3, 7, 7]), { vocab: 8 });
 * // Next positions [2, 4, 3, 4]; first occurrences at 0 (token 7) and 1 (token 3).
 * if (links.join() !== "2,4,3,4,1,1,0,0") throw new Error(links.join());
 * ```
 */
export function embeddingLinks(tokens: Uint32Array, options: { vocab: number }): Uint32Array {
  const { vocab } = options;
  if (!Number.isInteger(vocab) || vocab < 1) {
    throw new RangeError(`vocab must be a positive integer, got ${vocab}`);
  }
  const n = tokens.length;
  const links = new Uint32Array(2 * n);
  // Walking backwards, `nearest[tok]` is the nearest later position of tok seen so far (n: none);
  // once the walk is done it is tok's first position.
  const nearest = new Uint32Array(vocab).fill(n);
  for (let i = n - 1; i >= 0; i--) {
    const tok = tokens[i];
    if (tok >= vocab) {
      throw new RangeError(`token ${tok} at position ${i} is outside the vocabulary (${vocab})`);
    }
    links[i] = nearest[tok];
    nearest[tok] = i;
  }
  for (let i = 0; i < n; i++) links[n + i] = nearest[tokens[i]] === i ? 1 : 0;
  return links;
}
