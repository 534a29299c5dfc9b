/**
 * The treasurer's addresses (program-derived, as treasurer.c derives them) and its instructions
 * as `@solana/kit` objects, each with the account list treasurer.c reads; plus the SPL Token
 * transfer that tops a treasury's vault up (no treasurer instruction is needed for that).
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
  SYSTEM_PROGRAM_ADDRESS as TREASURER_SYSTEM_PROGRAM_ADDRESS,
  writableAccount as w,
} from "../token_kit/mod.ts";
import { encodeTreasurerInstruction, type TreasurerInstruction } from "./instructions.ts";

/** The SPL Token program (Token-2022 is not accepted), and the system program. */
export { TOKEN_PROGRAM_ADDRESS, TREASURER_SYSTEM_PROGRAM_ADDRESS };

/** A run's treasury: the PDA of `["treasury", coordinator account]`. */
export async function treasuryAddress(programId: Address, coordinator: Address): Promise<Address> {
  return await derivedAddress(programId, ["treasury", enc(coordinator)]);
}

/** The treasury's token vault: the PDA of `["vault", treasury]`. */
export async function treasuryVaultAddress(
  programId: Address,
  treasury: Address,
): Promise<Address> {
  return await derivedAddress(programId, ["vault", enc(treasury)]);
}

/** A user's participant account in a treasury: the PDA of `["participant", treasury, user]`. */
export async function participantAddress(
  programId: Address,
  opts: { treasury: Address; user: Address },
): Promise<Address> {
  return await derivedAddress(programId, ["participant", enc(opts.treasury), enc(opts.user)]);
}

function instruction(
  programId: Address,
  accounts: AccountMeta[],
  ix: TreasurerInstruction,
): Instruction {
  return { programAddress: programId, accounts, data: encodeTreasurerInstruction(ix) };
}

/** treasury_create: the run's main authority pays for the treasury and its vault. */
export async function treasuryCreateInstruction(opts: {
  programId: Address;
  authority: TransactionSigner;
  coordinatorProgram: Address;
  coordinator: Address;
  mint: Address;
}): Promise<{ treasury: Address; vault: Address; instruction: Instruction }> {
  const treasury = await treasuryAddress(opts.programId, opts.coordinator);
  const vault = await treasuryVaultAddress(opts.programId, treasury);
  const accounts = [
    w(treasury),
    s(opts.authority, true),
    r(opts.coordinator),
    r(opts.mint),
    w(vault),
    r(TREASURER_SYSTEM_PROGRAM_ADDRESS),
    r(TOKEN_PROGRAM_ADDRESS),
  ];
  return {
    treasury,
    vault,
    instruction: instruction(opts.programId, accounts, {
      kind: "TreasuryCreate",
      coordinatorProgram: opts.coordinatorProgram,
    }),
  };
}

/** participant_create: the user pays for its participant account. */
export async function participantCreateInstruction(opts: {
  programId: Address;
  treasury: Address;
  user: TransactionSigner;
}): Promise<{ participant: Address; instruction: Instruction }> {
  const participant = await participantAddress(opts.programId, {
    treasury: opts.treasury,
    user: opts.user.address,
  });
  return {
    participant,
    instruction: instruction(opts.programId, [
      w(opts.treasury),
      w(participant),
      s(opts.user, true),
      r(TREASURER_SYSTEM_PROGRAM_ADDRESS),
    ], { kind: "ParticipantCreate" }),
  };
}

/** participant_claim: every earned point not yet paid for, into the user's `destination`. */
export async function participantClaimInstruction(opts: {
  programId: Address;
  treasury: Address;
  coordinator: Address;
  user: TransactionSigner;
  destination: Address;
}): Promise<Instruction> {
  return instruction(opts.programId, [
    w(opts.treasury),
    w(
      await participantAddress(opts.programId, {
        treasury: opts.treasury,
        user: opts.user.address,
      }),
    ),
    s(opts.user),
    r(opts.coordinator),
    w(await treasuryVaultAddress(opts.programId, opts.treasury)),
    w(opts.destination),
    r(TOKEN_PROGRAM_ADDRESS),
  ], { kind: "ParticipantClaim" });
}

/**
 * SPL Token Transfer (tag 3) of `amount` from `source` (owned by `owner`, who signs) to
 * `destination`: how anyone tops a treasury's vault up.
 */
export function tokenTransferInstruction(opts: {
  source: Address;
  destination: Address;
  owner: TransactionSigner;
  amount: bigint;
}): Instruction {
  if (opts.amount < 0n || opts.amount >= 1n << 64n) {
    throw new RangeError(`amount must be in [0, 2^64 - 1], found ${opts.amount}`);
  }
  const data = new Uint8Array(9);
  data[0] = 3;
  new DataView(data.buffer).setBigUint64(1, opts.amount, true);
  return {
    programAddress: TOKEN_PROGRAM_ADDRESS,
    accounts: [w(opts.source), w(opts.destination), s(opts.owner)],
    data,
  };
}
