/**
 * Chunk sizes for DisTrO's blocked DCT: every dimension of a parameter is cut into
 * equal chunks whose length is the largest divisor of the dimension that does not
 * exceed `compression_chunk` (Psyche's `get_smaller_split`). A prime dimension larger
 * than the chunk degenerates to chunks of length 1.
 *
 * @module
 */

/**
 * Prime factors of `n` with multiplicity, ascending (trial division).
 *
 * @example
 * ```ts
 * import { primeFactors } from "./chunking.ts";
 * console.assert(primeFactors(12).join() === "2,2,3");
 * ```
 */
export function primeFactors(n: number): number[] {
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new RangeError(`primeFactors: expected a positive safe integer, found ${n}`);
  }
  const out: number[] = [];
  let rest = n;
  while (rest % 2 === 0) {
    out.push(2);
    rest /= 2;
  }
  for (let p = 3; p * p <= rest; p += 2) {
    while (rest % p === 0) {
      out.push(p);
      rest /= p;
    }
  }
  if (rest > 1) out.push(rest);
  return out;
}

/**
 * All divisors of `n`, ascending, built from its prime factorisation
 * (so a large prime costs one trial-division pass, not `n` steps).
 */
export function divisors(n: number): number[] {
  let divs = [1];
  const factors = primeFactors(n);
  let i = 0;
  while (i < factors.length) {
    const p = factors[i];
    let mult = 0;
    while (i < factors.length && factors[i] === p) {
      mult++;
      i++;
    }
    const next: number[] = [];
    for (const d of divs) {
      let pow = 1;
      for (let m = 0; m <= mult; m++) {
        next.push(d * pow);
        pow *= p;
      }
    }
    divs = next;
  }
  return divs.sort((a, b) => a - b);
}

/**
 * The chunk length used for a dimension of size `size`: the largest divisor of `size`
 * that is `<= chunk` (`size` itself when `size <= chunk`).
 *
 * @example
 * ```ts
 * import { chunkSize } from "./chunking.ts";
 * console.assert(chunkSize(100, 26) === 25);
 * ```
 */
export function chunkSize(size: number, chunk: number): number {
  if (!Number.isSafeInteger(chunk) || chunk < 1) {
    throw new RangeError(`chunkSize: chunk must be a positive integer, found ${chunk}`);
  }
  if (size <= chunk) {
    if (!Number.isSafeInteger(size) || size < 1) {
      throw new RangeError(`chunkSize: size must be a positive integer, found ${size}`);
    }
    return size;
  }
  let best = 1;
  for (const d of divisors(size)) if (d <= chunk) best = d;
  return best;
}
