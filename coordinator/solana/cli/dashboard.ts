/**
 * `deno task dashboard --rpc URL --run-id ID (--main-authority PUBKEY | --coordinator ADDRESS)`:
 * the live dashboard of coordinator/dashboard/ for a run on Solana. It reads the run's account
 * over JSON-RPC every `--poll-ms`, turns its coordinator state (and the registry's pending keys
 * and earned and slashed points) into the dashboard's snapshot and serves the page, `/events`, `/view.json` and `/metrics`.
 * Each poll also reads the run's newest transactions (`getSignaturesForAddress`,
 * `getTransaction`) for the loss curve: the metadata tail of each accepted witness instruction
 * (witness_losses.ts), and the balances of the run's treasury and of the mining pools named with
 * `--pool` (the pool program links a pool to no run). Read-only: it needs no wallet. See
 * docs/dashboard.md.
 *
 * @module
 */
import type { Address } from "@solana/kit";
import {
  denoEnv,
  type EnvLookup,
  explainEnv,
  type FlagValues,
  helpText,
  parseArgsOrExit,
  parseFlags,
} from "../../../cli/entry.ts";
import { toHex, unprintableProblem, UsageError } from "../../../common/mod.ts";
import {
  type FundsView,
  type RunSnapshot,
  snapshotOf,
  startDashboard,
} from "../../dashboard/mod.ts";
import { type CoordinatorAccount, coordinatorAddress } from "../abi/mod.ts";
import {
  DEFAULT_POOL_PROGRAM_ID,
  DEFAULT_PROGRAM_ID,
  DEFAULT_RPC_URL,
  DEFAULT_TREASURER_PROGRAM_ID,
  SolanaRpcClient,
} from "../rpc/mod.ts";
import { decodeTreasuryAccount, treasuryAddress } from "../treasurer/mod.ts";
import { decodePoolAccount } from "../pool/mod.ts";
import { readRun } from "./operator.ts";
import { accountInfo } from "./read_commands.ts";
import { tokenAccountOf } from "./reads.ts";
import { newWitnessEvents } from "./witness_losses.ts";
import { pubkeyFlag as pubkey, rpcUrlFlag } from "./command_flags.ts";

/** The flags of `deno task dashboard`. */
export const DASHBOARD_SPEC = {
  usage: "deno task dashboard --run-id ID (--main-authority PUBKEY | --coordinator ADDRESS) " +
    "[--rpc URL] [--program-id PUBKEY] [--treasurer-program-id PUBKEY] [--pool ADDRESS] " +
    "[--pool-program-id PUBKEY] [--port P] [--hostname H] [--poll-ms N]",
  summary: "The live dashboard and Prometheus metrics of a run on Solana: reads the run's " +
    "account over JSON-RPC every --poll-ms and serves the page at the printed URL.",
  flags: {
    rpc: {
      type: "string",
      value: "URL",
      description: "JSON-RPC endpoint",
      default: DEFAULT_RPC_URL,
    },
    "run-id": { type: "string", value: "ID", description: "the run", required: true },
    "main-authority": {
      type: "string",
      value: "PUBKEY",
      description: "who created the run; with the run id it gives the run's account address",
    },
    coordinator: {
      type: "string",
      value: "ADDRESS",
      description: "the run's account address (instead of deriving it)",
    },
    "program-id": {
      type: "string",
      value: "PUBKEY",
      description: "coordinator program",
      default: DEFAULT_PROGRAM_ID,
    },
    "treasurer-program-id": {
      type: "string",
      value: "PUBKEY",
      description: "treasurer program (the run's treasury is its PDA of the run's account)",
      default: DEFAULT_TREASURER_PROGRAM_ID,
    },
    pool: {
      type: "string",
      value: "ADDRESS",
      description: "a mining pool account to show the balances of (repeatable; pools name no run)",
      multiple: true,
    },
    "pool-program-id": {
      type: "string",
      value: "PUBKEY",
      description: "mining pool program (a --pool account must be its)",
      default: DEFAULT_POOL_PROGRAM_ID,
    },
    port: { type: "string", value: "P", description: "dashboard port (0: any free)", default: "0" },
    hostname: {
      type: "string",
      value: "H",
      description: "address to listen on",
      default: "127.0.0.1",
    },
    "poll-ms": {
      type: "string",
      value: "N",
      description: "how often to read the account (ms)",
      default: "1000",
    },
  },
} as const;

