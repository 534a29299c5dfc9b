/**
 * `deno task client` arguments: `train` and `show-identity`, parsed into typed options with
 * a clear error naming the flag (never evaluated, unknown flags refused).
 *
 * @module
 */
import {
  commandsHelp,
  type EnvLookup,
  explainEnv,
  type FlagSpec,
  type FlagValues,
  helpText,
  parseFlags,
  unknownCommand,
} from "../cli/entry.ts";
import { LOG_FORMATS, type LogFormat } from "./log.ts";
import { unprintableProblem, UsageError } from "../common/mod.ts";
import { type Task, TASKS, tasksNamed } from "../eval/mod.ts";
import { TOKENIZER_NAMES } from "../data/mod.ts";

/** A string flag: its placeholder, description and the rest of its spec. */
function str<const E extends Omit<FlagSpec, "type" | "value" | "description">>(
  value: string,
  description: string,
  extra: E = {} as E,
): { type: "string"; value: string; description: string } & E {
  return { type: "string", value, description, ...extra };
}

/** The flags of `deno task client train`. */
export const TRAIN_SPEC = {
  usage: [
    "deno task client train --run-id ID --server-addr HOST:PORT [options]",
    "deno task client train --run-id ID --rpc URL --wallet-private-key-path FILE",
    "  (--main-authority PUBKEY | --coordinator ADDRESS) [options]",
  ],
  summary: "Joins a run through its TCP coordinator (or the Solana coordinator program with " +
    "--rpc) and trains until the run finishes or SIGINT/SIGTERM.",
  flags: {
    "run-id": str("ID", "the run to join", { required: true }),
    "server-addr": str("HOST:PORT", "the TCP coordinator (or the Solana flags below)"),
    rpc: str("URL", "Solana JSON-RPC of a run on the coordinator program"),
    "ws-rpc": str("URL", "its WebSocket", { defaultText: "--rpc with port + 1" }),
    "rpc-2": str("URL", "fallback RPC for transactions"),
    "ws-rpc-2": str("URL", "the fallback's WebSocket"),
    "wallet-private-key-path": str(
      "FILE",
      "Solana keypair JSON (64 numbers): signs and pays; also the libp2p identity unless " +
        "--identity-secret-key-path",
      { short: "w" },
    ),
    "main-authority": str("PUBKEY", "who created the run (finds its account with --run-id)"),
    coordinator: str("ADDRESS", "the run's account (instead of --main-authority)"),
    "program-id": str("PUBKEY", "the coordinator program", { defaultText: "the localnet's" }),
    claim: str(
      "TOKEN_ACCOUNT",
      "after each epoch that paid this wallet points, claim them from the run's treasury (when " +
        "it has one) into this token account of the treasury's mint",
    ),
    "treasurer-program-id": str("PUBKEY", "the treasurer program (with --claim)", {
      defaultText: "the localnet's",
    }),
    "deposit-token-account": str(
      "PUBKEY",
      "the token account a run's join deposit is paid from, when the run requires one",
      { defaultText: "the wallet's associated token account of the deposit's mint" },
    ),
    "identity-secret-key-path": str(
      "FILE",
      "32 raw bytes of ed25519 secret key (else RAW_IDENTITY_SECRET_KEY in hex, else a fresh key)",
      { short: "i" },
    ),
    "bind-p2p-port": str("P", "libp2p TCP port", { defaultText: "any free port" }),
    "bind-p2p-interface": str("ADDR", "libp2p listen address", {
      defaultText: "0.0.0.0, every interface",
    }),
    "no-bulk-transfer": {
      type: "boolean",
      description: "keep every payload byte on the encrypted libp2p stream (by default large " +
        "payloads move over a plain TCP bulk listener, authenticated by ticket and sha256)",
    },
    "bind-bulk-port": str("P", "bulk listener TCP port", { defaultText: "any free port" }),
    "bind-bulk-interface": str("ADDR", "bulk listener address", {
      defaultText: "the p2p interface",
    }),
    "bootstrap-peer": str(
      "MULTIADDR",
      "a participant to dial first (/ip4/../tcp/../p2p/..); a Solana run's account may name " +
        "more",
      { multiple: true },
    ),
    relay: str(
      "MULTIADDR",
      "a circuit relay to hold a reservation on, so peers reach this client behind NAT " +
        "(/ip4/../tcp/../p2p/..); a TCP coordinator started with --relay names its own, and a " +
        "Solana run's account those its operator set",
      { multiple: true },
    ),
    "micro-batch-size": str("N", "sequences per forward/backward", { defaultText: "1" }),
    recompute: {
      type: "boolean",
      description: "keep one layer's activations and recompute each layer's in the backward: " +
        "the same bits, about a third more compute, for a model or micro-batch that does not " +
        "fit otherwise",
    },
    "checkpoint-dir": str("DIR", "write {run_id}-step{N} checkpoints at each Cooldown"),
    "hub-repo": str(
      "OWNER/NAME",
      "as an elected checkpointer, upload each Cooldown checkpoint to this Hugging Face model " +
        "repo (created private if missing; HF_TOKEN, a write token, is required) and report " +
        "its revision",
    ),
    "hub-upload-attempts": str(
      "N",
      "tries of each upload when the Hub does not answer or answers 5xx/429 (waits 2, 4, 8 s...)",
      { defaultText: "4" },
    ),
    "hub-url": str("URL", "the Hugging Face Hub endpoint for uploads and downloads", {
      defaultText: "HF_ENDPOINT, else https://huggingface.co",
    }),
    "delete-old-steps": {
      type: "boolean",
      description: "after each checkpoint (and its upload), delete the run's older " +
        "{run_id}-step{N} folders beyond --keep-steps",
    },
    "keep-steps": str(
      "N",
      "checkpoint folders --delete-old-steps keeps (at least 1 with " +
        "--hub-repo)",
      { defaultText: "3" },
    ),
    logs: str(
      LOG_FORMATS.join("|"),
      "a full-screen view of the run (tui, on a terminal; else console lines), progress " +
        "lines, or one JSON object per event",
      { defaultText: "tui" },
    ),
    "max-concurrent-downloads": str("N", "payload transfers at once", { defaultText: "8" }),
    "metrics-port": str(
      "P",
      "serve Prometheus metrics at http://HOST:P/metrics (0: any free port)",
      {
        defaultText: "off",
      },
    ),
    "metrics-hostname": str("HOST", "the metrics' listen address", { defaultText: "127.0.0.1" }),
    model: str("DIR", "local HF model folder", {
      defaultText: "the run's checkpoint repo id read as a path",
    }),
    "eval-tasks": str(
      "LIST",
      `evals to score while the GPU is idle between rounds (${[...TASKS.keys()].join(",")})`,
    ),
    "eval-fewshot": str("N", "few-shot examples per eval question", { defaultText: "0" }),
    "eval-seed": str("N", "seed of the eval sample and few-shot picks", { defaultText: "42" }),
    "eval-task-max-docs": str("N", "documents per eval task at most", { defaultText: "all" }),
    "eval-tasks-dir": str("DIR", "folder of the eval datasets (<task>/ or <owner>/<name>/)", {
      defaultText: "the HF cache",
    }),
    "eval-tokenizer": str(TOKENIZER_NAMES.join("|"), "the model's tokenizer for evals", {
      defaultText: "from its vocabulary",
    }),
  },
} as const;

