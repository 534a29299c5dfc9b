/**
 * The seeded shuffle of the sequence order. Every honest client must compute the same
 * permutation from the same 32-byte seed, so the generator is specified exactly:
 *
 * - **Stream.** Block `k` (k = 0, 1, 2, ...) is `SHA-256(seed ‖ u64_le(k))`; the stream is
 *   the blocks' bytes in order, read as little-endian u32 words (8 words per block).
 * - **Uniform integer below m** (1 ≤ m ≤ 2^32): draw words `x` until
 *   `x < 2^32 − (2^32 mod m)`, then return `x mod m` (rejection sampling, no modulo bias).
 * - **Fisher-Yates.** Start from the identity `[0, 1, ..., n−1]`; for `i = n−1` down to `1`,
 *   draw `j = uniform(i + 1)` and swap entries `i` and `j`.
 *
 * Psyche uses ChaCha8 with rand's `SliceRandom::shuffle`; this generator is our own
 * documented choice (docs/data.md), simpler to reimplement in any language.
 * Pure: no I/O, no clock, no global randomness.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** Bytes of a shuffle seed. */
export const SHUFFLE_SEED_BYTES = 32;

/** Words of the SHA-256 counter stream, one at a time. */
export class Sha256CounterStream {
  readonly #seed: Uint8Array;
  #counter = 0n;
  #words = new Uint32Array(8);
  #next = 8;
  readonly #input: Uint8Array;
  readonly #counterView: DataView;

  /** A stream keyed by a 32-byte seed. */
  constructor(seed: Uint8Array) {
    if (seed.length !== SHUFFLE_SEED_BYTES) {
      throw new RangeError(
        `Shuffle seed must be ${SHUFFLE_SEED_BYTES} bytes, found ${seed.length}`,
      );
    }
    this.#seed = seed.slice();
    this.#input = new Uint8Array(SHUFFLE_SEED_BYTES + 8);
    this.#input.set(this.#seed);
    this.#counterView = new DataView(this.#input.buffer, SHUFFLE_SEED_BYTES, 8);
  }

  /** The next little-endian u32 word. */
  nextU32(): number {
    if (this.#next === 8) {
      this.#counterView.setBigUint64(0, this.#counter, true);
      this.#counter++;
      const digest = createHash("sha256").update(this.#input).digest();
      const view = new DataView(digest.buffer, digest.byteOffset, 32);
      for (let i = 0; i < 8; i++) this.#words[i] = view.getUint32(4 * i, true);
      this.#next = 0;
    }
    return this.#words[this.#next++];
  }

  /** A uniform integer in `[0, m)`, for `1 <= m <= 2^32`, by rejection sampling. */
  uniformBelow(m: number): number {
    if (!Number.isInteger(m) || m < 1 || m > 0x1_0000_0000) {
      throw new RangeError(`uniformBelow bound must be in [1, 2^32], found ${m}`);
    }
    const limit = 0x1_0000_0000 - (0x1_0000_0000 % m);
    for (;;) {
      const x = this.nextU32();
      if (x < limit) return x % m;
    }
  }
}

/**
 * The permutation of `0..n-1` for `seed`: sample `i` of a shuffled dataset is
 * sequence `perm[i]` of the unshuffled one.
 *
 * @example
 * ```ts
 * import { shufflePermutation } from "./shuffle.ts";
 * const perm = shufflePermutation(5, new Uint8Array(32));
 * if ([...perm].sort().join() !== "0,1,2,3,4") throw new Error("not a permutation");
 * ```
 */
export function shufflePermutation(n: number, seed: Uint8Array): Uint32Array {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff) {
    throw new RangeError(`Permutation size must be an integer in [0, 2^32 - 1], found ${n}`);
  }
  const stream = new Sha256CounterStream(seed);
  const perm = new Uint32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  for (let i = n - 1; i >= 1; i--) {
    const j = stream.uniformBelow(i + 1);
    const t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  return perm;
}