/** Usage text. */
export const USAGE: string = helpText(DASHBOARD_SPEC);

/** Parsed flags. */
export interface DashboardArgs {
  rpc: string;
  runId: string;
  /** The run's account, or how to derive it. */
  run: { coordinator: Address } | { mainAuthority: Address; programId: Address };
  /** The coordinator program (witness instructions to any other program are not the run's). */
  programId: Address;
  /** The treasurer program, whose PDA of the run's account is the run's treasury. */
  treasurerProgramId: Address;
  /** Mining pools to show (`--pool`), and the program that must own them. */
  pools: Address[];
  poolProgramId: Address;
  port: number;
  hostname: string;
  pollMs: number;
}

/** Parses the flags; a {@link UsageError} names the bad one. */
export function parseDashboardArgs(
  argv: readonly string[],
  env: EnvLookup = {},
): DashboardArgs | "help" {
  const parsed = parseFlags(DASHBOARD_SPEC, argv, { env });
  if (parsed.help) return "help";
  if (parsed.positionals.length > 0) {
    throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`);
  }
  return explainEnv(parsed, () => checkDashboardArgs(parsed.values));
}

function checkDashboardArgs(values: FlagValues<typeof DASHBOARD_SPEC>): DashboardArgs {
  const rpc = rpcUrlFlag(values.rpc ?? DEFAULT_RPC_URL);
  const runId = values["run-id"];
  if (runId === undefined || runId === "") throw new UsageError("dashboard needs --run-id ID");
  const bytes = new TextEncoder().encode(runId).length;
  if (bytes > 32) throw new UsageError(`--run-id is ${bytes} bytes, at most 32 allowed`);
  const problem = unprintableProblem(runId);
  if (problem !== null) throw new UsageError(`--run-id ${problem}`);
  const main = values["main-authority"];
  const given = values.coordinator;
  if ((main === undefined) === (given === undefined)) {
    throw new UsageError(
      "dashboard needs one of --main-authority PUBKEY or --coordinator ADDRESS to find the run",
    );
  }
  const programId = pubkey("program-id", values["program-id"] ?? DEFAULT_PROGRAM_ID);
  const run = given !== undefined
    ? { coordinator: pubkey("coordinator", given) }
    : { mainAuthority: pubkey("main-authority", main!), programId };
  const port = values.port ?? "0";
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) {
    throw new UsageError(`--port must be a port number 0..65535, found "${port}"`);
  }
  const poll = values["poll-ms"] ?? "1000";
  if (!/^\d{1,7}$/.test(poll) || Number(poll) < 50) {
    throw new UsageError(`--poll-ms must be a whole number of milliseconds >= 50, found "${poll}"`);
  }
  const pools = (values.pool ?? []).map((p) => pubkey("pool", p));
  return {
    rpc,
    runId,
    run,
    programId,
    treasurerProgramId: pubkey(
      "treasurer-program-id",
      values["treasurer-program-id"] ?? DEFAULT_TREASURER_PROGRAM_ID,
    ),
    pools: [...new Set(pools)],
    poolProgramId: pubkey("pool-program-id", values["pool-program-id"] ?? DEFAULT_POOL_PROGRAM_ID),
    port: Number(port),
    hostname: values.hostname ?? "127.0.0.1",
    pollMs: Number(poll),
  };
}

/**
 * The dashboard's snapshot of a run account: its coordinator state, as pending the
 * registrations waiting for the next epoch (`active == nextActive`), and every registered
 * wallet's earned and slashed points, with `funds` (the treasury's and pools' balances) when given. Pure.
 */
export function accountSnapshot(account: CoordinatorAccount, funds?: FundsView): RunSnapshot {
  const pending = account.registry.filter((r) => r.active === account.nextActive);
  const earned = Object.fromEntries(
    account.registry.map((r) => [toHex(r.signer), r.earned.toString()]),
  );
  const slashed = Object.fromEntries(
    account.registry.map((r) => [toHex(r.signer), r.slashed.toString()]),
  );
  const snapshot = {
    ...snapshotOf(account.state, pending.map((r) => r.signer)),
    earned,
    slashed,
  };
  return funds === undefined ? snapshot : { ...snapshot, funds };
}

/**
 * The balances of the run's treasury (the treasurer's PDA of `coordinator`; null when none
 * exists) and of each pool in `opts.pools`. A pool account that is missing, not owned by the
 * pool program or not a pool throws, naming it.
 */
export async function readFunds(
  rpc: SolanaRpcClient,
  coordinator: Address,
  opts: { treasurerProgramId: Address; pools: readonly Address[]; poolProgramId: Address },
): Promise<FundsView> {
  const at = await treasuryAddress(opts.treasurerProgramId, coordinator);
  const data = await rpc.accountData(at);
  let treasury: FundsView["treasury"] = null;
  if (data !== null) {
    const t = decodeTreasuryAccount(data);
    const vault = await accountInfo(rpc, t.vault);
    const amount = tokenAccountOf(vault?.owner ?? null, vault?.data ?? null)?.amount ?? 0n;
    treasury = {
      address: at,
      mint: t.mint,
      vaultAmount: amount.toString(),
      totalClaimed: t.totalClaimed.toString(),
    };
  }
  const pools: FundsView["pools"][number][] = [];
  for (const address of opts.pools) {
    const info = await accountInfo(rpc, address);
    if (info === null) throw new Error(`no pool account at ${address}`);
    if (info.owner !== opts.poolProgramId) {
      throw new Error(`the account at ${address} belongs to ${info.owner}, not the pool program`);
    }
    const p = decodePoolAccount(info.data);
    pools.push({
      address,
      collateralMint: p.collateralMint,
      rewardsMint: p.rewardsMint,
      totalDeposited: p.totalDeposited.toString(),
      totalClaimable: p.totalClaimable.toString(),
      totalClaimed: p.totalClaimed.toString(),
    });
  }
  return { treasury, pools };
}

if (import.meta.main) {
  const args = parseArgsOrExit((a) => parseDashboardArgs(a, denoEnv), DASHBOARD_SPEC);
  const rpc = new SolanaRpcClient({ url: args.rpc });
  const at = "coordinator" in args.run
    ? args.run.coordinator
    : await coordinatorAddress({ runId: args.runId, ...args.run });
  let snapshot: RunSnapshot;
  try {
    const account = await readRun(rpc, at);
    if (account.state.runId !== args.runId) {
      throw new Error(`the account at ${at} is run "${account.state.runId}", not "${args.runId}"`);
    }
    snapshot = accountSnapshot(account, await readFunds(rpc, at, args));
  } catch (e) {
    console.error(`dashboard: ${(e as Error).message}`);
    Deno.exit(1);
  }
  const dashboard = startDashboard({
    hostname: args.hostname,
    port: args.port,
    snapshot: () => snapshot,
  });
  console.log(`dashboard ${dashboard.url} (run "${args.runId}" at ${at} via ${args.rpc})`);
  // A failed read keeps the last state on the page; each distinct error is logged once.
  let lastError: string | null = null;
  const seen = new Set<string>();
  const readLosses = async () => {
    for (const event of await newWitnessEvents(rpc, { coordinator: at, ...args, seen })) {
      dashboard.publish(event);
    }
  };
  const poll = async () => {
    try {
      snapshot = accountSnapshot(await readRun(rpc, at), await readFunds(rpc, at, args));
      dashboard.refresh();
      await readLosses();
      if (lastError !== null) console.error("dashboard: reading the run again");
      lastError = null;
    } catch (e) {
      const message = (e as Error).message;
      if (message !== lastError) console.error(`dashboard: cannot read the run: ${message}`);
      lastError = message;
    }
    timer = setTimeout(poll, args.pollMs);
  };
  let timer = setTimeout(poll, args.pollMs);
  const stop = () => {
    clearTimeout(timer);
    dashboard.close().then(() => Deno.exit(0));
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
