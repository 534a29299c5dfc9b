/**
 * litesvm's transaction errors in the JSON shape a Solana RPC node returns them
 * (`"BlockhashNotFound"`, `{ "InstructionError": [0, { "Custom": 6001 }] }`), so clients
 * written against a real RPC read the localnet's errors unchanged.
 *
 * @module
 */

/** Solana's `TransactionError` unit variants, in the protocol's order. */
const TRANSACTION_ERRORS = [
  "AccountInUse",
  "AccountLoadedTwice",
  "AccountNotFound",
  "ProgramAccountNotFound",
  "InsufficientFundsForFee",
  "InvalidAccountForFee",
  "AlreadyProcessed",
  "BlockhashNotFound",
  "CallChainTooDeep",
  "MissingSignatureForFee",
  "InvalidAccountIndex",
  "SignatureFailure",
  "InvalidProgramForExecution",
  "SanitizeFailure",
  "ClusterMaintenance",
  "AccountBorrowOutstanding",
  "WouldExceedMaxBlockCostLimit",
  "UnsupportedVersion",
  "InvalidWritableAccount",
  "WouldExceedMaxAccountCostLimit",
  "WouldExceedAccountDataBlockLimit",
  "TooManyAccountLocks",
  "AddressLookupTableNotFound",
  "InvalidAddressLookupTableOwner",
  "InvalidAddressLookupTableData",
  "InvalidAddressLookupTableIndex",
  "InvalidRentPayingAccount",
  "WouldExceedMaxVoteCostLimit",
  "WouldExceedAccountDataTotalLimit",
  "MaxLoadedAccountsDataSizeExceeded",
  "ResanitizationNeeded",
  "InvalidLoadedAccountsDataSizeLimit",
  "UnbalancedTransaction",
  "ProgramCacheHitMaxLimit",
  "CommitCancelled",
] as const;

/** Solana's `InstructionError` unit variants, in the protocol's order. */
const INSTRUCTION_ERRORS = [
  "GenericError",
  "InvalidArgument",
  "InvalidInstructionData",
  "InvalidAccountData",
  "AccountDataTooSmall",
  "InsufficientFunds",
  "IncorrectProgramId",
  "MissingRequiredSignature",
  "AccountAlreadyInitialized",
  "UninitializedAccount",
  "UnbalancedInstruction",
  "ModifiedProgramId",
  "ExternalAccountLamportSpend",
  "ExternalAccountDataModified",
  "ReadonlyLamportChange",
  "ReadonlyDataModified",
  "DuplicateAccountIndex",
  "ExecutableModified",
  "RentEpochModified",
  "NotEnoughAccountKeys",
  "AccountDataSizeChanged",
  "AccountNotExecutable",
  "AccountBorrowFailed",
  "AccountBorrowOutstanding",
  "DuplicateAccountOutOfSync",
  "InvalidError",
  "ExecutableDataModified",
  "ExecutableLamportChange",
  "ExecutableAccountNotRentExempt",
  "UnsupportedProgramId",
  "CallDepth",
  "MissingAccount",
  "ReentrancyNotAllowed",
  "MaxSeedLengthExceeded",
  "InvalidSeeds",
  "InvalidRealloc",
  "ComputationalBudgetExceeded",
  "PrivilegeEscalation",
  "ProgramEnvironmentSetupFailure",
  "ProgramFailedToComplete",
  "ProgramFailedToCompile",
  "Immutable",
  "IncorrectAuthority",
  "AccountNotRentExempt",
  "InvalidAccountOwner",
  "ArithmeticOverflow",
  "UnsupportedSysvar",
  "IllegalOwner",
  "MaxAccountsDataAllocationsExceeded",
  "MaxAccountsExceeded",
  "MaxInstructionTraceLengthExceeded",
  "BuiltinProgramsMustConsumeComputeUnits",
  "BorshIoError",
] as const;

/** A transaction error as RPC JSON: a variant name or a one-key object. */
export type RpcTransactionError = string | Record<string, unknown>;

function instructionErrorJson(inner: unknown): unknown {
  if (typeof inner === "number") return INSTRUCTION_ERRORS[inner] ?? `InstructionError(${inner})`;
  if (typeof inner === "object" && inner !== null) {
    if ("code" in inner) return { Custom: (inner as { code: number }).code };
    if ("msg" in inner) return { BorshIoError: (inner as { msg: string }).msg };
  }
  return String(inner);
}

/**
 * Converts the value of litesvm's `FailedTransactionMetadata.err()` into RPC JSON:
 * unit variants by name, `InstructionError` as `[index, error]` with custom program
 * errors as `{ Custom: code }`, the two account-index variants with their index.
 */
export function transactionErrorJson(err: unknown): RpcTransactionError {
  if (typeof err === "number") return TRANSACTION_ERRORS[err] ?? `TransactionError(${err})`;
  if (typeof err === "object" && err !== null) {
    const o = err as Record<string, unknown>;
    if (typeof o.err === "function" && typeof o.index === "number") {
      return { InstructionError: [o.index, instructionErrorJson((o.err as () => unknown)())] };
    }
    if (typeof o.accountIndex === "number") {
      const name = String(o.toString()).includes("Rent")
        ? "InsufficientFundsForRent"
        : "ProgramExecutionTemporarilyRestricted";
      return { [name]: { account_index: o.accountIndex } };
    }
    if (typeof o.index === "number") return { DuplicateInstruction: o.index };
  }
  return String(err);
}
