/**
 * `deno task solana <command>` arguments, parsed into one typed command (never evaluated,
 * unknown flags refused, every error naming the flag). Execution is in main.ts.
 *
 * @module
 */
import {
  commandsHelp,
  type EnvLookup,
  explainEnv,
  type FlagSpec,
  type FlagValues,
  parseFlags,
  unknownCommand,
} from "../../../cli/entry.ts";
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
import {
  MAX_MEETING_ADDRESSES,
  MAX_POINTS,
  type MeetingAddress,
  meetingAddressProblem,
} from "../abi/mod.ts";
import { checkPoolArgs, POOL_COMMANDS, POOL_FLAG_TYPES, type PoolArgs } from "./pool_args.ts";
import {
  checkTreasurerArgs,
  TREASURER_COMMANDS,
  TREASURER_FLAG_TYPES,
  type TreasurerArgs,
} from "./treasurer_args.ts";

/** Flags every command takes. */
const COMMON_FLAGS = {
  rpc: str("URL", "JSON-RPC endpoint", { default: DEFAULT_RPC_URL }),
  "wallet-private-key-path": str(
    "FILE",
    "keypair JSON (64 numbers, as solana-keygen writes); signs and pays (every command but " +
      "keygen and the reads: list-runs, show-run, show-user, json-dump-*, can-join)",
  ),
  "program-id": str("PUBKEY", "coordinator program", { default: DEFAULT_PROGRAM_ID }),
  "main-authority": str(
    "PUBKEY",
    "who created the run; with the run id it gives the run's account address",
    { defaultText: "the wallet" },
  ),
  coordinator: str("ADDRESS", "the run's account address (instead of deriving it)"),
} as const;

const RUN_ID = { "run-id": str("ID", "the run (at most 32 bytes)", { required: true }) };

/** Where the run's clients meet: the same flags as the client's, kept in the run's account. */
const MEETING_FLAGS = {
  relay: str(
    "MULTIADDR",
    "a circuit relay the run's clients reserve a slot on (/ip4/../tcp/../p2p/..)",
    { multiple: true },
  ),
  "bootstrap-peer": str(
    "MULTIADDR",
    "a participant the run's clients dial first (/ip4/../tcp/../p2p/..)",
    { multiple: true },
  ),
} as const;

/** The token account a deposit payout goes to. */
const TOKEN_ACCOUNT = str("PUBKEY", "the token account to pay (of the deposit's mint)", {
  defaultText: "the wallet's associated token account",
});

/** `--json`: the read commands' JSON instead of their text. */
const JSON_FLAG = {
  json: { type: "boolean", description: "print JSON instead of text" },
} as const satisfies Record<string, FlagSpec>;

/** The wallet a read is about. */
const WALLET_FLAG = {
  wallet: str("PUBKEY", "the wallet (a client's signing key)", {
    defaultText: "the --wallet-private-key-path key's",
  }),
} as const;

const TREASURER_PROGRAM_FLAG = str("PUBKEY", "treasurer program (for the run's treasury)", {
  default: DEFAULT_TREASURER_PROGRAM_ID,
});

const command = commandFamily(COMMON_FLAGS);

