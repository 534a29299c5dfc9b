/**
 * `deno task solana <command>` arguments, parsed into one typed command (never evaluated,
 * unknown flags refused, every error naming the flag). Execution is in main.ts.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { type Address, address } from "@solana/kit";
import { unprintableProblem, UsageError } from "../../../common/mod.ts";
import { DEFAULT_PROGRAM_ID, DEFAULT_RPC_URL } from "../rpc/mod.ts";

/** Usage text of `deno task solana`. */
export const USAGE = `Usage: deno task solana <command> [options]

Operator commands for the coordinator program (against deno task localnet, a
solana-test-validator, devnet or mainnet):

  create-run --run-id ID [--join-authority PUBKEY] [--permissionless]
  update-config --run-id ID [--config-path state.toml] [--name S] [--description S]
                [--num-parameters N] [--vocab-size N]
  set-paused --run-id ID pause|resume
  join-authorization create --run-id ID --authorizer PUBKEY
  join-authorization delegate --run-id ID --delegate PUBKEY [--delegate ...] [--clear]
  tick --run-id ID
  close-run --run-id ID [--spill PUBKEY] (halted runs; rent to --spill, default the wallet)
  json-dump-run --run-id ID
  airdrop --lamports N                 (localnet/devnet faucets only)
  keygen --out FILE                    write a new keypair file (solana-keygen format)

Common options:
  --rpc URL                            JSON-RPC endpoint (default ${DEFAULT_RPC_URL})
  --wallet-private-key-path FILE       keypair JSON (64 numbers, as solana-keygen writes);
                                       signs and pays (every command but json-dump-run)
  --program-id PUBKEY                  coordinator program (default ${DEFAULT_PROGRAM_ID})
  --main-authority PUBKEY              who created the run (default: the wallet); with the
                                       run id it gives the run's account address
  --coordinator ADDRESS                the run's account address (instead of deriving it)
  -h, --help`;

/** Options every command shares. */
export interface CommonArgs {
  rpc: string;
  walletPath: string | null;
  programId: Address;
  mainAuthority: Address | null;
  coordinator: Address | null;
}

/** One operator command. */
export type SolanaCommand =
  | { command: "help" }
  | { command: "create-run"; runId: string; joinAuthority: Address | null; permissionless: boolean }
  | {
    command: "update-config";
    runId: string;
    /** The state.toml whose config and model to set, or null to change metadata only. */
    configPath: string | null;
    /** Metadata fields to change (the others keep their on-chain values). */
    metadata: MetadataChange;
  }
  | { command: "set-paused"; runId: string; paused: boolean }
  | { command: "join-authorization-create"; runId: string; authorizer: Address }
  | { command: "join-authorization-delegate"; runId: string; delegates: Address[]; clear: boolean }
  | { command: "tick"; runId: string }
  | { command: "close-run"; runId: string; spill: Address | null }
  | { command: "json-dump-run"; runId: string }
  | { command: "airdrop"; lamports: bigint }
  | { command: "keygen"; out: string };

/** Metadata fields given on the command line. */
export interface MetadataChange {
  name?: string;
  description?: string;
  numParameters?: number;
  vocabSize?: number;
}

/** A parsed command line. */
export type SolanaArgs = SolanaCommand & { common: CommonArgs };

const COMMANDS = [
  "create-run",
  "update-config",
  "set-paused",
  "join-authorization",
  "tick",
  "close-run",
  "json-dump-run",
  "airdrop",
  "keygen",
] as const;

function pubkey(flag: string, text: string): Address {
  try {
    return address(text);
  } catch {
    throw new UsageError(`--${flag} must be a base58 public key, found "${text}"`);
  }
}