/** The flags of `deno task client show-identity`. */
export const SHOW_IDENTITY_SPEC = {
  usage: "deno task client show-identity [--identity-secret-key-path FILE]",
  summary: "Prints the client's public key (hex) and libp2p peer id.",
  flags: {
    "identity-secret-key-path": TRAIN_SPEC.flags["identity-secret-key-path"],
  },
} as const;

/** The client's subcommands, for the top-level help. */
export const CLIENT_COMMANDS = {
  train: { summary: "join a run and train", spec: TRAIN_SPEC },
  "show-identity": {
    summary: "print the client's public key and peer id",
    spec: SHOW_IDENTITY_SPEC,
  },
} as const;

/** Usage text of `deno task client`. */
export const USAGE: string = commandsHelp("deno task client", CLIENT_COMMANDS);

/** The help text for `topic` (a subcommand), or the top-level one. */
export function clientHelp(topic?: keyof typeof CLIENT_COMMANDS): string {
  return topic === undefined ? USAGE : helpText(CLIENT_COMMANDS[topic].spec);
}

/** The Solana backend's flags (`--rpc` and friends). */
export interface SolanaTrainArgs {
  rpc: string;
  wsRpc: string | null;
  rpc2: string | null;
  wsRpc2: string | null;
  walletPrivateKeyPath: string;
  mainAuthority: string | null;
  coordinator: string | null;
  programId: string | null;
  /** `--claim`: the token account earned points are claimed into, or null for no claims. */
  claim: string | null;
  treasurerProgramId: string | null;
  /** `--deposit-token-account`: pays a join deposit, or null for the wallet's ATA. */
  depositTokenAccount: string | null;
}