/** Every operator command, by name: its summary and its flags (with the common ones). */
export const SOLANA_COMMANDS: Readonly<Record<string, CommandEntry>> = {
  "create-run": command(
    "create-run",
    "create a run's account, paused, owned by the wallet",
    "--run-id ID [--join-authority PUBKEY] [--permissionless] [--relay MULTIADDR] " +
      "[--bootstrap-peer MULTIADDR] [options]",
    {
      ...RUN_ID,
      "join-authority": str("PUBKEY", "who may authorize joins", { defaultText: "the wallet" }),
      permissionless: { type: "boolean", description: "anyone may join (no authorization)" },
      ...MEETING_FLAGS,
    },
  ),
  "update-config": command(
    "update-config",
    "set a run's config and model from a state.toml, its metadata, and/or where its clients meet",
    "--run-id ID [--config-path state.toml] [--name S] [--description S] [--num-parameters N] " +
      "[--vocab-size N] [--relay MULTIADDR] [--bootstrap-peer MULTIADDR] " +
      "[--clear-meeting-addresses] [options]",
    {
      ...RUN_ID,
      "config-path": str("FILE", "the state.toml whose config and model to set"),
      name: str("S", "the run's name (metadata)"),
      description: str("S", "the run's description (metadata)"),
      "num-parameters": str("N", "the model's parameter count (metadata)"),
      "vocab-size": str("N", "the model's vocabulary size (metadata)"),
      ...MEETING_FLAGS,
      "clear-meeting-addresses": {
        type: "boolean",
        description: `remove the run's relays and bootstrap peers (--relay and --bootstrap-peer ` +
          `replace them all, at most ${MAX_MEETING_ADDRESSES} together)`,
      },
    },
  ),
  "set-paused": command(
    "set-paused",
    "pause or resume a run",
    "--run-id ID pause|resume [options]",
    RUN_ID,
    [{ name: "pause|resume", description: "what to do" }],
  ),
  "join-authorization": command(
    "join-authorization",
    "create a join authorization, or set its delegates",
    [
      "create --run-id ID --authorizer PUBKEY [options]",
      "delegate --run-id ID --delegate PUBKEY [--delegate ...] [--clear] [options]",
    ],
    {
      ...RUN_ID,
      authorizer: str("PUBKEY", "who is authorized (create)"),
      delegate: str("PUBKEY", "a key that may join for the authorizer (delegate)", {
        multiple: true,
      }),
      clear: { type: "boolean", description: "remove the delegates first (delegate)" },
    },
    [{ name: "create|delegate", description: "what to do" }],
  ),
  "set-future-epoch-rates": command(
    "set-future-epoch-rates",
    "set the points the run's next epochs pay (from the next epoch's Warmup on)",
    "--run-id ID [--earning-rate-total-shared N] [--slashing-rate-per-client N] [options]",
    {
      ...RUN_ID,
      "earning-rate-total-shared": str(
        "N",
        "points an epoch shares equally among the clients that finish it Healthy (u64)",
        { defaultText: "unchanged" },
      ),
      "slashing-rate-per-client": str(
        "N",
        "slashed points of each client dropped or ejected in an epoch (u64; earned points stay)",
        { defaultText: "unchanged" },
      ),
    },
  ),
  "set-join-deposit": command(
    "set-join-deposit",
    "require a deposit in an SPL token to join the run (0 turns it off)",
    "--run-id ID --mint PUBKEY --amount N [options]",
    {
      ...RUN_ID,
      mint: str("PUBKEY", "the SPL Token mint of the deposit", { required: true }),
      amount: str(
        "N",
        "base units a join pays into the run's vault (u64); returned to a client that finishes " +
          "an epoch Healthy, forfeited when a health check drops it or verification ejects it",
        { required: true },
      ),
    },
  ),
  "withdraw-deposit": command(
    "withdraw-deposit",
    "take the wallet's join deposit back (once an epoch it finished Healthy has ended)",
    "--run-id ID [--token-account PUBKEY] [options]",
    { ...RUN_ID, "token-account": TOKEN_ACCOUNT },
  ),
  "sweep-forfeited": command(
    "sweep-forfeited",
    "move the run's forfeited deposits to a token account (main authority)",
    "--run-id ID [--token-account PUBKEY] [options]",
    { ...RUN_ID, "token-account": TOKEN_ACCOUNT },
  ),
  tick: command("tick", "advance a run's state machine", "--run-id ID [options]", RUN_ID),
  "close-run": command(
    "close-run",
    "close a halted run's account",
    "--run-id ID [--spill PUBKEY] [options]",
    {
      ...RUN_ID,
      spill: str("PUBKEY", "who receives the account's rent", { defaultText: "the wallet" }),
    },
  ),
  "json-dump-run": command(
    "json-dump-run",
    "print a run's account as JSON (Psyche's name; show-run prints it as text)",
    "--run-id ID [options]",
    RUN_ID,
  ),
  "list-runs": command(
    "list-runs",
    "list every run of the program: state, epoch, step, clients, earning rate, join deposit",
    "[--json] [options]",
    JSON_FLAG,
  ),
  "show-run": command(
    "show-run",
    "show a run: rates, join deposit, each client's points and deposit (--json: json-dump-run's)",
    "--run-id ID [--json] [options]",
    { ...RUN_ID, ...JSON_FLAG },
  ),
  "json-dump-user": command(
    "json-dump-user",
    "print a wallet's registration, points, deposit and treasury claims in a run as JSON",
    "--run-id ID [--wallet PUBKEY] [--treasurer-program-id PUBKEY] [options]",
    { ...RUN_ID, ...WALLET_FLAG, "treasurer-program-id": TREASURER_PROGRAM_FLAG },
  ),
  "show-user": command(
    "show-user",
    "show a wallet's registration, points, deposit and treasury claims in a run " +
      "(--json: json-dump-user's)",
    "--run-id ID [--wallet PUBKEY] [--treasurer-program-id PUBKEY] [--json] [options]",
    { ...RUN_ID, ...WALLET_FLAG, "treasurer-program-id": TREASURER_PROGRAM_FLAG, ...JSON_FLAG },
  ),
  "can-join": command(
    "can-join",
    "say whether a wallet may join a run now, and why not (exit code 3 when not)",
    "--run-id ID [--wallet PUBKEY] [--deposit-token-account PUBKEY] [--json] [options]",
    {
      ...RUN_ID,
      ...WALLET_FLAG,
      "deposit-token-account": str(
        "PUBKEY",
        "the token account a join would pay the run's deposit from",
        { defaultText: "the wallet's associated token account of the deposit's mint" },
      ),
      ...JSON_FLAG,
    },
  ),
  airdrop: command(
    "airdrop",
    "ask the faucet for lamports (localnet/devnet only)",
    "--lamports N [options]",
    { lamports: str("N", "how many", { required: true }) },
  ),
  keygen: command(
    "keygen",
    "write a new keypair file (solana-keygen format)",
    "--out FILE",
    { out: str("FILE", "where (not overwritten)", { required: true }) },
  ),
  ...POOL_COMMANDS,
  ...TREASURER_COMMANDS,
};

