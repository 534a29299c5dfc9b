/**
 * `deno task solana <command>`: the operator's commands for coordinator runs on Solana
 * (create-run, update-config (config, model, metadata, and the relays and bootstrap peers the
 * run's clients meet at), set-paused, set-future-epoch-rates, set-join-deposit,
 * withdraw-deposit, sweep-forfeited, join-authorization create/delegate, tick, close-run,
 * json-dump-run, plus airdrop and keygen for local setups), the reads (list-runs, show-run,
 * show-user, json-dump-user, can-join: read_commands.ts), the mining pool's (pool-create,
 * pool-update, pool-extract, pool-claimable, pool-deposit, pool-claim, json-dump-pool:
 * pool_commands.ts) and the treasurer's (treasury-create, treasury-top-up, treasury-claim,
 * json-dump-treasury: treasurer_commands.ts). See args.ts for the flags and docs/solana.md for a
 * walk-through against `deno task localnet`.
 *
 * @module
 */
import { type Address, getAddressDecoder } from "@solana/kit";
import {
  isPoolArgs,
  isReadArgs,
  isTreasurerArgs,
  parseSolanaArgs,
  type ReadCommand,
  SOLANA_COMMANDS,
  type SolanaArgs,
  USAGE,
} from "./args.ts";
import { runPoolCommand } from "./pool_commands.ts";
import { runTreasurerCommand } from "./treasurer_commands.ts";
import { EXIT_CANNOT_JOIN, runReadCommand } from "./read_commands.ts";
import { readRun, runJson, RunOperator, type RunUpdate } from "./operator.ts";
import {
  denoEnv,
  type EnvLookup,
  EXIT_OK,
  EXIT_USAGE,
  helpText,
  usageLines,
} from "../../../cli/entry.ts";
import {
  associatedTokenAddress,
  checkWholeSecondDurations,
  coordinatorAddress,
  type MeetingAddress,
} from "../abi/mod.ts";
import { parseRunConfig } from "../../config/mod.ts";
import { UsageError } from "../../../common/mod.ts";
import {
  keypairJson,
  loadWallet,
  SolanaRpcClient,
  TransactionSender,
  type Wallet,
} from "../rpc/mod.ts";
import { generateIdentity } from "../../../net/mod.ts";

export { EXIT_CANNOT_JOIN, EXIT_OK, EXIT_USAGE };

/** The command failed (refused by the program, RPC down, bad file). */
export const EXIT_FAILURE = 1;

/** Where output goes. */
export interface CommandIo {
  write(line: string): void;
}

/** The command's run account: --coordinator, else derived from main authority and run id. */
function runAddress(args: SolanaArgs, runId: string, wallet: Wallet | null): Promise<Address> {
  if (args.common.coordinator !== null) return Promise.resolve(args.common.coordinator);
  const main = args.common.mainAuthority ?? wallet?.signer.address ?? null;
  if (main === null) {
    throw new UsageError(
      `${args.command} needs --coordinator, --main-authority or --wallet-private-key-path ` +
        "to find the run",
    );
  }
  return coordinatorAddress({ mainAuthority: main, runId, programId: args.common.programId });
}

/** "2 relay(s), 1 bootstrap peer(s)", or "no meeting addresses". */
function describeMeeting(list: readonly MeetingAddress[]): string {
  if (list.length === 0) return "no meeting addresses";
  const relays = list.filter((m) => m.kind === "Relay").length;
  return `${relays} relay(s), ${list.length - relays} bootstrap peer(s)`;
}

/**
 * Runs one parsed command; returns its exit code (EXIT_OK, or can-join's EXIT_CANNOT_JOIN).
 * Throws the underlying error (typed) when it fails.
 */
export async function runSolanaCommand(args: SolanaArgs, io: CommandIo): Promise<number> {
  if (isReadArgs(args)) return await runReadCommand(args, io);
  await runWriteCommand(args, io);
  return EXIT_OK;
}