/** Parses `deno task solana` arguments. */
export function parseSolanaArgs(argv: readonly string[]): SolanaArgs {
  const [command, ...rest] = argv;
  const common0: CommonArgs = {
    rpc: DEFAULT_RPC_URL,
    walletPath: null,
    programId: DEFAULT_PROGRAM_ID,
    mainAuthority: null,
    coordinator: null,
  };
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    return { command: "help", common: common0 };
  }
  if (!(COMMANDS as readonly string[]).includes(command)) {
    throw new UsageError(
      `unknown command "${command}" (expected one of ${COMMANDS.join(", ")})`,
    );
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: [...rest],
      strict: true,
      allowPositionals: true,
      options: {
        rpc: { type: "string" },
        "wallet-private-key-path": { type: "string" },
        "program-id": { type: "string" },
        "main-authority": { type: "string" },
        coordinator: { type: "string" },
        "run-id": { type: "string" },
        "join-authority": { type: "string" },
        permissionless: { type: "boolean" },
        "config-path": { type: "string" },
        name: { type: "string" },
        description: { type: "string" },
        "num-parameters": { type: "string" },
        "vocab-size": { type: "string" },
        authorizer: { type: "string" },
        delegate: { type: "string", multiple: true },
        clear: { type: "boolean" },
        lamports: { type: "string" },
        out: { type: "string" },
        spill: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return { command: "help", common: common0 };
  const common: CommonArgs = {
    rpc: values.rpc ?? DEFAULT_RPC_URL,
    walletPath: values["wallet-private-key-path"] ?? null,
    programId: values["program-id"] === undefined
      ? DEFAULT_PROGRAM_ID
      : pubkey("program-id", values["program-id"]),
    mainAuthority: values["main-authority"] === undefined
      ? null
      : pubkey("main-authority", values["main-authority"]),
    coordinator: values.coordinator === undefined
      ? null
      : pubkey("coordinator", values.coordinator),
  };
  try {
    new URL(common.rpc);
  } catch {
    throw new UsageError(`--rpc must be a URL, found "${common.rpc}"`);
  }
  const runId = () => {
    const id = values["run-id"];
    if (id === undefined || id === "") throw new UsageError(`${command} needs --run-id ID`);
    const bytes = new TextEncoder().encode(id).length;
    if (bytes > 32) throw new UsageError(`--run-id is ${bytes} bytes, at most 32 allowed`);
    const problem = unprintableProblem(id);
    if (problem !== null) throw new UsageError(`--run-id ${problem}`);
    return id;
  };
  const needWallet = () => {
    if (common.walletPath === null) {
      throw new UsageError(`${command} needs --wallet-private-key-path FILE`);
    }
  };
  const noPositionals = (n = 0) => {
    if (positionals.length > n) {
      throw new UsageError(`unexpected argument "${positionals[n]}"`);
    }
  };
  switch (command) {
    case "create-run":
      needWallet();
      noPositionals();
      return {
        command,
        runId: runId(),
        joinAuthority: values["join-authority"] === undefined
          ? null
          : pubkey("join-authority", values["join-authority"]),
        permissionless: values.permissionless ?? false,
        common,
      };
    case "update-config": {
      needWallet();
      noPositionals();
      const count = (flag: "num-parameters" | "vocab-size") => {
        const text = values[flag];
        if (text === undefined) return undefined;
        if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text))) {
          throw new UsageError(`--${flag} must be a whole number, found "${text}"`);
        }
        return Number(text);
      };
      const metadata: MetadataChange = {};
      if (values.name !== undefined) metadata.name = values.name;
      if (values.description !== undefined) metadata.description = values.description;
      const numParameters = count("num-parameters");
      if (numParameters !== undefined) metadata.numParameters = numParameters;
      const vocabSize = count("vocab-size");
      if (vocabSize !== undefined) metadata.vocabSize = vocabSize;
      const configPath = values["config-path"] ?? null;
      if (configPath === null && Object.keys(metadata).length === 0) {
        throw new UsageError(
          "update-config needs --config-path state.toml or a metadata flag " +
            "(--name, --description, --num-parameters, --vocab-size)",
        );
      }
      return { command, runId: runId(), configPath, metadata, common };
    }
    case "set-paused": {
      needWallet();
      noPositionals(1);
      const what = positionals[0];
      if (what !== "pause" && what !== "resume") {
        throw new UsageError(
          `set-paused takes pause or resume, found ${what === undefined ? "nothing" : `"${what}"`}`,
        );
      }
      return { command, runId: runId(), paused: what === "pause", common };
    }
    case "join-authorization": {
      needWallet();
      noPositionals(1);
      const sub = positionals[0];
      if (sub === "create") {
        const authorizer = values.authorizer;
        if (authorizer === undefined) {
          throw new UsageError("join-authorization create needs --authorizer PUBKEY");
        }
        return {
          command: "join-authorization-create",
          runId: runId(),
          authorizer: pubkey("authorizer", authorizer),
          common,
        };
      }
      if (sub === "delegate") {
        const delegates = (values.delegate ?? []).map((d) => pubkey("delegate", d));
        if (delegates.length === 0 && !values.clear) {
          throw new UsageError(
            "join-authorization delegate needs --delegate PUBKEY (repeatable) or --clear",
          );
        }
        return {
          command: "join-authorization-delegate",
          runId: runId(),
          delegates,
          clear: values.clear ?? false,
          common,
        };
      }
      throw new UsageError(
        `join-authorization takes create or delegate, found ${
          sub === undefined ? "nothing" : `"${sub}"`
        }`,
      );
    }
    case "tick":
      needWallet();
      noPositionals();
      return { command, runId: runId(), common };
    case "close-run":
      needWallet();
      noPositionals();
      return {
        command,
        runId: runId(),
        spill: values.spill === undefined ? null : pubkey("spill", values.spill),
        common,
      };
    case "json-dump-run":
      noPositionals();
      return { command, runId: runId(), common };
    case "airdrop": {
      needWallet();
      noPositionals();
      const text = values.lamports;
      if (text === undefined || !/^\d{1,19}$/.test(text)) {
        throw new UsageError(
          `airdrop needs --lamports N (a whole number), found ${text ?? "nothing"}`,
        );
      }
      return { command, lamports: BigInt(text), common };
    }
    case "keygen": {
      noPositionals();
      if (values.out === undefined) throw new UsageError("keygen needs --out FILE");
      return { command, out: values.out, common };
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}
