/**
 * Runs the read-only commands (list-runs, show-run, show-user, json-dump-user, can-join): fetches
 * the accounts over RPC and prints reads.ts's views, as text or (`--json`) as JSON. Nothing is
 * signed; --wallet-private-key-path only names the wallet when --wallet is left out.
 *
 * @module
 */
import { type Address, address, getAddressDecoder, getAddressEncoder } from "@solana/kit";
import { UsageError } from "../../../common/mod.ts";
import { EXIT_OK } from "../../../cli/entry.ts";
import {
  type AccountSlice,
  associatedTokenAddress,
  coordinatorAccountFilters,
  coordinatorAddress,
  decodeCoordinatorAccount,
  decodeNonce,
  decodeRunHead,
  decodeRunListing,
  registrySlice,
  RUN_LISTING_SLICES,
  type RunHead,
  runListingOf,
} from "../abi/mod.ts";
import { decodeAccountData, loadWallet, SolanaRpcClient } from "../rpc/mod.ts";
import {
  decodeParticipantAccount,
  decodeTreasuryAccount,
  participantAddress,
  treasuryAddress,
} from "../treasurer/mod.ts";
import type { CommonArgs, ReadCommand } from "./args.ts";
import { readRun, runJson } from "./operator.ts";
import {
  canJoin,
  type DepositSource,
  formatRun,
  formatRuns,
  formatUser,
  formatVerdict,
  type RunSummary,
  runSummaryOf,
  tokenAccountOf,
  userJson,
  type UserTreasury,
  userTreasury,
} from "./reads.ts";

/** can-join's exit code when the wallet may not join (0 when it may; 1 and 2 as usual). */
export const EXIT_CANNOT_JOIN = 3;

/** Where output goes. */
interface Io {
  write(line: string): void;
}

/** An account's owning program and data. */
export interface AccountInfo {
  owner: Address;
  data: Uint8Array;
}

/** The account at `at` (its owner and data), or null when none exists. */
export async function accountInfo(
  rpc: Pick<SolanaRpcClient, "call">,
  at: Address,
): Promise<AccountInfo | null> {
  const r = await rpc.call<{ value: { owner: string; data: [string, string] } | null }>(
    "getAccountInfo",
    [at, { encoding: "base64", commitment: "confirmed" }],
  );
  if (r.value === null) return null;
  return { owner: address(r.value.owner), data: decodeAccountData(r.value.data) };
}

/** The most accounts one getMultipleAccounts takes (Solana's RPC limit). */
const MAX_MULTIPLE_ACCOUNTS = 100;

/** Sliced account data as the RPC returns it. */
type RpcData = { data: [string, string] };

/** A run's head, or null when it must be read whole (the RPC returned more or less). */
interface Found {
  at: Address;
  head: RunHead | null;
}

/**
 * Every coordinator account of the program as list-runs shows it (undecodable ones left out).
 * Reads a few slices of each run (abi/run_listing.ts), about 1.3 KB plus 72 bytes a
 * registration, not its 227,888 bytes: getProgramAccounts for the heads, then
 * getMultipleAccounts for the rest, each answered at a slot no older than the last
 * (minContextSlot). The nonce, read again last, grows with every instruction: a run whose
 * nonce moved between the reads, or whose slice came back the wrong size, is read whole, so
 * every line is one state of its run, as when list-runs read whole accounts.
 */
export async function listRuns(
  rpc: Pick<SolanaRpcClient, "call">,
  programId: Address,
): Promise<RunSummary[]> {
  const filters = coordinatorAccountFilters().map((f) =>
    "dataSize" in f
      ? { dataSize: Number(f.dataSize) }
      : { memcmp: { ...f.memcmp, offset: Number(f.memcmp.offset) } }
  );
  const { head: headSlice, rates, deposit, nonce } = RUN_LISTING_SLICES;
  const listed = await rpc.call<{
    context: { slot: number };
    value: { pubkey: string; account: RpcData }[];
  }>("getProgramAccounts", [programId, {
    encoding: "base64",
    commitment: "confirmed",
    filters,
    dataSlice: headSlice,
    withContext: true,
  }]);
  let slot = Number(listed.context.slot);
  /** Each run's `slice`, or null where the account is gone or the slice came back resized. */
  const read = async (runs: Found[], slice: AccountSlice) => {
    const r = await rpc.call<{ context: { slot: number }; value: (RpcData | null)[] }>(
      "getMultipleAccounts",
      [runs.map((f) => f.at), {
        encoding: "base64",
        commitment: "confirmed",
        dataSlice: slice,
        minContextSlot: slot,
      }],
    );
    slot = Math.max(slot, Number(r.context.slot));
    return r.value.map((a) => {
      const data = a === null ? null : decodeAccountData(a.data);
      return data?.length === slice.length ? data : null;
    });
  };

  const found: Found[] = [];
  for (const { pubkey, account } of listed.value) {
    const data = decodeAccountData(account.data);
    try {
      found.push({
        at: address(pubkey),
        head: data.length === headSlice.length ? decodeRunHead(data) : null,
      });
    } catch {
      // Another layout version's account: not a run this tool can read.
    }
  }
  /** `slice` of every run, a getMultipleAccounts per 100 runs. */
  const readAll = async (runs: Found[], slice: AccountSlice) => {
    const got = new Map<Address, Uint8Array | null>();
    for (let i = 0; i < runs.length; i += MAX_MULTIPLE_ACCOUNTS) {
      const chunk = runs.slice(i, i + MAX_MULTIPLE_ACCOUNTS);
      (await read(chunk, slice)).forEach((data, j) => got.set(chunk[j].at, data));
    }
    return got;
  };
  // One slice serves all the runs of a read, so the registries are read by their length
  // rounded up to a power of two: at most twice a run's registry, one read per size (of 9).
  const registered = (f: Found) => f.head?.registered ?? 0;
  const joined = found.filter((f) => registered(f) > 0);
  const registries = new Map<Address, Uint8Array | null>();
  for (const size of new Set(joined.map((f) => powerOfTwo(registered(f))))) {
    const same = joined.filter((f) => powerOfTwo(registered(f)) === size);
    for (const [at, data] of await readAll(same, registrySlice(size))) registries.set(at, data);
  }
  const ratesData = await readAll(found, rates);
  const depositData = await readAll(found, deposit);
  const nonces = await readAll(found, nonce);
  const runs: RunSummary[] = [];
  for (const { at, head } of found) {
    const r = head?.registered === 0 ? new Uint8Array(0) : registries.get(at) ?? null;
    const [e, d, n] = [ratesData, depositData, nonces].map((m) => m.get(at) ?? null);
    const same = head !== null && n !== null && decodeNonce(n) === head.nonce;
    const listing = same && r !== null && e !== null && d !== null
      ? decodeRunListing(head, { registry: r, rates: e, deposit: d })
      : await readWhole(rpc, at);
    if (listing !== null) runs.push(runSummaryOf(at, listing));
  }
  return runs.sort((a, b) => byCodeUnits(a.runId, b.runId) || byCodeUnits(a.address, b.address));
}