/** A command that is not a read: the operator's, the pool's and the treasurer's. */
async function runWriteCommand(
  args: Exclude<SolanaArgs, { command: ReadCommand["command"] }>,
  io: CommandIo,
): Promise<void> {
  if (isPoolArgs(args)) return await runPoolCommand(args, io);
  if (isTreasurerArgs(args)) return await runTreasurerCommand(args, io);
  if (args.command === "help") {
    io.write(args.topic === undefined ? USAGE : helpText(SOLANA_COMMANDS[args.topic].spec));
    return;
  }
  if (args.command === "keygen") {
    const id = generateIdentity();
    await Deno.writeTextFile(args.out, keypairJson(id), { createNew: true, mode: 0o600 });
    const wallet = await loadWallet(args.out);
    io.write(`wrote ${args.out}: ${wallet.signer.address}`);
    return;
  }
  const rpc = new SolanaRpcClient({ url: args.common.rpc });
  const wallet = args.common.walletPath === null ? null : await loadWallet(args.common.walletPath);
  const operator = wallet === null ? null : new RunOperator({
    rpc,
    programId: args.common.programId,
    sender: new TransactionSender({ rpcs: [rpc], payer: wallet.signer }),
  });
  const need = (): RunOperator => {
    if (operator === null) {
      throw new UsageError(`${args.command} needs --wallet-private-key-path FILE`);
    }
    return operator;
  };
  switch (args.command) {
    case "create-run": {
      const op = need();
      const coordinator = await op.createRun({
        runId: args.runId,
        joinAuthority: args.joinAuthority ?? op.wallet.address,
        permissionless: args.permissionless,
      });
      io.write(`created run "${args.runId}" at ${coordinator}`);
      if (args.meetingAddresses.length > 0) {
        // A transaction of its own: with the account's creation it could pass 1,232 bytes.
        await op.update(coordinator, { meetingAddresses: args.meetingAddresses });
        io.write(`run "${args.runId}": ${describeMeeting(args.meetingAddresses)}`);
      }
      return;
    }
    case "update-config": {
      const coordinator = await runAddress(args, args.runId, wallet);
      const update: RunUpdate = {};
      if (args.configPath !== null) {
        const text = await Deno.readTextFile(args.configPath);
        const run = parseRunConfig(text, args.configPath);
        if (run.runId !== args.runId) {
          throw new UsageError(
            `${args.configPath} is for run "${run.runId}", but --run-id is "${args.runId}"`,
          );
        }
        try {
          checkWholeSecondDurations(run.config);
        } catch (e) {
          throw new UsageError(`${args.configPath}: ${(e as Error).message}`);
        }
        update.config = run.config;
        update.model = run.model;
      }
      if (Object.keys(args.metadata).length > 0) {
        // The instruction sets all four fields: keep the ones not given.
        const current = (await readRun(rpc, coordinator)).metadata;
        update.metadata = { ...current, ...args.metadata };
      }
      if (args.meetingAddresses !== null) update.meetingAddresses = args.meetingAddresses;
      await need().update(coordinator, update);
      const parts = [
        ...(args.configPath === null ? [] : [`config and model from ${args.configPath}`]),
        ...Object.keys(args.metadata),
        ...(args.meetingAddresses === null ? [] : [describeMeeting(args.meetingAddresses)]),
      ];
      io.write(`updated run "${args.runId}": ${parts.join(", ")}`);
      return;
    }
    case "set-paused": {
      const coordinator = await runAddress(args, args.runId, wallet);
      await need().setPaused(coordinator, args.paused);
      io.write(`run "${args.runId}" ${args.paused ? "paused" : "resumed"}`);
      return;
    }
    case "set-future-epoch-rates": {
      const coordinator = await runAddress(args, args.runId, wallet);
      const rates = {
        earningRateTotalShared: args.earningRateTotalShared,
        slashingRatePerClient: args.slashingRatePerClient,
      };
      await need().setFutureEpochRates(coordinator, rates);
      const said = [
        ...(rates.earningRateTotalShared === undefined
          ? []
          : [`earning rate ${rates.earningRateTotalShared}`]),
        ...(rates.slashingRatePerClient === undefined
          ? []
          : [`slashing rate ${rates.slashingRatePerClient}`]),
      ];
      io.write(`run "${args.runId}": ${said.join(", ")} from the next epoch`);
      return;
    }
    case "set-join-deposit": {
      const coordinator = await runAddress(args, args.runId, wallet);
      const vault = await need().setJoinDeposit(coordinator, args.mint, args.amount);
      io.write(
        args.amount === 0n
          ? `run "${args.runId}": no join deposit (vault ${vault})`
          : `run "${args.runId}": joining pays ${args.amount} of ${args.mint} into vault ${vault}`,
      );
      return;
    }
    case "withdraw-deposit":
    case "sweep-forfeited": {
      const coordinator = await runAddress(args, args.runId, wallet);
      const op = need();
      const d = (await readRun(rpc, coordinator)).joinDeposit;
      if (d.mint === null) throw new UsageError(`run "${args.runId}" has no join deposit`);
      const mint = getAddressDecoder().decode(d.mint);
      const to = args.tokenAccount ?? await associatedTokenAddress(op.wallet.address, mint);
      const withdraw = args.command === "withdraw-deposit";
      await (withdraw ? op.withdrawDeposit(coordinator, to) : op.sweepForfeited(coordinator, to));
      io.write(
        withdraw
          ? `run "${args.runId}": deposit returned to ${to}`
          : `run "${args.runId}": ${d.forfeited} forfeited swept to ${to}`,
      );
      return;
    }
    case "join-authorization-create": {
      const coordinator = await runAddress(args, args.runId, wallet);
      await need().grantAuthorizer(coordinator, args.authorizer);
      io.write(`run "${args.runId}": ${args.authorizer} may join and name delegates`);
      return;
    }
    case "join-authorization-delegate": {
      const coordinator = await runAddress(args, args.runId, wallet);
      await need().setDelegates(coordinator, args.delegates, args.clear);
      io.write(
        `run "${args.runId}": ${args.clear ? "cleared delegates, " : ""}added ` +
          `${args.delegates.length} delegate(s)`,
      );
      return;
    }
    case "tick": {
      const coordinator = await runAddress(args, args.runId, wallet);
      await need().tick(coordinator);
      io.write(`ticked run "${args.runId}"`);
      return;
    }
    case "close-run": {
      const coordinator = await runAddress(args, args.runId, wallet);
      const op = need();
      await op.closeRun(coordinator, args.spill ?? op.wallet.address);
      io.write(
        `closed run "${args.runId}" (${coordinator}); rent to ${args.spill ?? op.wallet.address}`,
      );
      return;
    }
    case "json-dump-run": {
      const coordinator = await runAddress(args, args.runId, wallet);
      const account = await readRun(rpc, coordinator);
      io.write(JSON.stringify({ address: coordinator, ...runJson(account) }, null, 2));
      return;
    }
    case "airdrop": {
      const to = need().wallet.address;
      await rpc.call<string>("requestAirdrop", [to, Number(args.lamports)]);
      io.write(`airdropped ${args.lamports} lamports to ${to}`);
      return;
    }
    default: {
      const unreachable: never = args;
      throw new Error(`unknown command ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Parses (`env` filling flags not given: `PSYCHE_*`) and runs; returns the exit code. */
export async function main(
  argv: readonly string[],
  io: CommandIo & { error(line: string): void },
  env: EnvLookup = {},
) {
  let args: SolanaArgs;
  try {
    args = parseSolanaArgs(argv, env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    const command = argv[0] !== undefined && Object.hasOwn(SOLANA_COMMANDS, argv[0])
      ? SOLANA_COMMANDS[argv[0]].spec
      : undefined;
    io.error(`error: ${e.message}\n\n${command === undefined ? USAGE : usageLines(command)}`);
    return EXIT_USAGE;
  }
  try {
    return await runSolanaCommand(args, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.error(e.message);
      return EXIT_USAGE;
    }
    io.error(`solana ${args.command}: ${(e as Error).message}`);
    return EXIT_FAILURE;
  }
}

if (import.meta.main) {
  Deno.exit(
    await main(Deno.args, {
      write: (l) => console.log(l),
      error: (l) => console.error(l),
    }, denoEnv),
  );
}
