/**
 * The code for one chunk's kept coefficient indices: `k` distinct indices below `totalk`,
 * sorted and Elias-Fano coded. Its length depends only on `(k, totalk)`, so every chunk of
 * a parameter takes the same number of bits and a decoder knows exactly how much to read.
 *
 * With `y_i = x_i − i` (non-decreasing, below `U = totalk − k + 1`), `L = ⌊log2(U/k)⌋`
 * low bits of each `y_i` are stored verbatim and the high parts `y_i >> L` in unary as a
 * bit vector of `k + ((U − 1) >> L)` bits with bit `(y_i >> L) + i` set.
 * For a 64×64 chunk and k = 8 that is 87 bits (10.9 bits per index, against 16 in Psyche).
 *
 * @module
 */

import type { BitReader, BitWriter } from "./bits.ts";

/**
 * Low-bit width `L` and high-vector length for `k` indices below `totalk` (`k <= totalk < 2^31`).
 * `L` is the largest `L >= 0` with `k·2^L <= U`, i.e. the highest set bit of `⌊U/k⌋` (0 when
 * `U < k`): computed in constant time, as the decoder calls it once per chunk.
 */
export function indexCodeShape(k: number, totalk: number): { low: number; high: number } {
  const universe = totalk - k + 1;
  const ratio = Math.floor(universe / k);
  const low = ratio >= 1 ? 31 - Math.clz32(ratio) : 0;
  return { low, high: k + Math.floor((universe - 1) / 2 ** low) };
}

/** Bits one chunk's indices take. */
export function indexCodeBits(k: number, totalk: number): number {
  const { low, high } = indexCodeShape(k, totalk);
  return k * low + high;
}

/**
 * Writes `sorted` (strictly increasing, all < totalk) to `out`. The caller guarantees the
 * preconditions (the wire encoder checks them with messages naming the parameter).
 */
export function writeIndices(
  out: BitWriter,
  chunk: { sorted: ArrayLike<number>; totalk: number },
): void {
  const { sorted, totalk } = chunk;
  const k = sorted.length;
  const { low, high } = indexCodeShape(k, totalk);
  const lowMask = 2 ** low;
  for (let i = 0; i < k; i++) out.write((sorted[i] - i) % lowMask, low);
  let pos = 0;
  for (let i = 0; i < k; i++) {
    const target = Math.floor((sorted[i] - i) / lowMask) + i;
    out.zeros(target - pos);
    out.bit(true);
    pos = target + 1;
  }
  out.zeros(high - pos);
}

/** Why a chunk's index code is invalid: wrong count of ones, index too large, or out of order. */
export type IndexCodeProblem = "ones" | "range" | "order";

/** Where {@link readIndices} puts one chunk's indices, and the chunk's shape. */
export interface ReadTarget {
  /** Destination array. */
  readonly into: Uint32Array;
  /** First slot written. */
  readonly at: number;
  /** Indices in the chunk. */
  readonly k: number;
  /** Coefficients in the chunk (every index is below it). */
  readonly totalk: number;
}

/**
 * Reads `k` indices into `into[at..at+k)`, ascending. Returns null on success, or what is
 * wrong: the high vector does not hold exactly `k` ones, an index is >= `totalk`, or the
 * indices are not strictly increasing (low bits out of order within a bucket).
 * Reads exactly `indexCodeBits(k, totalk)` bits either way (BitStreamEndError past the end).
 */
export function readIndices(input: BitReader, target: ReadTarget): IndexCodeProblem | null {
  const { into, at, k, totalk } = target;
  const { low, high } = indexCodeShape(k, totalk);
  for (let i = 0; i < k; i++) into[at + i] = input.read(low);
  let ones = 0;
  let problem: IndexCodeProblem | null = null;
  // The high vector in words of up to 24 bits; visit each set bit (lowest first).
  for (let base = 0; base < high; base += 24) {
    let word = input.read(Math.min(24, high - base));
    while (word !== 0) {
      const lowest = word & -word;
      const p = base + 31 - Math.clz32(lowest);
      word ^= lowest;
      if (ones < k) {
        const x = (p - ones) * 2 ** low + into[at + ones] + ones;
        if (x >= totalk) problem ??= "range";
        if (ones > 0 && x <= into[at + ones - 1]) problem ??= "order";
        into[at + ones] = x;
      }
      ones++;
    }
  }
  if (ones !== k) return "ones";
  return problem;
}
