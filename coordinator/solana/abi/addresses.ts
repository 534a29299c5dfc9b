/**
 * Where a run's coordinator account lives. The account (216 KiB) is created by the
 * run's main authority with the system program's `createAccountWithSeed`, seed = the run
 * id, owner = the coordinator program; `init_coordinator` checks the address, so anyone
 * who knows the main authority and the run id finds the run:
 * `address = sha256(mainAuthority || runId || programId)`.
 *
 * (Psyche derives a PDA from `["coordinator", run_id]`; a PDA account that large would
 * need the program to create it by CPI. The seed address needs no CPI and no PDA bump.)
 *
 * @module
 */

import { type Address, createAddressWithSeed, getBase58Decoder } from "@solana/kit";
import { ACCOUNT_MAGIC, ACCOUNT_SIZE } from "./account.ts";

/** Options of {@linkcode coordinatorAddress}. */
export interface CoordinatorAddressOptions {
  mainAuthority: Address;
  /** 1..32 UTF-8 bytes. */
  runId: string;
  programId: Address;
}

/**
 * The address of the run's coordinator account.
 *
 * @example
 * ```ts
 * import { address } from "@solana/kit";
 * import { coordinatorAddress } from "./addresses.ts";
 * const mainAuthority = address("11111111111111111111111111111112");
 * const programId = address("PsyCoord11111111111111111111111111111111111");
 * const at = await coordinatorAddress({ mainAuthority, runId: "demo", programId });
 * // createWithSeed: the same authority, run id and program always give the same account
 * if (at !== await coordinatorAddress({ mainAuthority, runId: "demo", programId })) {
 *   throw new Error("not deterministic");
 * }
 * ```
 */
export function coordinatorAddress(opts: CoordinatorAddressOptions): Promise<Address> {
  const bytes = new TextEncoder().encode(opts.runId);
  if (bytes.length < 1 || bytes.length > 32) {
    throw new RangeError(`runId must be 1..32 UTF-8 bytes, found ${bytes.length}`);
  }
  return createAddressWithSeed({
    baseAddress: opts.mainAuthority,
    programAddress: opts.programId,
    seed: opts.runId,
  });
}

/**
 * `getProgramAccounts` filters that select the program's coordinator accounts (every
 * run): the layout's size and the `PSYCOORD` magic at offset 0 (base58, as RPC wants it).
 * Runs are found this way when the main authority is not known.
 */
export function coordinatorAccountFilters(): [
  { dataSize: bigint },
  { memcmp: { offset: bigint; bytes: string; encoding: "base58" } },
] {
  return [
    { dataSize: BigInt(ACCOUNT_SIZE) },
    {
      memcmp: {
        offset: 0n,
        bytes: getBase58Decoder().decode(ACCOUNT_MAGIC),
        encoding: "base58",
      },
    },
  ];
}
