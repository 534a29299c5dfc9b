/**
 * The treasurer's two account layouts (treasurer.c's `treasury_t` and `participant_t`) and their
 * decoders. Little-endian, fixed size; the program checks the magic and version before it trusts
 * an account.
 *
 * @module
 */
import type { Address } from "@solana/kit";
import { checkAccountHeader, readAddress as key } from "../token_kit/mod.ts";

/** Bytes of a treasury account. */
export const TREASURY_BYTES = 192;
/** Bytes of a participant account. */
export const PARTICIPANT_BYTES = 88;
/** The first 8 bytes of a treasury account. */
export const TREASURY_MAGIC_TEXT = "PSYTREA1";
/** The first 8 bytes of a participant account. */
export const PARTICIPANT_MAGIC_TEXT = "PSYPART1";

/** Byte offsets of the treasury account's fields (treasurer.c `treasury_t`). */
export const TREASURY_OFFSETS = Object.freeze({
  magic: 0,
  version: 8,
  bump: 9,
  vaultBump: 10,
  coordinatorProgram: 16,
  coordinator: 48,
  mint: 80,
  vault: 112,
  authority: 144,
  totalClaimed: 176,
  participants: 184,
});

/** Byte offsets of the participant account's fields (treasurer.c `participant_t`). */
export const PARTICIPANT_OFFSETS = Object.freeze({
  magic: 0,
  version: 8,
  bump: 9,
  treasury: 16,
  user: 48,
  claimed: 80,
});

/** A decoded treasury account. */
export interface TreasuryAccount {
  version: number;
  bump: number;
  vaultBump: number;
  /** The program that must own the coordinator account. */
  coordinatorProgram: Address;
  /** The run's coordinator account. */
  coordinator: Address;
  /** The SPL Token mint the treasury pays in. */
  mint: Address;
  /** The token account (owned by the treasury) claims are paid from. */
  vault: Address;
  /** The run's main authority, who created the treasury. */
  authority: Address;
  /** Token units paid out, in all. */
  totalClaimed: bigint;
  /** Participant accounts created. */
  participants: bigint;
}

/** A decoded participant account. */
export interface ParticipantAccount {
  version: number;
  bump: number;
  treasury: Address;
  user: Address;
  /** Points paid for, one token unit each. */
  claimed: bigint;
}

/** The bytes are not an account of the expected kind. */
export class TreasurerAccountDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TreasurerAccountDecodeError";
  }
}

const check = (bytes: Uint8Array, size: number, magic: string, what: string): DataView =>
  checkAccountHeader(
    bytes,
    { size, magic, what },
    (message) => new TreasurerAccountDecodeError(message),
  );

/** Decodes a treasury account (throws {@linkcode TreasurerAccountDecodeError}). */
export function decodeTreasuryAccount(bytes: Uint8Array): TreasuryAccount {
  const v = check(bytes, TREASURY_BYTES, TREASURY_MAGIC_TEXT, "treasury");
  const o = TREASURY_OFFSETS;
  return {
    version: bytes[o.version],
    bump: bytes[o.bump],
    vaultBump: bytes[o.vaultBump],
    coordinatorProgram: key(bytes, o.coordinatorProgram),
    coordinator: key(bytes, o.coordinator),
    mint: key(bytes, o.mint),
    vault: key(bytes, o.vault),
    authority: key(bytes, o.authority),
    totalClaimed: v.getBigUint64(o.totalClaimed, true),
    participants: v.getBigUint64(o.participants, true),
  };
}

/** Decodes a participant account (throws {@linkcode TreasurerAccountDecodeError}). */
export function decodeParticipantAccount(bytes: Uint8Array): ParticipantAccount {
  const v = check(bytes, PARTICIPANT_BYTES, PARTICIPANT_MAGIC_TEXT, "participant");
  const o = PARTICIPANT_OFFSETS;
  return {
    version: bytes[o.version],
    bump: bytes[o.bump],
    treasury: key(bytes, o.treasury),
    user: key(bytes, o.user),
    claimed: v.getBigUint64(o.claimed, true),
  };
}
