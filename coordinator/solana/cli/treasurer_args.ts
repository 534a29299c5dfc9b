/**
 * The treasurer's operator and client commands (`deno task solana treasury-create`,
 * `treasury-top-up`, `treasury-claim`, `json-dump-treasury`): their flags and the check that
 * turns parsed flags into one typed command. args.ts lists them with the run commands;
 * treasurer_commands.ts runs them.
 *
 * @module
 */
import type { Address } from "@solana/kit";
import { unprintableProblem, UsageError } from "../../../common/mod.ts";
import { DEFAULT_PROGRAM_ID, DEFAULT_RPC_URL, DEFAULT_TREASURER_PROGRAM_ID } from "../rpc/mod.ts";
import {
  type CommandEntry,
  commandFamily,
  pubkeyFlag as pubkey,
  rpcUrlFlag,
  stringFlag as str,
} from "./command_flags.ts";

const U64_MAX = (1n << 64n) - 1n;

/** Flags every treasurer command takes: where the RPC, the programs and the run are. */
const TREASURER_COMMON_FLAGS = {
  rpc: str("URL", "JSON-RPC endpoint", { default: DEFAULT_RPC_URL }),
  "wallet-private-key-path": str(
    "FILE",
    "keypair JSON (64 numbers, as solana-keygen writes); signs and pays (every command but " +
      "json-dump-treasury)",
  ),
  "program-id": str("PUBKEY", "coordinator program", { default: DEFAULT_PROGRAM_ID }),
  "treasurer-program-id": str("PUBKEY", "treasurer program", {
    default: DEFAULT_TREASURER_PROGRAM_ID,
  }),
  "run-id": str("ID", "the run (at most 32 bytes); with the main authority it gives the run"),
  "main-authority": str(
    "PUBKEY",
    "who created the run; with --run-id it gives the run's account address",
    { defaultText: "the wallet" },
  ),
  coordinator: str("ADDRESS", "the run's account address (instead of --run-id)"),
} as const;

/** Every treasurer flag, to type the parsed values with (args.ts adds them to its table). */
export const TREASURER_FLAG_TYPES = {
  ...TREASURER_COMMON_FLAGS,
  mint: str("", ""),
  amount: str("", ""),
  from: str("", ""),
  to: str("", ""),
  participant: str("", ""),
} as const;

const treasurerCommand = commandFamily(TREASURER_COMMON_FLAGS);

const RUN = "(--run-id ID [--main-authority PUBKEY] | --coordinator ADDRESS)";

/** The treasurer commands, by name: summary and flags (with the common ones). */
export const TREASURER_COMMANDS: Readonly<Record<string, CommandEntry>> = {
  "treasury-create": treasurerCommand(
    "treasury-create",
    "create a run's treasury and its token vault (the run's main authority)",
    `${RUN} --mint PUBKEY [options]`,
    { mint: str("PUBKEY", "the SPL Token mint the treasury pays in", { required: true }) },
  ),
  "treasury-top-up": treasurerCommand(
    "treasury-top-up",
    "move tokens from the wallet's token account into a run's treasury vault (anyone)",
    `${RUN} --amount N --from TOKEN_ACCOUNT [options]`,
    {
      amount: str("N", "how many base units", { required: true }),
      from: str("TOKEN_ACCOUNT", "the wallet's token account of the treasury's mint", {
        required: true,
      }),
    },
  ),
  "treasury-claim": treasurerCommand(
    "treasury-claim",
    "claim one token per point the wallet earned in a run and was not yet paid for (the first " +
      "time, creating its participant account)",
    `${RUN} --to TOKEN_ACCOUNT [options]`,
    {
      to: str("TOKEN_ACCOUNT", "the wallet's token account of the treasury's mint", {
        required: true,
      }),
    },
  ),
  "json-dump-treasury": treasurerCommand(
    "json-dump-treasury",
    "print a run's treasury (and a participant's account and points) as JSON",
    `${RUN} [--participant PUBKEY] [options]`,
    { participant: str("PUBKEY", "also print this user's participant account and points") },
  ),
};