/** `train` options. */
export interface TrainArgs {
  command: "train";
  runId: string;
  /** The TCP coordinator; null when the run is on Solana (`solana` is set then). */
  serverAddr: string | null;
  /** Present when the run is on Solana. */
  solana?: SolanaTrainArgs;
  identitySecretKeyPath: string | null;
  bindP2pPort: number;
  bindP2pInterface: string;
  /** Whether large payloads may use the plain-TCP bulk path (`--no-bulk-transfer` turns it off). */
  bulkTransfer: boolean;
  bindBulkPort: number;
  /** The bulk listener's address; null means the p2p interface. */
  bindBulkInterface: string | null;
  /** `--bootstrap-peer`: participants to dial first (a Solana run's account may name more). */
  bootstrapPeers: string[];
  /** `--relay`: circuit relays to reserve a slot on (the coordinator may name more). */
  relays: string[];
  microBatchSize: number;
  /** `--recompute`: recompute activations in the backward (model/recompute.ts). */
  recompute: boolean;
  checkpointDir: string | null;
  /** `--hub-repo`: where an elected checkpointer uploads its checkpoints; null: nowhere. */
  hubRepo: string | null;
  /** `--hub-url`; null: `HF_ENDPOINT`, else the public Hub. */
  hubUrl: string | null;
  /** `--hub-upload-attempts`: tries of each upload on transient failures. */
  hubUploadAttempts: number;
  /** `--delete-old-steps`. */
  deleteOldSteps: boolean;
  /** `--keep-steps` (default 3). */
  keepSteps: number;
  logs: LogFormat;
  maxConcurrentDownloads: number;
  model: string | null;
  /** `--metrics-port`: where to serve `/metrics`; null: off. */
  metrics: { hostname: string; port: number } | null;
  /** `--eval-*`: the evals scored between rounds; null: none. */
  evals: EvalArgs | null;
}

/** The `--eval-*` flags. */
export interface EvalArgs {
  tasks: Task[];
  fewshot: number;
  seed: number;
  limit?: number;
  tasksDir?: string;
  tokenizer?: string;
}

/** `show-identity` options. */
export interface ShowIdentityArgs {
  command: "show-identity";
  identitySecretKeyPath: string | null;
}

/** A parsed command line. */
export type ClientArgs = TrainArgs | ShowIdentityArgs | {
  command: "help";
  /** The subcommand whose help was asked for; absent: the top-level help. */
  topic?: keyof typeof CLIENT_COMMANDS;
};

function integer(
  name: string,
  text: string | undefined,
  fallback: number,
  min: number,
  max: number,
) {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max) {
    throw new UsageError(
      `--${name} must be a whole number in ${min}..${max}, found "${text}"`,
    );
  }
  return n;
}

/** Parses `deno task client` arguments; `env` fills flags not given (`PSYCHE_*`). */
export function parseClientArgs(args: readonly string[], env: EnvLookup = {}): ClientArgs {
  const [command, ...rest] = args;
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    return { command: "help" };
  }
  if (command !== "train" && command !== "show-identity") {
    throw unknownCommand(command, Object.keys(CLIENT_COMMANDS));
  }
  if (command === "show-identity") {
    const trainOnly = rest.map((a) => a.replace(/^--/, "").split("=")[0]).find((name) =>
      Object.hasOwn(TRAIN_SPEC.flags, name) && !Object.hasOwn(SHOW_IDENTITY_SPEC.flags, name)
    );
    if (trainOnly !== undefined) throw new UsageError(`show-identity takes no --${trainOnly}`);
    const parsed = parseFlags(SHOW_IDENTITY_SPEC, rest, { env });
    if (parsed.help) return { command: "help", topic: command };
    return {
      command,
      identitySecretKeyPath: parsed.values["identity-secret-key-path"] ?? null,
    };
  }
  const parsed = parseFlags(TRAIN_SPEC, rest, { env });
  if (parsed.help) return { command: "help", topic: command };
  return explainEnv(parsed, () => checkTrainArgs(parsed.values));
}

