/**
 * Sized bloom filters for witness reports (participants seen, broadcasts received).
 *
 * Psyche always uses 1024 bits and 8 keys, which is a 31% false-positive rate at its 256-client cap
 * (Psyche's shared/core/src/bloom.rs: `(1 − e^(−8·256/1024))^8`). Here the size follows the run's
 * client cap: {@linkcode witnessBloomParameters} gives the optimal bit count (rounded up to a
 * multiple of 64) and key count for a 1% false-positive rate at `maxClients` items.
 *
 * Hashing: keyed FNV-1a-64 (`h = key; for each byte b: h ^= b; h *= 0x100000001b3 mod 2^64`),
 * one hash per key, bit `h % numBits`, bit `i` stored in byte `i >> 3` at bit `i & 7`
 * (least significant first). Keys are chosen by the caller (randomness stays at the edge)
 * and travel inside the filter.
 *
 * @module
 */

import { type Bloom, BLOOM_FALSE_POSITIVE_RATE } from "./types.ts";

/** Largest filter accepted, in bits (keeps the modular arithmetic exact in doubles). */
export const MAX_BLOOM_BITS = 1 << 26;
/** Most hash keys accepted per filter. */
export const MAX_BLOOM_KEYS = 32;

/** Bit count and key count of a bloom filter. */
export interface BloomParameters {
  numBits: number;
  numKeys: number;
}

/**
 * Optimal bloom parameters for `maxItems` items at `falsePositiveRate`:
 * `m = ceil(-n ln p / ln(2)^2)` rounded up to a multiple of 64, `k = max(1, round(m / n * ln 2))`.
 * Throws RangeError unless `maxItems >= 1` and `0 < p < 1`.
 *
 * @example
 * ```ts
 * import { bloomParameters } from "./bloom.ts";
 * const { numBits, numKeys } = bloomParameters(256, 0.01);
 * // 256 * 9.585 = 2453.8 → 2454 → 2496 (next multiple of 64); 2496 / 256 * ln 2 = 6.76 → 7
 * if (numBits !== 2496 || numKeys !== 7) throw new Error("unexpected parameters");
 * ```
 */
export function bloomParameters(maxItems: number, falsePositiveRate: number): BloomParameters {
  if (!Number.isSafeInteger(maxItems) || maxItems < 1) {
    throw new RangeError(`maxItems must be a positive integer, found ${String(maxItems)}`);
  }
  if (!(falsePositiveRate > 0 && falsePositiveRate < 1)) {
    throw new RangeError(`falsePositiveRate must be in (0, 1), found ${String(falsePositiveRate)}`);
  }
  const ln2 = Math.LN2;
  const optimalBits = Math.ceil((-maxItems * Math.log(falsePositiveRate)) / (ln2 * ln2));
  const numBits = Math.ceil(optimalBits / 64) * 64;
  if (numBits > MAX_BLOOM_BITS) {
    throw new RangeError(
      `A bloom filter for ${maxItems} items at rate ${falsePositiveRate} needs ${numBits} bits, ` +
        `more than the ${MAX_BLOOM_BITS} allowed`,
    );
  }
  const numKeys = Math.min(MAX_BLOOM_KEYS, Math.max(1, Math.round((numBits / maxItems) * ln2)));
  return { numBits, numKeys };
}

/** Parameters of the witness blooms of a run capped at `maxClients` clients (1% FPR at the cap). */
export function witnessBloomParameters(maxClients: number): BloomParameters {
  return bloomParameters(maxClients, BLOOM_FALSE_POSITIVE_RATE);
}

/**
 * An empty filter of `numBits` bits (a positive multiple of 64, at most MAX_BLOOM_BITS)
 * hashing with `keys` (1..MAX_BLOOM_KEYS keys, copied).
 */
export function createBloom(numBits: number, keys: BigUint64Array): Bloom {
  if (
    !Number.isSafeInteger(numBits) || numBits <= 0 || numBits % 64 !== 0 || numBits > MAX_BLOOM_BITS
  ) {
    throw new RangeError(
      `Bloom size must be a positive multiple of 64 up to ${MAX_BLOOM_BITS} bits, found ${
        String(numBits)
      }`,
    );
  }
  if (!(keys instanceof BigUint64Array) || keys.length < 1 || keys.length > MAX_BLOOM_KEYS) {
    throw new RangeError(
      `Bloom needs 1..${MAX_BLOOM_KEYS} keys in a BigUint64Array, found ${
        keys instanceof BigUint64Array ? keys.length : typeof keys
      }`,
    );
  }
  return { keys: keys.slice(), bits: new Uint8Array(numBits / 8) };
}

