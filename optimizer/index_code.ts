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

import { bitsAt, type BitWriter } from "./bits.ts";

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
 * Writes `sorted` (strictly increasing, all < totalk < 2^31) to `out`. The caller guarantees
 * the preconditions (the wire encoder checks them with messages naming the parameter).
 */
export function writeIndices(
  out: BitWriter,
  chunk: { sorted: ArrayLike<number>; totalk: number },
): void {
  const { sorted, totalk } = chunk;
  const k = sorted.length;
  const { low, high } = indexCodeShape(k, totalk);
  // y = sorted[i] − i lies in [0, 2^31): its low bits and high part in int32 arithmetic.
  const lowMask = (1 << low) - 1;
  for (let i = 0; i < k; i++) out.write((sorted[i] - i) & lowMask, low);
  const vector = out.bitLength;
  out.zeros(high);
  for (let i = 0; i < k; i++) out.set(vector + ((sorted[i] - i) >>> low) + i);
}

/** Why a chunk's index code is invalid: wrong count of ones, index too large, or out of order. */
export type IndexCodeProblem = "ones" | "range" | "order";

/** The first chunk whose index code is invalid, and what is wrong with it. */
export interface IndexCodeFault {
  readonly chunk: number;
  readonly problem: IndexCodeProblem;
}

/** Where {@link readIndices} puts a parameter's indices, and the shape of its chunks. */
export interface ReadTarget {
  /** Destination, shape `[chunks, k]`. */
  readonly into: Uint32Array;
  /** Chunks coded one after another. */
  readonly chunks: number;
  /** Indices in each chunk. */
  readonly k: number;
  /** Coefficients in each chunk (every index is below it). */
  readonly totalk: number;
}

/**
 * Reads `chunks` consecutive index codes from the start of `bytes` (LSB-first), each chunk's
 * `k` indices ascending into `into[c·k .. c·k + k)`. Returns null when every chunk is valid,
 * else the first invalid chunk and what is wrong: its high vector does not hold exactly `k`
 * ones (checked first), or, at the first entry where it happens, an index is >= `totalk` or
 * not above the one before (low bits out of order within a bucket). `RangeError` unless
 * `1 <= k <= totalk < 2^31`, or when `bytes` is shorter than `chunks · indexCodeBits(k, totalk)`
 * bits or `into` than `chunks·k`.
 */
export function readIndices(bytes: Uint8Array, target: ReadTarget): IndexCodeFault | null {
  const { into, chunks, k, totalk } = target;
  const { low, high } = indexCodeShape(k, totalk);
  const bits = k * low + high;
  if (!(k >= 1 && k <= totalk && totalk < 2 ** 31)) {
    throw new RangeError(
      `readIndices: needs 1 <= k <= totalk < 2^31, found k ${k}, totalk ${totalk}`,
    );
  }
  if (bytes.length * 8 < chunks * bits || into.length < chunks * k) {
    throw new RangeError(
      `readIndices: ${chunks} chunks of ${bits} bits into ${chunks * k} slots, given ` +
        `${bytes.length} bytes and ${into.length} slots`,
    );
  }
  // A copy with zero bytes past the end keeps every unchecked window in bounds.
  const padded = new Uint8Array(bytes.length + 3);
  padded.set(bytes);
  // An integer (low <= 30 as totalk < 2^31), so the index arithmetic stays in int32.
  const bucket = 1 << low;
  const lowMask = low <= 24 ? (1 << low) - 1 : 0;
  let pos = 0;
  for (let c = 0; c < chunks; c++, pos += bits) {
    const at = c * k;
    const highAt = pos + k * low;
    let ones = 0;
    let previous = -1;
    let problem: IndexCodeProblem | null = null;
    // The high vector in words of up to 24 bits; each set bit (lowest first) is the next index,
    // with its low bits read where they lie (a window of 4 bytes holds any field up to 24 bits).
    for (let base = 0; base < high; base += 24) {
      let word = bitsAt(padded, highAt + base, Math.min(24, high - base));
      while (word !== 0) {
        const p = base + 31 - Math.clz32(word & -word);
        word &= word - 1;
        if (ones < k) {
          const from = pos + ones * low;
          const b = from >>> 3;
          const lowBits = low <= 24
            ? ((padded[b] | (padded[b + 1] << 8) | (padded[b + 2] << 16) |
              (padded[b + 3] << 24)) >>> (from & 7)) & lowMask
            : bitsAt(padded, from, 16) + bitsAt(padded, from + 16, low - 16) * 65536;
          const x = (p - ones) * bucket + lowBits + ones;
          if (x >= totalk) problem ??= "range";
          if (x <= previous) problem ??= "order";
          into[at + ones] = x;
          previous = x;
        }
        ones++;
      }
    }
    if (ones !== k) return { chunk: c, problem: "ones" };
    if (problem !== null) return { chunk: c, problem };
  }
  return null;
}
