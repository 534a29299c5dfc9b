/**
 * The coordinator program's error codes. A failed instruction returns a custom error
 * `code`: `6000 + n` for CoordinatorError number `n` (coordinator/core/errors.ts, same
 * numbering as the TCP server), `6100 + m` for the program's own errors below (account,
 * signer and encoding problems the TypeScript machine never sees). Both lists are
 * append-only, like COORDINATOR_ERROR_CODES.
 *
 * @module
 */
import { COORDINATOR_ERROR_CODES, type CoordinatorErrorCode } from "../../core/mod.ts";

/** Custom error code of CoordinatorError number 0. */
export const COORDINATOR_ERROR_BASE = 6000;
/** Custom error code of the program's first own error. */
export const PROGRAM_ERROR_BASE = 6100;

/** The program's own errors, in the order of their numbers (index = code - 6100). */
export const PROGRAM_ERROR_CODES = [
  /** Unknown instruction tag, or instruction data of the wrong length or shape. */
  "InvalidInstruction",
  /** The instruction lists fewer accounts than it needs. */
  "NotEnoughAccounts",
  /** Account 0 is not a writable, initialized coordinator account of this program and layout. */
  "InvalidCoordinatorAccount",
  /** init_coordinator on an account that is already initialized. */
  "AlreadyInitialized",
  /** Account 1 did not sign. */
  "MissingSignature",
  /** The signer is not the run's main authority. */
  "NotMainAuthority",
  /** The signer is not the run's join authority. */
  "NotJoinAuthority",
  /** The signer is not the run's authorizer (or none is granted). */
  "NotAuthorizer",
  /** A permissioned run and the signer is neither the authorizer nor one of its delegates. */
  "NotAuthorizedToJoin",
  /** All 256 registrations are pending for the next epoch. */
  "ClientsFull",
  /** Joining would make more pending clients than globalBatchSizeEnd sequences per step. */
  "MoreClientsThanBatches",
  /** The run id is empty, longer than 32 bytes, or not UTF-8. */
  "InvalidRunId",
  /** The config breaks a rule of machine_validate.ts (or maxClients > 256). */
  "InvalidConfig",
  /** The model is malformed or breaks a rule of machine_validate.ts. */
  "InvalidModel",
  /** progress.step is 0 or progress.epochStartDataIndex exceeds 2^53 - 1. */
  "InvalidProgress",
  /** config/model/progress updates and free_coordinator need a halted run. */
  "NotHalted",
  /** The run is Finished: no joins, no config/model/progress updates. */
  "RunFinished",
  /** The delegate list already holds 256 keys. */
  "DelegatesFull",
  /** init_coordinator: the account is not at createWithSeed(main authority, run id, program). */
  "WrongCoordinatorAddress",
  /** config.maxClients can only change while the run is Uninitialized. */
  "MaxClientsFixed",
  /** Metadata strings are too long or not UTF-8. */
  "InvalidMetadata",
  /** The Clock sysvar is unreadable or its unix timestamp is negative. */
  "InvalidClock",
  /** free_coordinator: the spill account is not writable or is the coordinator itself. */
  "InvalidSpillAccount",
  /** A model's data location breaks a rule of coordinator/config/validate.ts (empty or NUL-bearing
   * string, Server not host:port or over 64 bytes, NumberedFiles template without exactly
   * one `{}` or with no files). */
  "InvalidDataLocation",
  /** A model's checkpoint has an empty repo id, revision or bucket, or a NUL in a string. */
  "InvalidModelCheckpoint",
  /** A learning-rate schedule breaks a rule of coordinator/config/validate.ts (negative rate, steps out
   * of order, WSD final rates above the rate before them, a Cosine shorter than the run). */
  "InvalidLrSchedule",
  /** An optimizer hyperparameter is out of range (AdamW betas/eps, clip, weight decay,
   * Distro compression decay/chunk/topk). */
  "InvalidOptimizer",
  /** A meeting address is malformed (not a multiaddr ending in /p2p/<id>, too long, not printable
   * ASCII), or the update names more than 4 (meeting_addresses.ts). */
  "InvalidMeetingAddress",
  /** join_run: the run requires a join deposit and the instruction lacks the token accounts
   * (the signer's token account, the vault, the SPL Token program). */
  "DepositRequired",
  /** A deposit instruction names another vault than the run's, another program than SPL Token,
   * or another vault authority than the run's PDA; or set_join_deposit's vault is not a plain
   * token account owned by that PDA. */
  "InvalidDepositAccounts",
  /** join_run: the signer's token account is not an unfrozen token account of the deposit's mint
   * owned by the signer, or holds less than the deposit. */
  "InsufficientDeposit",
  /** set_join_deposit: another vault while the current one still holds deposits or forfeits. */
  "DepositVaultInUse",
  /** withdraw_deposit: the signer holds no deposit; sweep_forfeited: nothing is forfeited. */
  "NoDeposit",
  /** withdraw_deposit: the signer's registration is pending for the next epoch or in the running
   * one; its deposit returns when that epoch has ended with it Healthy. */
  "DepositLocked",
] as const;

/** One of {@linkcode PROGRAM_ERROR_CODES}. */
export type ProgramErrorCode = typeof PROGRAM_ERROR_CODES[number];

/** Every error name the program can return. */
export type CoordinatorProgramErrorName = CoordinatorErrorCode | ProgramErrorCode;

/** The custom error code the program returns for `name`. */
export function programErrorNumber(name: CoordinatorProgramErrorName): number {
  const c = (COORDINATOR_ERROR_CODES as readonly string[]).indexOf(name);
  if (c >= 0) return COORDINATOR_ERROR_BASE + c;
  const p = (PROGRAM_ERROR_CODES as readonly string[]).indexOf(name);
  if (p >= 0) return PROGRAM_ERROR_BASE + p;
  throw new RangeError(`Unknown coordinator program error "${name}"`);
}

/** The name of custom error `code`, or undefined when the program has no such code. */
export function programErrorName(code: number): CoordinatorProgramErrorName | undefined {
  if (!Number.isInteger(code)) return undefined;
  return COORDINATOR_ERROR_CODES[code - COORDINATOR_ERROR_BASE] ??
    PROGRAM_ERROR_CODES[code - PROGRAM_ERROR_BASE];
}

/**
 * An instruction the program (or its TypeScript model) rejected, by name and code.
 *
 * @example
 * ```ts
 * import { CoordinatorProgramError } from "./errors.ts";
 * const err = new CoordinatorProgramError("Halted", "tick while Paused");
 * if (err.code !== 6000) throw new Error("Halted is 6000");
 * ```
 */
export class CoordinatorProgramError extends Error {
  /** What went wrong. */
  readonly errorName: CoordinatorProgramErrorName;
  /** The custom error code on the wire. */
  readonly code: number;
  constructor(name: CoordinatorProgramErrorName, message: string) {
    super(`${name} (${programErrorNumber(name)}): ${message}`);
    this.name = "CoordinatorProgramError";
    this.errorName = name;
    this.code = programErrorNumber(name);
  }
}
