/**
 * What the token programs' instructions share: the SPL Token and system program addresses, the
 * account-meta helpers their account lists are written with, and their program-derived addresses.
 *
 * @module
 */
import {
  AccountRole,
  type Address,
  address,
  getAddressEncoder,
  getProgramDerivedAddress,
  type TransactionSigner,
} from "@solana/kit";

/** The SPL Token program (Token-2022 is not accepted). */
export const SPL_TOKEN_PROGRAM_ADDRESS: Address = address(
  "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
);
/** The system program. */
export const SYSTEM_PROGRAM_ADDRESS: Address = address("11111111111111111111111111111111");

/** An instruction's account: its address, its role, and its signer when it signs. */
export type AccountMeta = { address: Address; role: AccountRole; signer?: TransactionSigner };

/** A writable account. */
export const writableAccount = (a: Address): AccountMeta => ({
  address: a,
  role: AccountRole.WRITABLE,
});
/** A read-only account. */
export const readonlyAccount = (a: Address): AccountMeta => ({
  address: a,
  role: AccountRole.READONLY,
});
/** A signer's account, read-only unless `isWritable`. */
export const signerAccount = (t: TransactionSigner, isWritable = false): AccountMeta => ({
  address: t.address,
  role: isWritable ? AccountRole.WRITABLE_SIGNER : AccountRole.READONLY_SIGNER,
  signer: t,
});

/** The 32 bytes of an address, as a PDA seed. */
export const addressBytes = (a: Address): Uint8Array => getAddressEncoder().encode(a) as Uint8Array;

/** The program-derived address of `seeds` under `programId` (its bump dropped). */
export async function derivedAddress(
  programId: Address,
  seeds: readonly (string | Uint8Array)[],
): Promise<Address> {
  const [at] = await getProgramDerivedAddress({ programAddress: programId, seeds: [...seeds] });
  return at;
}
