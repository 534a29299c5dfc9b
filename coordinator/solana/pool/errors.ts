/**
 * The mining pool program's error codes: a refused instruction returns the custom error
 * `7000 + n`, `n` the index of its name below (the `E_*` enum of pool.c, in the same order;
 * errors_test.ts holds the two together). Append-only.
 *
 * @module
 */

/** Custom error code of the pool's first error. */
export const POOL_ERROR_BASE = 7000;

/** The pool's errors, in the order of their numbers (index = code - 7000). */
export const POOL_ERROR_CODES = [
  /** Unknown instruction tag, or instruction data of the wrong length or shape. */
  "InvalidInstruction",
  /** The instruction lists fewer accounts than it needs. */
  "NotEnoughAccounts",
  /** The authority or the lender's user did not sign. */
  "MissingSignature",
  /** The signer is not the pool's authority. */
  "NotPoolAuthority",
  /** The pool account is not an initialized pool of this program. */
  "InvalidPoolAccount",
  /** The lender account is not an initialized lender of this pool. */
  "InvalidLenderAccount",
  /** pool_create, lender_create: an account is not at its program-derived address. */
  "WrongAddress",
  /** pool_create, lender_create: the account to create already holds lamports or data. */
  "AlreadyInitialized",
  /** pool_create: a mint is not an initialized SPL Token mint. */
  "InvalidMint",
  /** The vault is not the pool's collateral (deposits, extracts) or rewards (claims) vault. */
  "InvalidVault",
  /** The user's token account is not an initialized account of the pool's mint (deposits: owned
   * by the signer). */
  "InvalidTokenAccount",
  /** The system program or the SPL Token program account is another account. */
  "InvalidProgram",
  /** lender_deposit on a frozen pool. */
  "PoolFrozen",
  /** pool_claimable before the pool is frozen. */
  "PoolNotFrozen",
  /** lender_deposit would take the pool's total deposits past its cap. */
  "CapExceeded",
  /** An amount of zero. */
  "InvalidAmount",
  /** The source token account (or the vault) holds less than the amount. */
  "InsufficientFunds",
  /** A balance would pass 2^64 - 1, or claims would pass the claimable total. */
  "Overflow",
  /** A balance would go below zero. */
  "Underflow",
  /** pool_update: deposits cannot reopen once rewards are claimable. */
  "ClaimingStarted",
  /** pool_claimable: the claimable total only grows. */
  "ClaimableDecreased",
  /** pool_claimable: the rewards vault holds less than the claimable total not yet paid. */
  "RewardsNotFunded",
  /** lender_claim: nothing new is owed to this lender. */
  "NothingToClaim",
  /** The signer is not the lender account's user. */
  "NotLender",
  /** The Rent sysvar's exemption threshold is neither 1.0 nor 2.0 (the program has no floats). */
  "UnsupportedRent",
  /** pool_claimable, lender_claim: the pool has no deposits to divide by. */
  "NothingDeposited",
  /** An account the instruction writes is not writable. */
  "NotWritable",
  /** A call into the system or SPL Token program failed. */
  "CpiFailed",
] as const;

/** One of {@linkcode POOL_ERROR_CODES}. */
export type PoolErrorName = typeof POOL_ERROR_CODES[number];

/** The custom error code of `name`. */
export function poolErrorNumber(name: PoolErrorName): number {
  const n = (POOL_ERROR_CODES as readonly string[]).indexOf(name);
  if (n < 0) throw new RangeError(`Unknown mining pool error "${name}"`);
  return POOL_ERROR_BASE + n;
}

/**
 * The name of custom error `code`, or undefined when the pool has no such code.
 *
 * @example
 * ```ts
 * import { poolErrorName } from "./errors.ts";
 * if (poolErrorName(7022) !== "NothingToClaim") throw new Error("7022 is NothingToClaim");
 * ```
 */
export function poolErrorName(code: number): PoolErrorName | undefined {
  if (!Number.isInteger(code)) return undefined;
  return POOL_ERROR_CODES[code - POOL_ERROR_BASE];
}
