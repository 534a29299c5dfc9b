/**
 * Psyche's linear congruential generator (`shared/core/src/lcg.rs`): a 64-bit state
 * advanced by `state = state * 6364136223846793005 + 1442695040888963407 (mod 2^64)`.
 *
 * Not a good random generator, and not meant to be: it is the protocol's agreed,
 * trivially portable way to turn a round seed into a data-assignment order, so every
 * honest client computes the same order bit for bit.
 *
 * @module
 */

/** Multiplier (Knuth's MMIX constant). */
export const LCG_A = 6364136223846793005n;
/** Increment (Knuth's MMIX constant). */
export const LCG_C = 1442695040888963407n;

const MASK64 = (1n << 64n) - 1n;

/**
 * A seeded LCG. `next()` returns the new state (the first output is `seed * A + C`),
 * matching Psyche's `LCG::next_u64`.
 *
 * @example
 * ```ts
 * import { Lcg } from "./lcg.ts";
 * const lcg = new Lcg(0n);
 * if (lcg.next() !== 1442695040888963407n) throw new Error("first output of seed 0 is C");
 * ```
 */
export class Lcg {
  #state: bigint;

  /** Starts from `seed` (any u64). Throws RangeError outside [0, 2^64). */
  constructor(seed: bigint) {
    if (typeof seed !== "bigint" || seed < 0n || seed > MASK64) {
      throw new RangeError(`LCG seed must be an unsigned 64-bit integer, found ${String(seed)}`);
    }
    this.#state = seed;
  }

  /** The current state (the last output, or the seed before the first call). */
  get state(): bigint {
    return this.#state;
  }

  /** Advances the state and returns it: `state = (state * A + C) mod 2^64`. */
  next(): bigint {
    this.#state = (this.#state * LCG_A + LCG_C) & MASK64;
    return this.#state;
  }

  /**
   * `next() % max` (Psyche's `next_range`; slightly biased, as in the original).
   * Throws RangeError unless `max` is a positive safe integer.
   */
  nextRange(max: number): number {
    if (!Number.isSafeInteger(max) || max <= 0) {
      throw new RangeError(`LCG range must be a positive safe integer, found ${String(max)}`);
    }
    return Number(this.next() % BigInt(max));
  }
}
