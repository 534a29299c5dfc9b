/**
 * The coordinator program's interface, as TypeScript sees it: the account layout and its
 * decoder, the instruction codecs, the program's addresses and error codes, the rule for a run's
 * meeting addresses, and the instructions as `@solana/kit` objects with the accounts each takes.
 * Pure (no RPC, no files): the client's Solana backend, the operator commands, the localnet and
 * the tests all speak to the program through it.
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
  type EpochRates,
  isCoordinatorAccount,
  type JoinDeposit,
  OFFSETS,
  pendingRegistrations,
  type Registration,
} from "./account.ts";
export {
  type AccountSlice,
  decodeNonce,
  decodeRunHead,
  decodeRunListing,
  registrySlice,
  RUN_LISTING_SLICES,
  type RunHead,
  type RunListing,
  runListingOf,
  type RunTailSlices,
} from "./run_listing.ts";
export {
  coordinatorAccountFilters,
  coordinatorAddress,
  type CoordinatorAddressOptions,
} from "./addresses.ts";
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
  EPOCH_RATE_PARTS,
  HEALTH_ENTRY_BYTES,
  type HealthCheckEntry,
  INSTRUCTION_KINDS,
  InstructionDecodeError,
  type InstructionKind,
  MAX_DELEGATES,
  MAX_DESCRIPTION_BYTES,
  MAX_NAME_BYTES,
  MAX_POINTS,
  type RunMetadata,
  VERIFICATION_REPORT_BYTES,
  WITNESS_TAIL_BYTES,
  witnessInstructionBytes,
  type WitnessTail,
} from "./instructions.ts";
export {
  ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
  associatedTokenAddress,
  COMPUTE_BUDGET_PROGRAM_ADDRESS,
  coordinatorInstruction,
  type CoordinatorInstructionOptions,
  createAccountWithSeedInstruction,
  createAssociatedTokenAccountInstruction,
  createRunInstructions,
  type CreateRunOptions,
  depositPayoutAccounts,
  depositVaultAddress,
  depositVaultAuthority,
  type ExtraAccount,
  JOIN_DEPOSIT_SEED,
  joinDepositAccounts,
  setComputeUnitLimitInstruction,
  SPL_TOKEN_PROGRAM_ADDRESS,
  SYSTEM_PROGRAM_ADDRESS,
  TICK_COMPUTE_UNITS,
} from "./kit.ts";
export {
  checkWholeSecondDurations,
  CONFIG_V1_BYTES,
  CONFIG_WIRE_BYTES,
  decodeConfigBytes,
  decodeModelBytes,
  encodeConfigBytes,
  encodeModelBytes,
} from "./state_parts.ts";
export { placeholderModel, uninitializedState, zeroConfig } from "./state_parts.ts";
export {
  MAX_MEETING_ADDRESS_BYTES,
  MAX_MEETING_ADDRESSES,
  MEETING_ADDRESS_KINDS,
  type MeetingAddress,
  meetingAddressesProblem,
  type MeetingAddressKind,
  meetingAddressProblem,
} from "./meeting_addresses.ts";
export {
  ACCOUNT_LAYOUT_VERSION,
  ACCOUNT_MAGIC_TEXT,
  camelCase,
  ERROR_ENUMS,
  LAYOUT_CONSTANTS,
  LAYOUT_ENUMS,
  LAYOUT_STRUCTS,
  type LayoutConstant,
  layoutConstant,
  type LayoutEnum,
  type LayoutField,
  type LayoutStruct,
  type PlacedField,
  type Scalar,
  SCALAR_BYTES,
  type StructLayout,
  structLayout,
  upperSnake,
} from "./layout.ts";
