/**
 * The mining pool's two account layouts (pool.c's `pool_t` and `lender_t`), their decoders, and
 * the pro-rata rule a claim pays by. Little-endian, fixed size; the program checks the magic
 * and version before it trusts an account.
 *
 * @module
 */
import type { Address } from "@solana/kit";
import { checkAccountHeader, readAddress as key } from "../token_kit/mod.ts";

/** Bytes of a pool account. */
export const POOL_BYTES = 232;
/** Bytes of a lender account. */
export const LENDER_BYTES = 96;
/** The first 8 bytes of a pool account. */
export const POOL_MAGIC_TEXT = "PSYPOOL1";
/** The first 8 bytes of a lender account. */
export const LENDER_MAGIC_TEXT = "PSYLEND1";

/** Byte offsets of the pool account's fields (pool.c `pool_t`). */
export const POOL_OFFSETS = Object.freeze({
  magic: 0,
  version: 8,
  bump: 9,
  frozen: 10,
  collateralVaultBump: 11,
  rewardsVaultBump: 12,
  index: 16,
  authority: 24,
  collateralMint: 56,
  collateralVault: 88,
  rewardsMint: 120,
  rewardsVault: 152,
  maxDeposit: 184,
  totalDeposited: 192,
  totalExtracted: 200,
  totalClaimable: 208,
  totalClaimed: 216,
  lenders: 224,
});

/** Byte offsets of the lender account's fields (pool.c `lender_t`). */
export const LENDER_OFFSETS = Object.freeze({
  magic: 0,
  version: 8,
  bump: 9,
  pool: 16,
  user: 48,
  deposited: 80,
  claimed: 88,
});

/** A decoded pool account. */
export interface PoolAccount {
  version: number;
  bump: number;
  /** Deposits are refused. */
  frozen: boolean;
  index: bigint;
  authority: Address;
  collateralMint: Address;
  collateralVault: Address;
  rewardsMint: Address;
  rewardsVault: Address;
  /** The cap on totalDeposited. */
  maxDeposit: bigint;
  totalDeposited: bigint;
  /** Collateral the authority took out of the vault (claims ignore it). */
  totalExtracted: bigint;
  /** Rewards lenders may claim in all; only grows. */
  totalClaimable: bigint;
  totalClaimed: bigint;
  /** Lender accounts created. */
  lenders: bigint;
}

/** A decoded lender account. */
export interface LenderAccount {
  version: number;
  bump: number;
  pool: Address;
  user: Address;
  deposited: bigint;
  claimed: bigint;
}

/** The bytes are not an account of the expected kind. */
export class PoolAccountDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PoolAccountDecodeError";
  }
}

const check = (bytes: Uint8Array, size: number, magic: string, what: string): DataView =>
  checkAccountHeader(
    bytes,
    { size, magic, what },
    (message) => new PoolAccountDecodeError(message),
  );

/** Decodes a pool account (throws {@linkcode PoolAccountDecodeError}). */
export function decodePoolAccount(bytes: Uint8Array): PoolAccount {
  const v = check(bytes, POOL_BYTES, POOL_MAGIC_TEXT, "pool");
  const o = POOL_OFFSETS;
  const u64 = (at: number) => v.getBigUint64(at, true);
  return {
    version: bytes[o.version],
    bump: bytes[o.bump],
    frozen: bytes[o.frozen] !== 0,
    index: u64(o.index),
    authority: key(bytes, o.authority),
    collateralMint: key(bytes, o.collateralMint),
    collateralVault: key(bytes, o.collateralVault),
    rewardsMint: key(bytes, o.rewardsMint),
    rewardsVault: key(bytes, o.rewardsVault),
    maxDeposit: u64(o.maxDeposit),
    totalDeposited: u64(o.totalDeposited),
    totalExtracted: u64(o.totalExtracted),
    totalClaimable: u64(o.totalClaimable),
    totalClaimed: u64(o.totalClaimed),
    lenders: u64(o.lenders),
  };
}

/** Decodes a lender account (throws {@linkcode PoolAccountDecodeError}). */
export function decodeLenderAccount(bytes: Uint8Array): LenderAccount {
  const v = check(bytes, LENDER_BYTES, LENDER_MAGIC_TEXT, "lender");
  const o = LENDER_OFFSETS;
  return {
    version: bytes[o.version],
    bump: bytes[o.bump],
    pool: key(bytes, o.pool),
    user: key(bytes, o.user),
    deposited: v.getBigUint64(o.deposited, true),
    claimed: v.getBigUint64(o.claimed, true),
  };
}

/**
 * What a lender is owed in all: floor(deposited * totalClaimable / totalDeposited), the rule
 * lender_claim pays by (less what the lender was already paid). Flooring means the lenders'
 * shares sum to at most totalClaimable; the remainder (less than one unit per lender) stays in
 * the rewards vault.
 *
 * @example
 * ```ts
 * import { lenderOwed } from "./accounts.ts";
 * // Three lenders of 1 unit each share 100: 33 each, 1 unit stays in the vault.
 * if (lenderOwed(1n, 100n, 3n) !== 33n) throw new Error("33");
 * ```
 */
export function lenderOwed(
  deposited: bigint,
  totalClaimable: bigint,
  totalDeposited: bigint,
): bigint {
  if (totalDeposited <= 0n) throw new RangeError("totalDeposited must be positive");
  return deposited * totalClaimable / totalDeposited;
}
