/**
 * `@solana/kit` instructions for the coordinator program, for clients and tools that
 * build their own transactions (the SVM harness uses these too):
 * {@linkcode coordinatorInstruction} for any program instruction with the account list
 * docs/solana-program.md gives it, {@linkcode createRunInstructions} for the system
 * `createAccountWithSeed` + `init_coordinator` pair that opens a run, and
 * {@linkcode setComputeUnitLimitInstruction} for large health-check transactions.
 *
 * @module
 */

import {
  AccountRole,
  type Address,
  address,
  getAddressEncoder,
  getProgramDerivedAddress,
  type Instruction,
  type TransactionSigner,
} from "@solana/kit";
import { SPL_TOKEN_PROGRAM_ADDRESS, SYSTEM_PROGRAM_ADDRESS } from "../token_kit/mod.ts";
import { ACCOUNT_SIZE } from "./account.ts";
import { coordinatorAddress } from "./addresses.ts";
import { type CoordinatorInstruction, encodeCoordinatorInstruction } from "./instructions.ts";

/** The system program, and the SPL Token program, whose tokens the join deposit takes. */
export { SPL_TOKEN_PROGRAM_ADDRESS, SYSTEM_PROGRAM_ADDRESS };
/** The compute-budget program. */
export const COMPUTE_BUDGET_PROGRAM_ADDRESS: Address = address(
  "ComputeBudget111111111111111111111111111111",
);

/** The seed of the join deposit's vault authority, before the coordinator's key. */
export const JOIN_DEPOSIT_SEED = "join_deposit";

/**
 * The join deposit's vault authority: PDA("join_deposit", coordinator) of the program. The vault
 * is a token account it owns; the program signs the vault's payouts with it.
 */
export async function depositVaultAuthority(
  programId: Address,
  coordinator: Address,
): Promise<{ address: Address; bump: number }> {
  const [at, bump] = await getProgramDerivedAddress({
    programAddress: programId,
    seeds: [JOIN_DEPOSIT_SEED, getAddressEncoder().encode(coordinator)],
  });
  return { address: at, bump };
}

/** The Associated Token Account program. */
export const ASSOCIATED_TOKEN_PROGRAM_ADDRESS: Address = address(
  "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL",
);

/** The associated token account of `owner` (a wallet or a PDA) for SPL Token `mint`. */
export async function associatedTokenAddress(owner: Address, mint: Address): Promise<Address> {
  const enc = getAddressEncoder();
  const [at] = await getProgramDerivedAddress({
    programAddress: ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
    seeds: [enc.encode(owner), enc.encode(SPL_TOKEN_PROGRAM_ADDRESS), enc.encode(mint)],
  });
  return at;
}

/**
 * The Associated Token Account program's CreateIdempotent: `owner`'s associated token account
 * for `mint`, paid by `payer`; does nothing when it exists already (with that owner and mint).
 */
export async function createAssociatedTokenAccountInstruction(opts: {
  payer: TransactionSigner;
  owner: Address;
  mint: Address;
}): Promise<{ account: Address; instruction: Instruction }> {
  const account = await associatedTokenAddress(opts.owner, opts.mint);
  const accounts: (ExtraAccount & { signer?: TransactionSigner })[] = [
    { address: opts.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: opts.payer },
    { address: account, role: AccountRole.WRITABLE },
    { address: opts.owner, role: AccountRole.READONLY },
    { address: opts.mint, role: AccountRole.READONLY },
    { address: SYSTEM_PROGRAM_ADDRESS, role: AccountRole.READONLY },
    { address: SPL_TOKEN_PROGRAM_ADDRESS, role: AccountRole.READONLY },
  ];
  return {
    account,
    instruction: {
      programAddress: ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
      accounts,
      data: new Uint8Array([1]),
    },
  };
}

/**
 * The vault the operator tools use for a run's deposit in `mint`: the vault authority's
 * associated token account (any token account the authority owns would do; this one anyone can
 * derive from the run and the mint).
 */
export async function depositVaultAddress(
  programId: Address,
  coordinator: Address,
  mint: Address,
): Promise<Address> {
  const authority = await depositVaultAuthority(programId, coordinator);
  return await associatedTokenAddress(authority.address, mint);
}

/** join_run's accounts after the signer when the run requires a deposit. */
export function joinDepositAccounts(
  opts: { tokenAccount: Address; vault: Address },
): ExtraAccount[] {
  return [
    { address: opts.tokenAccount, role: AccountRole.WRITABLE },
    { address: opts.vault, role: AccountRole.WRITABLE },
    { address: SPL_TOKEN_PROGRAM_ADDRESS, role: AccountRole.READONLY },
  ];
}

/** withdraw_deposit's and sweep_forfeited's accounts after the signer: `tokenAccount` is paid. */
export function depositPayoutAccounts(
  opts: { tokenAccount: Address; vault: Address; vaultAuthority: Address },
): ExtraAccount[] {
  return [
    ...joinDepositAccounts(opts),
    { address: opts.vaultAuthority, role: AccountRole.READONLY },
  ];
}

/**
 * The compute budget a tick transaction asks for: the whole transaction's. A round tick may close
 * several verification stages at once (ejections, tie-breakers seated) on top of sampling the
 * next round's results, which can pass the default 200,000 units per instruction at 256 clients
 * (docs/solana-program.md, "Costs"). Asking costs nothing without a priority fee.
 */