/** Usage text of `deno task solana`. */
export const USAGE: string = commandsHelp(
  "deno task solana",
  SOLANA_COMMANDS,
  "Operator commands for the coordinator program, the mining pool and the treasurer (against " +
    "deno task localnet, a solana-test-validator, devnet or mainnet).",
);

/** Every flag of every command, to type the parsed values with. */
const ALL_FLAGS_SPEC = {
  usage: "",
  flags: {
    ...POOL_FLAG_TYPES,
    ...TREASURER_FLAG_TYPES,
    ...COMMON_FLAGS,
    ...RUN_ID,
    "join-authority": str("", ""),
    permissionless: { type: "boolean", description: "" },
    "config-path": str("", ""),
    name: str("", ""),
    description: str("", ""),
    "num-parameters": str("", ""),
    "vocab-size": str("", ""),
    authorizer: str("", ""),
    delegate: { type: "string", description: "", multiple: true },
    clear: { type: "boolean", description: "" },
    lamports: str("", ""),
    out: str("", ""),
    spill: str("", ""),
    relay: { type: "string", description: "", multiple: true },
    "bootstrap-peer": { type: "string", description: "", multiple: true },
    "clear-meeting-addresses": { type: "boolean", description: "" },
    "earning-rate-total-shared": str("", ""),
    "slashing-rate-per-client": str("", ""),
    mint: str("", ""),
    amount: str("", ""),
    "token-account": str("", ""),
    json: { type: "boolean", description: "" },
    wallet: str("", ""),
    "deposit-token-account": str("", ""),
  },
} as const;

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
  /** Help: the top-level one, or a command's (`topic`). */
  | { command: "help"; topic?: string }
  | {
    command: "create-run";
    runId: string;
    joinAuthority: Address | null;
    permissionless: boolean;
    /** Where the run's clients meet (set right after the run is created; may be empty). */
    meetingAddresses: MeetingAddress[];
  }
  | {
    command: "update-config";
    runId: string;
    /** The state.toml whose config and model to set, or null to change metadata only. */
    configPath: string | null;
    /** Metadata fields to change (the others keep their on-chain values). */
    metadata: MetadataChange;
    /** The run's new meeting addresses (all of them; empty clears), or null to keep them. */
    meetingAddresses: MeetingAddress[] | null;
  }
  | { command: "set-paused"; runId: string; paused: boolean }
  | { command: "join-authorization-create"; runId: string; authorizer: Address }
  | { command: "join-authorization-delegate"; runId: string; delegates: Address[]; clear: boolean }
  | {
    command: "set-future-epoch-rates";
    runId: string;
    /** The new earning rate, or undefined to keep it. */
    earningRateTotalShared?: bigint;
    /** The new slashing rate, or undefined to keep it. */
    slashingRatePerClient?: bigint;
  }
  | { command: "set-join-deposit"; runId: string; mint: Address; amount: bigint }
  | {
    command: "withdraw-deposit" | "sweep-forfeited";
    runId: string;
    /** Where the tokens go, or null for the wallet's associated token account. */
    tokenAccount: Address | null;
  }
  | { command: "tick"; runId: string }
  | { command: "close-run"; runId: string; spill: Address | null }
  | { command: "json-dump-run"; runId: string }
  | ReadCommand
  | { command: "airdrop"; lamports: bigint }
  | { command: "keygen"; out: string };

