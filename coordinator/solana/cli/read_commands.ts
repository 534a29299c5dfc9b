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
  associatedTokenAddress,
  coordinatorAccountFilters,
  coordinatorAddress,
  decodeCoordinatorAccount,
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
  runSummary,
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
export async function accountInfo(rpc: SolanaRpcClient, at: Address): Promise<AccountInfo | null> {
  const r = await rpc.call<{ value: { owner: string; data: [string, string] } | null }>(
    "getAccountInfo",
    [at, { encoding: "base64", commitment: "confirmed" }],
  );
  if (r.value === null) return null;
  return { owner: address(r.value.owner), data: decodeAccountData(r.value.data) };
}

/** Every coordinator account of the program, decoded, by address (undecodable ones left out). */
async function listRuns(rpc: SolanaRpcClient, programId: Address): Promise<RunSummary[]> {
  const filters = coordinatorAccountFilters().map((f) =>
    "dataSize" in f
      ? { dataSize: Number(f.dataSize) }
      : { memcmp: { ...f.memcmp, offset: Number(f.memcmp.offset) } }
  );
  const accounts = await rpc.call<{ pubkey: string; account: { data: [string, string] } }[]>(
    "getProgramAccounts",
    [programId, { encoding: "base64", commitment: "confirmed", filters }],
  );
  const runs: RunSummary[] = [];
  for (const { pubkey, account } of accounts) {
    try {
      runs.push(
        runSummary(address(pubkey), decodeCoordinatorAccount(decodeAccountData(account.data))),
      );
    } catch {
      // Another layout version's account: not a run this tool can read.
    }
  }
  return runs.sort((a, b) => a.runId.localeCompare(b.runId) || a.address.localeCompare(b.address));
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
