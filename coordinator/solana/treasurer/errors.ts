/**
 * The treasurer program's error codes: a refused instruction returns the custom error `7100 + n`,
 * `n` the index of its name below (the `ERR_*` enum of treasurer.c, in the same order;
 * errors_test.ts holds the two together). Append-only.
 *
 * @module
 */

/** Custom error code of the treasurer's first error. */
export const TREASURER_ERROR_BASE = 7100;

/** The treasurer's errors, in the order of their numbers (index = code - 7100). */
export const TREASURER_ERROR_CODES = [
  /** Unknown instruction tag, or instruction data of the wrong length. */
  "InvalidInstruction",
  /** The instruction lists fewer accounts than it needs. */
  "NotEnoughAccounts",
  /** The authority or the participant's user did not sign. */
  "MissingSignature",
  /** An account the instruction writes is not writable. */
  "NotWritable",
  /** The treasury account is not an initialized treasury of this program. */
  "InvalidTreasuryAccount",
  /** The participant account is not an initialized participant of this treasury. */
  "InvalidParticipantAccount",
  /** treasury_create, participant_create: an account is not at its program-derived address. */
  "WrongAddress",
  /** treasury_create, participant_create: the account to create already holds lamports or data. */
  "AlreadyInitialized",
  /** treasury_create: the mint is not an initialized SPL Token mint. */
  "InvalidMint",
  /** participant_claim: the vault is not the treasury's vault. */
  "InvalidVault",
  /** participant_claim: the destination is not the user's token account of the treasury's mint. */
  "InvalidTokenAccount",
  /** The system program or the SPL Token program account is another account. */
  "InvalidProgram",
  /** The coordinator account is not the treasury's, not owned by the coordinator program, or not
   * an initialized account of the layout version the treasurer was built with. */
  "InvalidCoordinatorAccount",
  /** treasury_create: the signer is not the run's main authority. */
  "NotRunAuthority",
  /** participant_claim: the signer is not the participant account's user. */
  "NotParticipant",
  /** participant_claim: the signer has no registration in the run (it never joined). */
  "NotRegistered",
  /** participant_claim: the run owes the signer no points it was not already paid for. */
  "NothingToClaim",
  /** participant_claim: the vault holds fewer tokens than the points owed (nothing is paid). */
  "InsufficientFunds",
  /** A count would pass 2^64 - 1. */
  "Overflow",
  /** The participant was paid for more points than the run now says it earned. */
  "Underflow",
  /** The Rent sysvar's exemption threshold is neither 1.0 nor 2.0 (the program has no floats). */
  "UnsupportedRent",
  /** A call into the system or SPL Token program failed. */
  "CpiFailed",
] as const;

/** One of {@linkcode TREASURER_ERROR_CODES}. */
export type TreasurerErrorName = typeof TREASURER_ERROR_CODES[number];

/** The custom error code of `name`. */
export function treasurerErrorNumber(name: TreasurerErrorName): number {
  const n = (TREASURER_ERROR_CODES as readonly string[]).indexOf(name);
  if (n < 0) throw new RangeError(`Unknown treasurer error "${name}"`);
  return TREASURER_ERROR_BASE + n;
}

/**
 * The name of custom error `code`, or undefined when the treasurer has no such code.
 *
 * @example
 * ```ts
 * import { treasurerErrorName } from "./errors.ts";
 * if (treasurerErrorName(7116) !== "NothingToClaim") throw new Error("7116 is NothingToClaim");
 * ```
 */
export function treasurerErrorName(code: number): TreasurerErrorName | undefined {
  if (!Number.isInteger(code)) return undefined;
  return TREASURER_ERROR_CODES[code - TREASURER_ERROR_BASE];
}
