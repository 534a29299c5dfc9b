/**
 * The treasurer program's interface, as TypeScript sees it: its account layouts and decoders,
 * the instruction codec, the program-derived addresses, the instructions as `@solana/kit`
 * objects (and the SPL transfer that tops a vault up), and the error codes. Pure (no RPC, no
 * files). The program itself is treasurer.c beside this file; docs/solana-treasurer.md describes
 * both.
 *
 * @module
 */
export {
  decodeParticipantAccount,
  decodeTreasuryAccount,
  PARTICIPANT_BYTES,
  PARTICIPANT_MAGIC_TEXT,
  PARTICIPANT_OFFSETS,
  type ParticipantAccount,
  TreasurerAccountDecodeError,
  TREASURY_BYTES,
  TREASURY_MAGIC_TEXT,
  TREASURY_OFFSETS,
  type TreasuryAccount,
} from "./accounts.ts";
export {
  TREASURER_ERROR_BASE,
  TREASURER_ERROR_CODES,
  type TreasurerErrorName,
  treasurerErrorName,
  treasurerErrorNumber,
} from "./errors.ts";
export {
  decodeTreasurerInstruction,
  encodeTreasurerInstruction,
  TREASURER_INSTRUCTION_KINDS,
  type TreasurerInstruction,
  TreasurerInstructionDecodeError,
} from "./instructions.ts";
export {
  participantAddress,
  participantClaimInstruction,
  participantCreateInstruction,
  TOKEN_PROGRAM_ADDRESS,
  tokenTransferInstruction,
  TREASURER_SYSTEM_PROGRAM_ADDRESS,
  treasuryAddress,
  treasuryCreateInstruction,
  treasuryVaultAddress,
} from "./kit.ts";
