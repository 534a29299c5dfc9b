/**
 * The mining pool program's interface, as TypeScript sees it: its account layouts and decoders,
 * the pro-rata rule of claims, the instruction codec, the program-derived addresses, the
 * instructions as `@solana/kit` objects, and the error codes. Pure (no RPC, no files). The
 * program itself is pool.c beside this file; docs/solana-pool.md describes both.
 *
 * @module
 */
export {
  decodeLenderAccount,
  decodePoolAccount,
  LENDER_BYTES,
  LENDER_MAGIC_TEXT,
  LENDER_OFFSETS,
  type LenderAccount,
  lenderOwed,
  POOL_BYTES,
  POOL_MAGIC_TEXT,
  POOL_OFFSETS,
  type PoolAccount,
  PoolAccountDecodeError,
} from "./accounts.ts";
export {
  POOL_ERROR_BASE,
  POOL_ERROR_CODES,
  type PoolErrorName,
  poolErrorName,
  poolErrorNumber,
} from "./errors.ts";
export {
  decodePoolInstruction,
  encodePoolInstruction,
  POOL_INSTRUCTION_KINDS,
  type PoolInstruction,
  PoolInstructionDecodeError,
} from "./instructions.ts";
export {
  collateralVaultAddress,
  lenderAddress,
  lenderClaimInstruction,
  lenderCreateInstruction,
  lenderDepositInstruction,
  POOL_SYSTEM_PROGRAM_ADDRESS,
  poolAddress,
  poolClaimableInstruction,
  poolCreateInstruction,
  poolExtractInstruction,
  poolUpdateInstruction,
  rewardsVaultAddress,
  TOKEN_PROGRAM_ADDRESS,
} from "./kit.ts";
