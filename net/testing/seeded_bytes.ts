/**
 * Deterministic pseudo-random bytes for tests: the same `seed` gives the same bytes, so a
 * failing case (a property test's seed) reproduces. Not for anything that needs secrecy.
 *
 * @module
 */

/** `n` bytes of a xorshift32 stream started from `seed`. */
export function seededBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed * 2654435761 >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}