/**
 * A read-only command: text by default, `json` for JSON (json-dump-user: always JSON). `wallet`
 * null: the --wallet-private-key-path key's.
 */
export type ReadCommand =
  | { command: "list-runs"; json: boolean }
  | { command: "show-run"; runId: string; json: boolean }
  | {
    command: "show-user" | "json-dump-user";
    runId: string;
    wallet: Address | null;
    treasurerProgramId: Address;
    json: boolean;
  }
  | {
    command: "can-join";
    runId: string;
    wallet: Address | null;
    /** The token account a join would pay from, or null for the wallet's associated one. */
    depositTokenAccount: Address | null;
    json: boolean;
  };

/** The read commands' names. */
export const READ_COMMANDS = [
  "list-runs",
  "show-run",
  "show-user",
  "json-dump-user",
  "can-join",
] as const;

/** Whether `args` is a read command (read_commands.ts runs them). */
export function isReadArgs(args: SolanaArgs): args is ReadCommand & { common: CommonArgs } {
  return (READ_COMMANDS as readonly string[]).includes(args.command);
}

/** Metadata fields given on the command line. */
export interface MetadataChange {
  name?: string;
  description?: string;
  numParameters?: number;
  vocabSize?: number;
}

/**
 * A parsed command line: a run command, a mining pool command (pool_args.ts, whose own options
 * are in `pool`; its `common` holds only its --rpc and wallet) or a treasurer command
 * (treasurer_args.ts, options in `treasurer`, likewise).
 */
export type SolanaArgs = (SolanaCommand | PoolArgs | TreasurerArgs) & { common: CommonArgs };

/** Whether `args` is a mining pool command. */
export function isPoolArgs(args: SolanaArgs): args is PoolArgs & { common: CommonArgs } {
  return "pool" in args;
}

/** Whether `args` is a treasurer command. */
export function isTreasurerArgs(
  args: SolanaArgs,
): args is TreasurerArgs & { common: CommonArgs } {
  return "treasurer" in args;
}

const COMMANDS = Object.keys(SOLANA_COMMANDS);

/**
 * `--relay` then `--bootstrap-peer` addresses as the run's meeting addresses, each checked by the
 * program's rule and their number by its capacity (a UsageError names the flag).
 */
function meetingAddresses(relays: readonly string[], peers: readonly string[]): MeetingAddress[] {
  const list: MeetingAddress[] = [
    ...relays.map((address) => ({ kind: "Relay" as const, address })),
    ...peers.map((address) => ({ kind: "Bootstrap" as const, address })),
  ];
  for (const { kind, address } of list) {
    const problem = meetingAddressProblem(address);
    if (problem !== null) {
      const flag = kind === "Relay" ? "--relay" : "--bootstrap-peer";
      throw new UsageError(`${flag} "${address}" ${problem}`);
    }
  }
  if (list.length > MAX_MEETING_ADDRESSES) {
    throw new UsageError(
      `--relay and --bootstrap-peer name ${list.length} addresses, at most ` +
        `${MAX_MEETING_ADDRESSES} allowed`,
    );
  }
  return list;
}

/**
 * Parses `deno task solana` arguments; `env` fills flags not given (`PSYCHE_*`). A help
 * request comes back as `{ command: "help", topic }`.
 */
export function parseSolanaArgs(argv: readonly string[], env: EnvLookup = {}): SolanaArgs {
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
  if (!COMMANDS.includes(command)) throw unknownCommand(command, COMMANDS);
  const spec = SOLANA_COMMANDS[command].spec;
  const other = rest.filter((a) => a.startsWith("--")).map((a) => a.slice(2).split("=")[0]).find((
    name,
  ) => Object.hasOwn(ALL_FLAGS_SPEC.flags, name) && !Object.hasOwn(spec.flags, name));
  if (other !== undefined) throw new UsageError(`${command} takes no --${other}`);
  const parsed = parseFlags(spec, rest, { env });
  if (parsed.help) return { command: "help", topic: command, common: common0 };
  return explainEnv(
    parsed,
    () =>
      checkSolanaArgs(
        command,
        parsed.values as FlagValues<typeof ALL_FLAGS_SPEC>,
        parsed.positionals,
      ),
  );
}

