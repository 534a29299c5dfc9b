/**
 * The mining pool's addresses (program-derived, as pool.c derives them) and its instructions
 * as `@solana/kit` objects, each with the account list pool.c reads.
 *
 * @module
 */
import {
  type AccountMeta,
  type Address,
  type Instruction,
  type TransactionSigner,
} from "@solana/kit";
import {
  addressBytes as enc,
  derivedAddress,
  readonlyAccount as r,
  signerAccount as s,
  SPL_TOKEN_PROGRAM_ADDRESS as TOKEN_PROGRAM_ADDRESS,
  SYSTEM_PROGRAM_ADDRESS as POOL_SYSTEM_PROGRAM_ADDRESS,
  writableAccount as w,
} from "../token_kit/mod.ts";
import { encodePoolInstruction, type PoolInstruction } from "./instructions.ts";

/** The SPL Token program (Token-2022 is not accepted), and the system program. */
export { POOL_SYSTEM_PROGRAM_ADDRESS, TOKEN_PROGRAM_ADDRESS };

function indexSeed(index: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, index, true);
  return out;
}

/** The pool's address: the PDA of `["pool", authority, u64le index]`. */
export async function poolAddress(
  programId: Address,
  opts: { authority: Address; index: bigint },
): Promise<Address> {
  return await derivedAddress(programId, ["pool", enc(opts.authority), indexSeed(opts.index)]);
}

/** The pool's collateral vault: the PDA of `["collateral", pool]`. */
export async function collateralVaultAddress(programId: Address, pool: Address): Promise<Address> {
  return await derivedAddress(programId, ["collateral", enc(pool)]);
}

/** The pool's rewards vault: the PDA of `["rewards", pool]`. */
export async function rewardsVaultAddress(programId: Address, pool: Address): Promise<Address> {
  return await derivedAddress(programId, ["rewards", enc(pool)]);
}

/** A user's lender account in a pool: the PDA of `["lender", pool, user]`. */
export async function lenderAddress(
  programId: Address,
  opts: { pool: Address; user: Address },
): Promise<Address> {
  return await derivedAddress(programId, ["lender", enc(opts.pool), enc(opts.user)]);
}

function instruction(
  programId: Address,
  accounts: AccountMeta[],
  ix: PoolInstruction,
): Instruction {
  return { programAddress: programId, accounts, data: encodePoolInstruction(ix) };
}

/** pool_create: the authority pays for the pool and both vaults. */
export async function poolCreateInstruction(opts: {
  programId: Address;
  authority: TransactionSigner;
  index: bigint;
  maxDeposit: bigint;
  collateralMint: Address;
  rewardsMint: Address;
}): Promise<{ pool: Address; instruction: Instruction }> {
  const pool = await poolAddress(opts.programId, {
    authority: opts.authority.address,
    index: opts.index,
  });
  const accounts = [
    w(pool),
    s(opts.authority, true),
    r(opts.collateralMint),
    w(await collateralVaultAddress(opts.programId, pool)),
    r(opts.rewardsMint),
    w(await rewardsVaultAddress(opts.programId, pool)),
    r(POOL_SYSTEM_PROGRAM_ADDRESS),
    r(TOKEN_PROGRAM_ADDRESS),
  ];
  return {
    pool,
    instruction: instruction(opts.programId, accounts, {
      kind: "PoolCreate",
      index: opts.index,
      maxDeposit: opts.maxDeposit,
    }),
  };
}

/** pool_update: a new cap and/or frozen flag (absent: unchanged). */
export function poolUpdateInstruction(opts: {
  programId: Address;
  pool: Address;
  authority: TransactionSigner;
  maxDeposit?: bigint;
  frozen?: boolean;
}): Instruction {
  return instruction(opts.programId, [w(opts.pool), s(opts.authority)], {
    kind: "PoolUpdate",
    maxDeposit: opts.maxDeposit,
    frozen: opts.frozen,
  });
}

/** pool_extract: the authority moves collateral from the vault to `destination`. */
export async function poolExtractInstruction(opts: {
  programId: Address;
  pool: Address;
  authority: TransactionSigner;
  destination: Address;
  amount: bigint;
}): Promise<Instruction> {
  return instruction(opts.programId, [
    w(opts.pool),
    s(opts.authority),
    w(await collateralVaultAddress(opts.programId, opts.pool)),
    w(opts.destination),
    r(TOKEN_PROGRAM_ADDRESS),
  ], { kind: "PoolExtract", amount: opts.amount });
}

/** pool_claimable: the rewards lenders may claim in all (the rewards vault must hold them). */
export async function poolClaimableInstruction(opts: {
  programId: Address;
  pool: Address;
  authority: TransactionSigner;
  totalClaimable: bigint;
}): Promise<Instruction> {
  return instruction(opts.programId, [
    w(opts.pool),
    s(opts.authority),
    r(await rewardsVaultAddress(opts.programId, opts.pool)),
  ], { kind: "PoolClaimable", totalClaimable: opts.totalClaimable });
}

/** lender_create: the user pays for its lender account. */
export async function lenderCreateInstruction(opts: {
  programId: Address;
  pool: Address;
  user: TransactionSigner;
}): Promise<{ lender: Address; instruction: Instruction }> {
  const lender = await lenderAddress(opts.programId, { pool: opts.pool, user: opts.user.address });
  return {
    lender,
    instruction: instruction(opts.programId, [
      w(opts.pool),
      w(lender),
      s(opts.user, true),
      r(POOL_SYSTEM_PROGRAM_ADDRESS),
    ], { kind: "LenderCreate" }),
  };
}

/** lender_deposit: `amount` of collateral from the user's token account `source`. */
export async function lenderDepositInstruction(opts: {
  programId: Address;
  pool: Address;
  user: TransactionSigner;
  source: Address;
  amount: bigint;
}): Promise<Instruction> {
  return instruction(opts.programId, [
    w(opts.pool),
    w(await lenderAddress(opts.programId, { pool: opts.pool, user: opts.user.address })),
    s(opts.user),
    w(opts.source),
    w(await collateralVaultAddress(opts.programId, opts.pool)),
    r(TOKEN_PROGRAM_ADDRESS),
  ], { kind: "LenderDeposit", amount: opts.amount });
}

/** lender_claim: everything owed and not yet paid, into the token account `destination`. */
export async function lenderClaimInstruction(opts: {
  programId: Address;
  pool: Address;
  user: TransactionSigner;
  destination: Address;
}): Promise<Instruction> {
  return instruction(opts.programId, [
    w(opts.pool),
    w(await lenderAddress(opts.programId, { pool: opts.pool, user: opts.user.address })),
    s(opts.user),
    w(opts.destination),
    w(await rewardsVaultAddress(opts.programId, opts.pool)),
    r(TOKEN_PROGRAM_ADDRESS),
  ], { kind: "LenderClaim" });
}
