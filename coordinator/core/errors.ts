/**
 * Errors the coordinator state machine reports to callers.
 *
 * Every rejected call (a witness that does not verify, a tick while halted, a withdraw of
 * a client that already left) throws a {@linkcode CoordinatorError} whose `code` comes
 * from one fixed, numbered list. The numbers are part of the protocol: the Solana program
 * returns them as its custom error codes and the TCP server sends them to clients, so a
 * code's number never changes and new codes are only appended. (The Solana program
 * reports `6000 + number`, Anchor's convention, since a zero return means success there.)
 *
 * A failed call never changes the state: every entry point validates fully before it
 * mutates anything.
 *
 * @module
 */

/** Error codes in the order of their wire numbers (index = number). Append only. */
export const COORDINATOR_ERROR_CODES = [
  /** The run is Uninitialized, Paused or Finished: nothing may happen. */
  "Halted",
  /** The call is not allowed in the current run state. */
  "WrongRunState",
  /** A witness message is malformed, mis-sized, or not bound to its sender. */
  "InvalidWitness",
  /** The sender already witnessed this round. */
  "DuplicateWitness",
  /** The round already holds MAX_WITNESSES witnesses. */
  "WitnessesFull",
  /** A health check named a healthy client, an unknown client, or came too early. */
  "InvalidHealthCheck",
  /** A committee or witness proof does not verify against the round's selection. */
  "InvalidCommitteeProof",
  /** The client to withdraw does not exist or is no longer Healthy. */
  "InvalidWithdraw",
  /** A checkpoint report is malformed, from the wrong client, or of the wrong kind. */
  "InvalidCheckpoint",
  /** Resume was asked while the run is neither paused nor pausing. */
  "CannotResume",
  /** A verification report is malformed, names no open task, or comes from no seat of it. */
  "InvalidVerification",
] as const;

/** One of {@linkcode COORDINATOR_ERROR_CODES}. */
export type CoordinatorErrorCode = typeof COORDINATOR_ERROR_CODES[number];

/** The wire number of `code` (its index in {@linkcode COORDINATOR_ERROR_CODES}). */
export function coordinatorErrorNumber(code: CoordinatorErrorCode): number {
  return COORDINATOR_ERROR_CODES.indexOf(code);
}

/** The code of wire number `n`, or undefined when `n` is not a known code. */
export function coordinatorErrorCodeOf(n: number): CoordinatorErrorCode | undefined {
  return Number.isInteger(n) ? COORDINATOR_ERROR_CODES[n] : undefined;
}

/**
 * A call the coordinator rejected. `code` says what kind of rejection (callers branch on
 * it; backends send its `number`), `message` says what exactly was wrong.
 *
 * @example
 * ```ts
 * import { CoordinatorError } from "./errors.ts";
 * const err = new CoordinatorError("DuplicateWitness", "client 3 already witnessed round 7");
 * if (err.number !== 3) throw new Error("DuplicateWitness is wire number 3");
 * ```
 */
export class CoordinatorError extends Error {
  /** What kind of rejection this is. */
  readonly code: CoordinatorErrorCode;

  constructor(code: CoordinatorErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.name = "CoordinatorError";
    this.code = code;
  }

  /** The code's wire number, shared with the Solana program. */
  get number(): number {
    return coordinatorErrorNumber(this.code);
  }
}
