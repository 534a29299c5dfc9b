/**
 * The coordinator as a Solana program: the C program (program/), the sBPF linker that
 * builds it (linker/), and the TypeScript side clients use with `@solana/kit`:
 * instruction codecs, the account decoder, address helpers, error codes, the reference
 * model the program is tested against, and an in-process SVM harness (litesvm).
 *
 * Layout, instructions and error codes: docs/solana-program.md.
 *
 * @module
 */

export {
  ACCOUNT_MAGIC,
  ACCOUNT_MAX_CLIENTS,
  ACCOUNT_SIZE,
  ACCOUNT_VERSION,
  AccountDecodeError,
  type CoordinatorAccount,
  decodeCoordinatorAccount,
  isCoordinatorAccount,
  OFFSETS,
  pendingRegistrations,
  type Registration,
} from "./account.ts";
export {
  coordinatorAccountFilters,
  coordinatorAddress,
  type CoordinatorAddressOptions,
} from "./addresses.ts";
export { witnessBloomParametersInteger } from "./bloom_integer.ts";
export {
  buildProgram,
  buildProgramOnce,
  PROGRAM_OUTPUT,
  ProgramBuildError,
} from "./toolchain/build.ts";
export {
  COORDINATOR_ERROR_BASE,
  CoordinatorProgramError,
  type CoordinatorProgramErrorName,
  PROGRAM_ERROR_BASE,
  PROGRAM_ERROR_CODES,
  type ProgramErrorCode,
  programErrorName,
  programErrorNumber,
} from "./errors.ts";
export {
  type CoordinatorInstruction,
  decodeCoordinatorInstruction,
  encodeCheckpointBytes,
  encodeCoordinatorInstruction,
  HEALTH_ENTRY_BYTES,
  type HealthCheckEntry,
  INSTRUCTION_KINDS,
  InstructionDecodeError,
  type InstructionKind,
  MAX_DELEGATES,
  MAX_DESCRIPTION_BYTES,
  MAX_NAME_BYTES,
  type RunMetadata,
  witnessInstructionBytes,
} from "./instructions.ts";
export {
  COMPUTE_BUDGET_PROGRAM_ADDRESS,
  coordinatorInstruction,
  type CoordinatorInstructionOptions,
  createAccountWithSeedInstruction,
  createRunInstructions,
  type CreateRunOptions,
  type ExtraAccount,
  setComputeUnitLimitInstruction,
  SYSTEM_PROGRAM_ADDRESS,
} from "./kit.ts";
export {
  applyInstruction,
  clockSeed,
  initialAccount,
  type InitOptions,
  type InstructionStep,
  type ProgramClock,
} from "./program_model.ts";
export { type ModelRuleViolation, modelRuleViolation } from "./model_rules.ts";
export {
  checkWholeSecondDurations,
  CONFIG_WIRE_BYTES,
  decodeConfigBytes,
  decodeModelBytes,
  encodeConfigBytes,
  encodeModelBytes,
} from "./state_parts.ts";
export {
  addressBytes,
  bytesAddress,
  CoordinatorSvm,
  MAX_COMPUTE_UNITS,
  MAX_TRANSACTION_BYTES,
  type SendOptions,
  type SendResult,
} from "./svm.ts";