function checkSolanaArgs(
  command: string,
  values: FlagValues<typeof ALL_FLAGS_SPEC>,
  positionals: readonly string[],
): SolanaArgs {
  if (Object.hasOwn(POOL_COMMANDS, command)) {
    const pool = checkPoolArgs(command, values, positionals);
    return {
      ...pool,
      common: {
        rpc: pool.pool.rpc,
        walletPath: pool.pool.walletPath,
        programId: DEFAULT_PROGRAM_ID,
        mainAuthority: null,
        coordinator: null,
      },
    };
  }
  if (Object.hasOwn(TREASURER_COMMANDS, command)) {
    const treasurer = checkTreasurerArgs(command, values, positionals);
    return {
      ...treasurer,
      common: {
        rpc: treasurer.treasurer.rpc,
        walletPath: treasurer.treasurer.walletPath,
        programId: treasurer.treasurer.programId,
        mainAuthority: null,
        coordinator: null,
      },
    };
  }
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
  rpcUrlFlag(common.rpc);
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
        meetingAddresses: meetingAddresses(values.relay ?? [], values["bootstrap-peer"] ?? []),
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
      const named = meetingAddresses(values.relay ?? [], values["bootstrap-peer"] ?? []);
      const clear = values["clear-meeting-addresses"] ?? false;
      if (clear && named.length > 0) {
        throw new UsageError(
          "--clear-meeting-addresses removes them all: leave out --relay and --bootstrap-peer " +
            "(which replace them all by themselves)",
        );
      }
      const meeting = clear || named.length > 0 ? named : null;
      if (configPath === null && Object.keys(metadata).length === 0 && meeting === null) {
        throw new UsageError(
          "update-config needs --config-path state.toml, a metadata flag " +
            "(--name, --description, --num-parameters, --vocab-size), or where clients meet " +
            "(--relay, --bootstrap-peer, --clear-meeting-addresses)",
        );
      }
      return { command, runId: runId(), configPath, metadata, meetingAddresses: meeting, common };
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
    case "set-future-epoch-rates": {
      needWallet();
      noPositionals();
      const rate = (flag: "earning-rate-total-shared" | "slashing-rate-per-client") => {
        const text = values[flag];
        if (text === undefined) return undefined;
        if (!/^\d{1,20}$/.test(text) || BigInt(text) > MAX_POINTS) {
          throw new UsageError(`--${flag} must be a whole number up to 2^64 - 1, found "${text}"`);
        }
        return BigInt(text);
      };
      const earning = rate("earning-rate-total-shared");
      const slashing = rate("slashing-rate-per-client");
      if (earning === undefined && slashing === undefined) {
        throw new UsageError(
          "set-future-epoch-rates needs --earning-rate-total-shared N, " +
            "--slashing-rate-per-client N, or both",
        );
      }
      return {
        command,
        runId: runId(),
        ...(earning === undefined ? {} : { earningRateTotalShared: earning }),
        ...(slashing === undefined ? {} : { slashingRatePerClient: slashing }),
        common,
      };
    }
    case "set-join-deposit": {
      needWallet();
      noPositionals();
      const amount = values.amount ?? "";
      if (!/^\d{1,20}$/.test(amount) || BigInt(amount) > MAX_POINTS) {
        throw new UsageError(`--amount must be a whole number up to 2^64 - 1, found "${amount}"`);
      }
      const mint = pubkey("mint", values.mint ?? "");
      return { command, runId: runId(), mint, amount: BigInt(amount), common };
    }
    case "withdraw-deposit":
    case "sweep-forfeited": {
      needWallet();
      noPositionals();
      const to = values["token-account"];
      return {
        command,
        runId: runId(),
        tokenAccount: to === undefined ? null : pubkey("token-account", to),
        common,
      };
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
    case "list-runs":
      noPositionals();
      return { command, json: values.json ?? false, common };
    case "show-run":
      noPositionals();
      return { command, runId: runId(), json: values.json ?? false, common };
    case "show-user":
    case "json-dump-user":
      noPositionals();
      return {
        command,
        runId: runId(),
        wallet: values.wallet === undefined ? null : pubkey("wallet", values.wallet),
        treasurerProgramId: values["treasurer-program-id"] === undefined
          ? DEFAULT_TREASURER_PROGRAM_ID
          : pubkey("treasurer-program-id", values["treasurer-program-id"]),
        json: command === "json-dump-user" || (values.json ?? false),
        common,
      };
    case "can-join": {
      noPositionals();
      const from = values["deposit-token-account"];
      return {
        command,
        runId: runId(),
        wallet: values.wallet === undefined ? null : pubkey("wallet", values.wallet),
        depositTokenAccount: from === undefined ? null : pubkey("deposit-token-account", from),
        json: values.json ?? false,
        common,
      };
    }
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