function checkTrainArgs(values: FlagValues<typeof TRAIN_SPEC>): TrainArgs {
  const command = "train";
  const identitySecretKeyPath = values["identity-secret-key-path"] ?? null;
  const runId = values["run-id"];
  if (runId === undefined || runId === "") throw new UsageError("--run-id ID is required");
  const runIdProblem = unprintableProblem(runId);
  if (runIdProblem !== null) throw new UsageError(`--run-id ${runIdProblem}`);
  const serverAddr = values["server-addr"] ?? null;
  const solana = solanaArgs(values);
  if (serverAddr === null && solana === undefined) {
    throw new UsageError("--server-addr HOST:PORT (TCP) or --rpc URL (Solana) is required");
  }
  if (serverAddr !== null && solana !== undefined) {
    throw new UsageError("--server-addr and --rpc choose different backends: give one");
  }
  const logs = values.logs ?? "tui";
  if (!(LOG_FORMATS as readonly string[]).includes(logs)) {
    throw new UsageError(`--logs must be one of ${LOG_FORMATS.join(", ")}, found "${logs}"`);
  }
  const metricsPort = values["metrics-port"];
  if (metricsPort === undefined && values["metrics-hostname"] !== undefined) {
    throw new UsageError("--metrics-hostname needs --metrics-port P");
  }
  const metrics = metricsPort === undefined ? null : {
    hostname: values["metrics-hostname"] ?? "127.0.0.1",
    port: integer("metrics-port", metricsPort, 0, 0, 65535),
  };
  const checkpointDir = values["checkpoint-dir"] ?? null;
  const hubRepo = values["hub-repo"] ?? null;
  if (hubRepo !== null && !/^[\w][\w.-]*\/[\w][\w.-]*$/.test(hubRepo)) {
    throw new UsageError(`--hub-repo must be OWNER/NAME, found "${hubRepo}"`);
  }
  if (values["hub-upload-attempts"] !== undefined && hubRepo === null) {
    throw new UsageError("--hub-upload-attempts needs --hub-repo OWNER/NAME (nothing is uploaded)");
  }
  const deleteOldSteps = values["delete-old-steps"] === true;
  for (const [flag, given] of [["hub-repo", hubRepo], ["delete-old-steps", deleteOldSteps]]) {
    if (given && checkpointDir === null) {
      throw new UsageError(`--${flag} needs --checkpoint-dir DIR (where checkpoints are written)`);
    }
  }
  if (values["keep-steps"] !== undefined && !deleteOldSteps) {
    throw new UsageError(
      "--keep-steps needs --delete-old-steps (without it every checkpoint is kept)",
    );
  }
  const keepSteps = integer("keep-steps", values["keep-steps"], 3, 0, 1_000_000);
  if (hubRepo !== null && deleteOldSteps && keepSteps < 1) {
    throw new UsageError(
      "--keep-steps must be at least 1 with --hub-repo (a checkpoint is uploaded from its folder)",
    );
  }
  const bulkTransfer = values["no-bulk-transfer"] !== true;
  if (!bulkTransfer) {
    const stray = (["bind-bulk-port", "bind-bulk-interface"] as const).find((f) =>
      values[f] !== undefined
    );
    if (stray !== undefined) {
      throw new UsageError(`--${stray} has no effect with --no-bulk-transfer: give one`);
    }
  }
  return {
    command,
    runId,
    serverAddr,
    identitySecretKeyPath,
    bindP2pPort: integer("bind-p2p-port", values["bind-p2p-port"], 0, 0, 65535),
    bindP2pInterface: values["bind-p2p-interface"] ?? "0.0.0.0",
    bulkTransfer,
    bindBulkPort: integer("bind-bulk-port", values["bind-bulk-port"], 0, 0, 65535),
    bindBulkInterface: values["bind-bulk-interface"] ?? null,
    bootstrapPeers: values["bootstrap-peer"] ?? [],
    relays: values.relay ?? [],
    microBatchSize: integer("micro-batch-size", values["micro-batch-size"], 1, 1, 4096),
    recompute: values.recompute === true,
    checkpointDir,
    hubRepo,
    hubUrl: url("hub-url", values["hub-url"]),
    hubUploadAttempts: integer("hub-upload-attempts", values["hub-upload-attempts"], 4, 1, 100),
    deleteOldSteps,
    keepSteps,
    logs: logs as LogFormat,
    maxConcurrentDownloads: integer(
      "max-concurrent-downloads",
      values["max-concurrent-downloads"],
      8,
      1,
      1024,
    ),
    model: values.model ?? null,
    metrics,
    evals: evalArgs(values),
    ...(solana === undefined ? {} : { solana }),
  };
}

const EVAL_DETAILS = [
  "eval-fewshot",
  "eval-seed",
  "eval-task-max-docs",
  "eval-tasks-dir",
  "eval-tokenizer",
] as const;

