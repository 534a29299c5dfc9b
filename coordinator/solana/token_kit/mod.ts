/**
 * What the token programs' TypeScript interfaces share (the coordinator's abi, the pool, the
 * treasurer): the SPL Token and system program addresses, account-meta helpers, and the header
 * check and key reader of their account decoders. Pure (no RPC, no files).
 *
 * @module
 */
export { checkAccountHeader, readAddress } from "./accounts.ts";
export {
  type AccountMeta,
  addressBytes,
  derivedAddress,
  readonlyAccount,
  signerAccount,
  SPL_TOKEN_PROGRAM_ADDRESS,
  SYSTEM_PROGRAM_ADDRESS,
  writableAccount,
} from "./programs.ts";