export const TICK_COMPUTE_UNITS = 1_400_000;

/** An extra account of an instruction (free_coordinator's spill account). */
export interface ExtraAccount {
  address: Address;
  role: AccountRole;
}

/** Options of {@linkcode coordinatorInstruction}. */
export interface CoordinatorInstructionOptions {
  programId: Address;
  /** The run's coordinator account. */
  coordinator: Address;
  ix: CoordinatorInstruction;
  /** Account 1: the authority or client wallet; null for tick, which needs no signer. */
  signer: TransactionSigner | null;
  /** Accounts after the signer (free_coordinator: the writable spill account). */
  extraAccounts?: readonly ExtraAccount[];
}

/**
 * A kit instruction for the coordinator program: account 0 the coordinator (writable),
 * account 1 the signer (when given), then `extraAccounts`; data from
 * {@linkcode encodeCoordinatorInstruction}.
 */
export function coordinatorInstruction(opts: CoordinatorInstructionOptions): Instruction {
  const accounts: (ExtraAccount & { signer?: TransactionSigner })[] = [
    { address: opts.coordinator, role: AccountRole.WRITABLE },
  ];
  if (opts.signer !== null) {
    accounts.push({
      address: opts.signer.address,
      role: AccountRole.READONLY_SIGNER,
      signer: opts.signer,
    });
  }
  accounts.push(...(opts.extraAccounts ?? []));
  return {
    programAddress: opts.programId,
    accounts,
    data: encodeCoordinatorInstruction(opts.ix),
  };
}

/**
 * System `CreateAccountWithSeed` (bincode: u32 tag 3, base, u64-length seed, lamports,
 * space, owner) creating a program-owned account of the coordinator's size at
 * createWithSeed(base, seed, owner).
 */
export function createAccountWithSeedInstruction(opts: {
  payer: TransactionSigner;
  base: TransactionSigner;
  target: Address;
  seed: string;
  lamports: bigint;
  owner: Address;
  space?: number;
}): Instruction {
  const enc = getAddressEncoder();
  const seed = new TextEncoder().encode(opts.seed);
  const data = new Uint8Array(4 + 32 + 8 + seed.length + 8 + 8 + 32);
  const v = new DataView(data.buffer);
  v.setUint32(0, 3, true);
  data.set(enc.encode(opts.base.address), 4);
  v.setBigUint64(36, BigInt(seed.length), true);
  data.set(seed, 44);
  let at = 44 + seed.length;
  v.setBigUint64(at, opts.lamports, true);
  v.setBigUint64(at + 8, BigInt(opts.space ?? ACCOUNT_SIZE), true);
  at += 16;
  data.set(enc.encode(opts.owner), at);
  const accounts: (ExtraAccount & { signer?: TransactionSigner })[] = [
    { address: opts.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: opts.payer },
    { address: opts.target, role: AccountRole.WRITABLE },
  ];
  if (opts.base.address !== opts.payer.address) {
    accounts.push({
      address: opts.base.address,
      role: AccountRole.READONLY_SIGNER,
      signer: opts.base,
    });
  }
  return { programAddress: SYSTEM_PROGRAM_ADDRESS, accounts, data };
}

/** Options of {@linkcode createRunInstructions}. */
export interface CreateRunOptions {
  programId: Address;
  /** Pays the rent. */
  payer: TransactionSigner;
  /** Signs both instructions; the account address derives from it and the run id. */
  mainAuthority: TransactionSigner;
  joinAuthority: Address;
  runId: string;
  permissionless: boolean;
  /** Rent-exempt balance for ACCOUNT_SIZE bytes (`getMinimumBalanceForRentExemption`). */
  rentLamports: bigint;
}

/** The two instructions (one transaction) that open a run, and the run's account address. */
export async function createRunInstructions(
  opts: CreateRunOptions,
): Promise<{ coordinator: Address; instructions: Instruction[] }> {
  const coordinator = await coordinatorAddress({
    mainAuthority: opts.mainAuthority.address,
    runId: opts.runId,
    programId: opts.programId,
  });
  const create = createAccountWithSeedInstruction({
    payer: opts.payer,
    base: opts.mainAuthority,
    target: coordinator,
    seed: opts.runId,
    lamports: opts.rentLamports,
    owner: opts.programId,
  });
  const init = coordinatorInstruction({
    programId: opts.programId,
    coordinator,
    signer: opts.mainAuthority,
    ix: {
      kind: "InitCoordinator",
      runId: opts.runId,
      joinAuthority: getAddressEncoder().encode(opts.joinAuthority) as Uint8Array,
      permissionless: opts.permissionless,
    },
  });
  return { coordinator, instructions: [create, init] };
}

/** Compute-budget `SetComputeUnitLimit(units)` (up to 1.4M per transaction). */
export function setComputeUnitLimitInstruction(units: number): Instruction {
  if (!Number.isSafeInteger(units) || units < 0 || units > 0xffff_ffff) {
    throw new RangeError(`compute unit limit must be a u32, found ${units}`);
  }
  const data = new Uint8Array(5);
  data[0] = 2;
  new DataView(data.buffer).setUint32(1, units, true);
  return { programAddress: COMPUTE_BUDGET_PROGRAM_ADDRESS, data };
}