function evalArgs(values: Partial<Record<string, string | string[] | boolean>>): EvalArgs | null {
  const text = (name: string) => values[name] as string | undefined;
  const list = text("eval-tasks");
  if (list === undefined) {
    const stray = EVAL_DETAILS.find((f) => values[f] !== undefined);
    if (stray !== undefined) throw new UsageError(`--${stray} needs --eval-tasks LIST`);
    return null;
  }
  let tasks: Task[];
  try {
    tasks = tasksNamed(list);
  } catch (e) {
    throw new UsageError(`--eval-tasks: ${(e as Error).message}`);
  }
  const tokenizer = text("eval-tokenizer");
  if (tokenizer !== undefined && !(TOKENIZER_NAMES as readonly string[]).includes(tokenizer)) {
    throw new UsageError(
      `--eval-tokenizer must be one of ${TOKENIZER_NAMES.join(", ")}, found "${tokenizer}"`,
    );
  }
  const maxDocs = text("eval-task-max-docs");
  return {
    tasks,
    fewshot: integer("eval-fewshot", text("eval-fewshot"), 0, 0, 64),
    seed: integer("eval-seed", text("eval-seed"), 42, 0, Number.MAX_SAFE_INTEGER),
    ...(maxDocs === undefined
      ? {}
      : { limit: integer("eval-task-max-docs", maxDocs, 1, 1, Number.MAX_SAFE_INTEGER) }),
    ...(text("eval-tasks-dir") === undefined ? {} : { tasksDir: text("eval-tasks-dir") }),
    ...(tokenizer === undefined ? {} : { tokenizer }),
  };
}

/**
 * The payload service's bulk setting for these arguments: `false` with `--no-bulk-transfer`,
 * else where its listener binds (default: the p2p interface, any free port).
 */
export function bulkOptions(args: TrainArgs): { host: string; port: number } | false {
  if (!args.bulkTransfer) return false;
  return { host: args.bindBulkInterface ?? args.bindP2pInterface, port: args.bindBulkPort };
}

function url(flag: string, text: string | undefined): string | null {
  if (text === undefined) return null;
  try {
    new URL(text);
  } catch {
    throw new UsageError(`--${flag} must be a URL, found "${text}"`);
  }
  return text;
}

/** The Solana flags, or undefined when `--rpc` is absent (then none may be given). */
function solanaArgs(values: Record<string, unknown>): SolanaTrainArgs | undefined {
  const flags = [
    "ws-rpc",
    "rpc-2",
    "ws-rpc-2",
    "wallet-private-key-path",
    "main-authority",
    "coordinator",
    "program-id",
    "claim",
    "treasurer-program-id",
    "deposit-token-account",
  ];
  const text = (k: string) => values[k] as string | undefined;
  const rpc = url("rpc", text("rpc"));
  if (rpc === null) {
    const stray = flags.find((f) => values[f] !== undefined);
    if (stray !== undefined) throw new UsageError(`--${stray} needs --rpc URL`);
    return undefined;
  }
  const walletPrivateKeyPath = text("wallet-private-key-path");
  if (walletPrivateKeyPath === undefined) {
    throw new UsageError("--rpc needs --wallet-private-key-path FILE");
  }
  const mainAuthority = text("main-authority") ?? null;
  const coordinator = text("coordinator") ?? null;
  if ((mainAuthority === null) === (coordinator === null)) {
    throw new UsageError(
      "--rpc needs exactly one of --main-authority PUBKEY and --coordinator ADDRESS",
    );
  }
  if (values["rpc-2"] === undefined && values["ws-rpc-2"] !== undefined) {
    throw new UsageError("--ws-rpc-2 needs --rpc-2 URL");
  }
  if (values.claim === undefined && values["treasurer-program-id"] !== undefined) {
    throw new UsageError("--treasurer-program-id needs --claim TOKEN_ACCOUNT");
  }
  return {
    rpc,
    wsRpc: url("ws-rpc", text("ws-rpc")),
    rpc2: url("rpc-2", text("rpc-2")),
    wsRpc2: url("ws-rpc-2", text("ws-rpc-2")),
    walletPrivateKeyPath,
    mainAuthority,
    coordinator,
    programId: text("program-id") ?? null,
    claim: text("claim") ?? null,
    treasurerProgramId: text("treasurer-program-id") ?? null,
    depositTokenAccount: text("deposit-token-account") ?? null,
  };
}