const TWO_32 = 4294967296;

/**
 * Keyed FNV-1a-64 of `item` reduced mod `numBits`, using 32-bit halves instead of BigInt (many
 * times faster: docs/benchmarks.md, "Behind the code"). The prime is `2^40 + 0x1b3`, so `h * prime
 * = h * 0x1b3 + (h << 40)` and only the low 32 bits of `h` reach the high word through the shift.
 */
function fnvBit(keyHi: number, keyLo: number, item: Uint8Array, numBits: number): number {
  let hi = keyHi;
  let lo = keyLo;
  for (let i = 0; i < item.length; i++) {
    lo = (lo ^ item[i]) >>> 0;
    const t = lo * 0x1b3; // < 2^41: exact
    const newLo = t >>> 0;
    const carry = (t - newLo) / TWO_32;
    hi = (Math.imul(hi, 0x1b3) + carry + ((lo << 8) >>> 0)) >>> 0;
    lo = newLo;
  }
  // (hi * 2^32 + lo) mod m, each product < 2^52 because m <= 2^26.
  return ((hi % numBits) * (TWO_32 % numBits) + lo) % numBits;
}

/**
 * Keyed FNV-1a-64 of `item` as a bigint (the readable definition; the filter uses an
 * equivalent 32-bit formulation).
 */
export function fnv1a64(key: bigint, item: Uint8Array): bigint {
  const mask = (1n << 64n) - 1n;
  let h = key & mask;
  for (const b of item) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & mask;
  }
  return h;
}

function checkBloom(bloom: Bloom): number {
  const numBits = bloom.bits.length * 8;
  if (numBits === 0 || numBits % 64 !== 0 || numBits > MAX_BLOOM_BITS) {
    throw new RangeError(`Bloom has ${numBits} bits; expected a positive multiple of 64`);
  }
  return numBits;
}

/** True when typed arrays store the low half of a u64 first (every platform Deno runs on). */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Calls `visit` with the bit `item` maps to under each key; stops when it returns false. */
function forEachBit(bloom: Bloom, item: Uint8Array, visit: (bit: number) => boolean): void {
  const numBits = checkBloom(bloom);
  const { keys } = bloom;
  const halves = new Uint32Array(keys.buffer, keys.byteOffset, keys.length * 2);
  const lo = LITTLE_ENDIAN ? 0 : 1;
  for (let k = 0; k < keys.length; k++) {
    const bit = fnvBit(halves[2 * k + 1 - lo], halves[2 * k + lo], item, numBits);
    if (!visit(bit)) return;
  }
}

/** The bit positions `item` sets in `bloom`, one per key (useful for tests and debugging). */
export function bloomPositions(bloom: Bloom, item: Uint8Array): number[] {
  const out: number[] = [];
  forEachBit(bloom, item, (bit) => {
    out.push(bit);
    return true;
  });
  return out;
}

/** Adds `item` to `bloom` in place. */
export function bloomAdd(bloom: Bloom, item: Uint8Array): void {
  const { bits } = bloom;
  forEachBit(bloom, item, (bit) => {
    bits[bit >>> 3] |= 1 << (bit & 7);
    return true;
  });
}

/** True if `item` may be in `bloom` (never false for an added item). */
export function bloomContains(bloom: Bloom, item: Uint8Array): boolean {
  const { bits } = bloom;
  let found = true;
  forEachBit(bloom, item, (bit) => (found = (bits[bit >>> 3] & (1 << (bit & 7))) !== 0));
  return found;
}

/** Clears every bit of `bloom` in place (keys are kept). */
export function bloomClear(bloom: Bloom): void {
  bloom.bits.fill(0);
}

/**
 * Expected false-positive rate `(1 - e^(-k n / m))^k` of a filter of `numBits` bits and
 * `numKeys` keys holding `items` items.
 */
export function bloomFalsePositiveRate(numBits: number, numKeys: number, items: number): number {
  return Math.pow(1 - Math.exp((-numKeys * items) / numBits), numKeys);
}