/** Options every treasurer command shares. */
export interface TreasurerCommonArgs {
  rpc: string;
  walletPath: string | null;
  programId: Address;
  treasurerProgramId: Address;
  /** The run: its account address, or its id with its main authority (null: the wallet). */
  run: { coordinator: Address } | { runId: string; mainAuthority: Address | null };
}

/** One treasurer command. */
export type TreasurerCommand =
  | { command: "treasury-create"; mint: Address }
  | { command: "treasury-top-up"; amount: bigint; from: Address }
  | { command: "treasury-claim"; to: Address }
  | { command: "json-dump-treasury"; participant: Address | null };

/** A parsed treasurer command line. */
export type TreasurerArgs = TreasurerCommand & { treasurer: TreasurerCommonArgs };

type Values = { [K in keyof typeof TREASURER_FLAG_TYPES]?: string };

/** Turns a treasurer command's parsed flags into its typed command (UsageErrors name the flag). */
export function checkTreasurerArgs(
  command: string,
  values: Values,
  positionals: readonly string[],
): TreasurerArgs {
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const rpc = rpcUrlFlag(values.rpc ?? DEFAULT_RPC_URL);
  let run: TreasurerCommonArgs["run"];
  const runId = values["run-id"];
  if (values.coordinator !== undefined) {
    if (runId !== undefined || values["main-authority"] !== undefined) {
      throw new UsageError("--coordinator names the run: leave out --run-id and --main-authority");
    }
    run = { coordinator: pubkey("coordinator", values.coordinator) };
  } else {
    if (runId === undefined || runId === "") {
      throw new UsageError(`${command} needs --run-id ID or --coordinator ADDRESS`);
    }
    const bytes = new TextEncoder().encode(runId).length;
    if (bytes > 32) throw new UsageError(`--run-id is ${bytes} bytes, at most 32 allowed`);
    const problem = unprintableProblem(runId);
    if (problem !== null) throw new UsageError(`--run-id ${problem}`);
    run = {
      runId,
      mainAuthority: values["main-authority"] === undefined
        ? null
        : pubkey("main-authority", values["main-authority"]),
    };
  }
  const treasurer: TreasurerCommonArgs = {
    rpc,
    walletPath: values["wallet-private-key-path"] ?? null,
    programId: values["program-id"] === undefined
      ? DEFAULT_PROGRAM_ID
      : pubkey("program-id", values["program-id"]),
    treasurerProgramId: values["treasurer-program-id"] === undefined
      ? DEFAULT_TREASURER_PROGRAM_ID
      : pubkey("treasurer-program-id", values["treasurer-program-id"]),
    run,
  };
  if (command !== "json-dump-treasury" && treasurer.walletPath === null) {
    throw new UsageError(`${command} needs --wallet-private-key-path FILE`);
  }
  const required = (flag: "mint" | "amount" | "from" | "to") => {
    const text = values[flag];
    if (text === undefined) throw new UsageError(`${command} needs --${flag}`);
    return text;
  };
  switch (command) {
    case "treasury-create":
      return { command, mint: pubkey("mint", required("mint")), treasurer };
    case "treasury-top-up": {
      const text = required("amount");
      if (!/^\d{1,20}$/.test(text) || BigInt(text) > U64_MAX || BigInt(text) === 0n) {
        throw new UsageError(`--amount must be a whole number in 1..2^64 - 1, found "${text}"`);
      }
      return { command, amount: BigInt(text), from: pubkey("from", required("from")), treasurer };
    }
    case "treasury-claim":
      return { command, to: pubkey("to", required("to")), treasurer };
    case "json-dump-treasury":
      return {
        command,
        participant: values.participant === undefined
          ? null
          : pubkey("participant", values.participant),
        treasurer,
      };
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}
