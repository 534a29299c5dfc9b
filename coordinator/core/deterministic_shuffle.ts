/**
 * Psyche's deterministic Fisher–Yates shuffle (`shared/core/src/deterministic_shuffle.rs`):
 * `for i = len-1 down to 1: j = lcg.nextRange(i + 1); swap(items[i], items[j])` with an
 * {@linkcode Lcg} seeded by the round's random seed. Used to order trainers before data
 * assignment, so it must be bit-identical on every client.
 *
 * @module
 */

import { Lcg } from "./lcg.ts";

/**
 * Shuffles `items` in place with the LCG seeded by `seed` and returns the same array.
 *
 * @example
 * ```ts
 * import { deterministicShuffle } from "./deterministic_shuffle.ts";
 * const a = deterministicShuffle([1, 2, 3, 4, 5], 42n);
 * const b = deterministicShuffle([1, 2, 3, 4, 5], 42n);
 * if (a.join() !== b.join()) throw new Error("same seed, same order");
 * ```
 */
export function deterministicShuffle<T>(items: T[], seed: bigint): T[] {
  const lcg = new Lcg(seed);
  for (let i = items.length - 1; i >= 1; i--) {
    const j = lcg.nextRange(i + 1);
    const tmp = items[i];
    items[i] = items[j];
    items[j] = tmp;
  }
  return items;
}
