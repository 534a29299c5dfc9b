/**
 * Witness bloom sizing in integer arithmetic, as the Solana program computes it (sBPF
 * has no floating point). coordinator/core/bloom.ts sizes blooms with `Math.log`; this is the
 * same formula with 40-bit fixed-point constants, and bloom_integer_test.ts checks that
 * both give identical parameters for every client cap from 1 to 65,535, so the program
 * and the TypeScript machine always agree on bloom sizes and bloom.ts did not change.
 *
 * `m = ceil(n * C)` rounded up to a multiple of 64, `k = clamp(round(m * ln2 / n), 1, 32)`,
 * with `C = -ln(0.01) / ln(2)^2` (1% false positives at n items).
 *
 * @module
 */
import type { BloomParameters } from "../../core/mod.ts";

/** `C * 2^40`, the constant in program/selection.c (BLOOM_C_FP). */
export const BLOOM_C_FP = 10_538_883_138_827n;
/** `ln(2) * 2^40` (BLOOM_LN2_FP). */
export const BLOOM_LN2_FP = 762_123_384_785n;
const SHIFT = 40n;
const ONE = 1n << SHIFT;

/**
 * Bloom parameters of a run capped at `maxClients` (1..65,535), in exact integers.
 *
 * @example
 * ```ts
 * import { witnessBloomParametersInteger } from "./bloom_integer.ts";
 * const p = witnessBloomParametersInteger(256);
 * if (p.numBits !== 2496 || p.numKeys !== 7) throw new Error("256 clients: 2496 bits, 7 keys");
 * ```
 */
export function witnessBloomParametersInteger(maxClients: number): BloomParameters {
  if (!Number.isSafeInteger(maxClients) || maxClients < 1 || maxClients > 0xffff) {
    throw new RangeError(`maxClients must be an integer in [1, 65535], found ${maxClients}`);
  }
  const n = BigInt(maxClients);
  const optimal = (n * BLOOM_C_FP + ONE - 1n) >> SHIFT;
  const m = (optimal + 63n) / 64n * 64n;
  let k = ((m * BLOOM_LN2_FP) / n + (ONE >> 1n)) >> SHIFT;
  if (k < 1n) k = 1n;
  if (k > 32n) k = 32n;
  return { numBits: Number(m), numKeys: Number(k) };
}