/**
 * Code-unit order, as a plain `sort()` gives: localeCompare depends on the machine's locale,
 * and ICU's collation puts address "c1…" before "Ht…", the other way round from sort().
 */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The least power of two at or above `n` (n ≥ 1). */
function powerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}

/** The run at `at` read and decoded whole, or null when it is gone or not a run of this layout. */
async function readWhole(rpc: Pick<SolanaRpcClient, "call">, at: Address) {
  const account = await accountInfo(rpc, at);
  if (account === null) return null;
  try {
    return runListingOf(decodeCoordinatorAccount(account.data));
  } catch {
    return null;
  }
}

/** The run's treasury as json-dump-user shows it, or null when the run has none. */
async function readUserTreasury(
  rpc: SolanaRpcClient,
  treasurerProgramId: Address,
  coordinator: Address,
  wallet: Address,
): Promise<UserTreasury | null> {
  const at = await treasuryAddress(treasurerProgramId, coordinator);
  const data = await rpc.accountData(at);
  if (data === null) return null;
  const treasury = decodeTreasuryAccount(data);
  const vault = await accountInfo(rpc, treasury.vault);
  const vaultAmount = tokenAccountOf(vault?.owner ?? null, vault?.data ?? null)?.amount ?? 0n;
  const pAt = await participantAddress(treasurerProgramId, { treasury: at, user: wallet });
  const pData = await rpc.accountData(pAt);
  return userTreasury(at, treasury, vaultAmount, {
    address: pAt,
    claimed: pData === null ? null : decodeParticipantAccount(pData).claimed,
  });
}

/** Runs one read command; returns the exit code (can-join: EXIT_CANNOT_JOIN when not). */
export async function runReadCommand(
  args: ReadCommand & { common: CommonArgs },
  io: Io,
): Promise<number> {
  const rpc = new SolanaRpcClient({ url: args.common.rpc });
  if (args.command === "list-runs") {
    const runs = await listRuns(rpc, args.common.programId);
    io.write(args.json ? JSON.stringify(runs, null, 2) : formatRuns(runs));
    return EXIT_OK;
  }
  const signer = args.common.walletPath === null
    ? null
    : (await loadWallet(args.common.walletPath)).signer.address;
  const coordinator = args.common.coordinator ?? await coordinatorAddress({
    mainAuthority: args.common.mainAuthority ?? signer ?? noRun(args.command),
    runId: args.runId,
    programId: args.common.programId,
  });
  const account = await readRun(rpc, coordinator);
  if (args.command === "show-run") {
    io.write(
      args.json
        ? JSON.stringify({ address: coordinator, ...runJson(account) }, null, 2)
        : formatRun(coordinator, account),
    );
    return EXIT_OK;
  }
  const wallet = args.wallet ?? signer;
  if (wallet === null) {
    throw new UsageError(`${args.command} needs --wallet PUBKEY or --wallet-private-key-path FILE`);
  }
  const walletKey = getAddressEncoder().encode(wallet) as Uint8Array;
  if (args.command === "can-join") {
    const d = account.joinDeposit;
    let source: DepositSource | null = null;
    if (d.amount > 0n && d.mint !== null) {
      const from = args.depositTokenAccount ??
        await associatedTokenAddress(wallet, getAddressDecoder().decode(d.mint));
      const info = await accountInfo(rpc, from);
      source = { address: from, account: tokenAccountOf(info?.owner ?? null, info?.data ?? null) };
    }
    const verdict = canJoin(account, walletKey, source);
    io.write(
      args.json
        ? JSON.stringify(verdict, null, 2)
        : formatVerdict(account.state.runId, wallet, verdict),
    );
    return verdict.canJoin ? EXIT_OK : EXIT_CANNOT_JOIN;
  }
  const treasury = await readUserTreasury(rpc, args.treasurerProgramId, coordinator, wallet);
  const json = userJson({ address: coordinator, account }, wallet, walletKey, treasury);
  io.write(args.json ? JSON.stringify(json, null, 2) : formatUser(json));
  return EXIT_OK;
}

function noRun(command: string): never {
  throw new UsageError(
    `${command} needs --coordinator, --main-authority or --wallet-private-key-path to find the run`,
  );
}
