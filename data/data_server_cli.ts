/**
 * The command line of `deno task data-server`, parsed into typed options, and the limits a run
 * config sets for it. Pure: data_server_main.ts reads the files and runs the server.
 *
 * Standalone, the server does not know the coordinator's assignments, so it cannot serve "this
 * client's batch of this round" as the coordinator-hosted one does. It serves at most the run's
 * largest batch per request (`global_batch_size_end`, from `--state`, or
 * `--max-batch-sequences`), and per client a burst of two such batches refilled at one per
 * second (`--max-sequences-per-second`).
 *
 * @module
 */
import { type EnvLookup, explainEnv, type FlagValues, helpText, parseFlags } from "../cli/entry.ts";
import type { RateLimit } from "./rate_limit.ts";
import {
  DEFAULT_DATA_IDLE_TIMEOUT_MS,
  DEFAULT_DATA_MAX_CONNECTIONS,
  DEFAULT_DATA_MAX_CONNECTIONS_PER_ADDRESS,
} from "./tcp_server.ts";
import { type DataLocation, toHex, UsageError } from "../common/mod.ts";
import { IdentityError, publicKeyFromHex } from "../net/mod.ts";

/** The flags of `deno task data-server`. */
export const DATA_SERVER_SPEC = {
  usage: [
    "deno task data-server --config FILE (--state FILE | --max-batch-sequences N)",
    "  (--allow PUBKEY_HEX ... | --allow-any-client) [options]",
  ],
  summary: "Serves a tokenized folder to authenticated clients over TCP until SIGINT or " +
    "SIGTERM. Without a coordinator to say which batch is whose, it serves at most the run's " +
    "largest batch per request and about one such batch per second per client.",
  flags: {
    config: {
      type: "string",
      value: "FILE",
      description: "the data.toml to serve",
      required: true,
    },
    state: {
      type: "string",
      value: "FILE",
      description: "the run config: its largest batch (global_batch_size_end) caps each " +
        "request, its data_location Server port is the default port, and seq_len must equal " +
        "its max_seq_len",
    },
    "max-batch-sequences": {
      type: "string",
      value: "N",
      description: "the largest batch one request may ask for (overrides --state)",
    },
    allow: {
      type: "string",
      value: "PUBKEY_HEX",
      multiple: true,
      description: "a client key to serve (`deno task client show-identity` prints it)",
    },
    "allow-any-client": {
      type: "boolean",
      description: "serve any client that completes the handshake (local demos)",
    },
    port: {
      type: "string",
      value: "N",
      description: "port to listen on",
      defaultText: "the run's data_location port, else any free port",
    },
    hostname: {
      type: "string",
      value: "H",
      description: "address to listen on",
      defaultText: "127.0.0.1",
    },
    "max-sequences-per-second": {
      type: "string",
      value: "R",
      description: "per client, across its connections",
      defaultText: "the largest batch per second, with a burst of two batches",
    },
    "max-connections": {
      type: "string",
      value: "N",
      description: "connections at once",
      defaultText: String(DEFAULT_DATA_MAX_CONNECTIONS),
    },
    "max-connections-per-address": {
      type: "string",
      value: "N",
      description: "connections at once from one IP address",
      defaultText: String(DEFAULT_DATA_MAX_CONNECTIONS_PER_ADDRESS),
    },
    "idle-timeout": {
      type: "string",
      value: "S",
      description: "seconds a connection may go without a request",
      defaultText: String(DEFAULT_DATA_IDLE_TIMEOUT_MS / 1000),
    },
  },
  footer: "Exit status: 0 stopped by a signal, 1 invalid config or data, 2 bad arguments.",
} as const;

/** `deno task data-server --help`. */
export const DATA_SERVER_USAGE: string = helpText(DATA_SERVER_SPEC);

/** Parsed `data-server` arguments. */
export interface DataServerArgs {
  readonly configPath: string;
  readonly statePath?: string;
  readonly maxBatchSequences?: number;
  /** Allowed client keys (lowercase hex), or "any". */
  readonly allow: ReadonlySet<string> | "any";
  readonly port?: number;
  readonly hostname: string;
  readonly sequencesPerSecond?: number;
  readonly maxConnections?: number;
  readonly maxConnectionsPerAddress?: number;
  readonly idleTimeoutMs?: number;
}

/**
 * Parses the arguments after `data-server`. Returns "help" for `--help`; throws
 * {@link UsageError} for anything else that is not a valid command line.
 *
 * @example
 * ```ts
 * import { parseDataServerArgs } from "./data_server_cli.ts";
 * const args = parseDataServerArgs(
 *   ["--config", "data.toml", "--max-batch-sequences", "8", "--allow-any-client"],
 * );
 * if (args === "help" || args.maxBatchSequences !== 8 || args.allow !== "any") throw new Error();
 * ```
 */
export function parseDataServerArgs(
  args: readonly string[],
  env: EnvLookup = {},
): DataServerArgs | "help" {
  const parsed = parseFlags(DATA_SERVER_SPEC, args, { env });
  if (parsed.help) return "help";
  return explainEnv(parsed, () => checkDataServerArgs(parsed.values));
}

function checkDataServerArgs(values: FlagValues<typeof DATA_SERVER_SPEC>): DataServerArgs {
  if (values.config === undefined) throw new UsageError("--config FILE is required");
  const maxBatchSequences = integer("max-batch-sequences", values["max-batch-sequences"], 1);
  if (values.state === undefined && maxBatchSequences === undefined) {
    throw new UsageError(
      "name the largest batch a request may ask for: --state FILE (the run config) or " +
        "--max-batch-sequences N",
    );
  }
  const keys = values.allow ?? [];
  if (keys.length > 0 && values["allow-any-client"]) {
    throw new UsageError("--allow and --allow-any-client exclude each other");
  }
  if (keys.length === 0 && !values["allow-any-client"]) {
    throw new UsageError(
      "name the clients to serve with --allow PUBKEY_HEX, or pass --allow-any-client",
    );
  }
  const allow = values["allow-any-client"] ? "any" as const : new Set(keys.map((hex) => {
    if (!/^[0-9a-fA-F]{64}$/.test(hex.trim())) {
      throw new UsageError(`--allow must be a 64-digit hex public key, found "${hex}"`);
    }
    try {
      // Small-order and non-canonical keys are refused: nobody needs a secret to claim them.
      return toHex(publicKeyFromHex(hex));
    } catch (e) {
      if (!(e instanceof IdentityError)) throw e;
      throw new UsageError(`--allow: ${e.message}`);
    }
  }));
  const rate = values["max-sequences-per-second"];
  const sequencesPerSecond = rate === undefined ? undefined : Number(rate);
  if (
    sequencesPerSecond !== undefined && !(sequencesPerSecond > 0 && isFinite(sequencesPerSecond))
  ) {
    throw new UsageError(`--max-sequences-per-second must be > 0, found "${rate}"`);
  }
  const idle = values["idle-timeout"];
  const idleSeconds = idle === undefined ? undefined : Number(idle);
  if (idleSeconds !== undefined && !(idleSeconds > 0 && idleSeconds <= 86_400)) {
    throw new UsageError(
      `--idle-timeout must be 0 < S <= 86400 seconds, found "${idle}"`,
    );
  }
  return {
    configPath: values.config,
    statePath: values.state,
    maxBatchSequences,
    allow,
    port: integer("port", values.port, 0, 65_535),
    hostname: values.hostname ?? "127.0.0.1",
    sequencesPerSecond,
    maxConnections: integer("max-connections", values["max-connections"], 1),
    maxConnectionsPerAddress: integer(
      "max-connections-per-address",
      values["max-connections-per-address"],
      1,
    ),
    idleTimeoutMs: idleSeconds === undefined ? undefined : Math.ceil(idleSeconds * 1000),
  };
}

/** What a run config says about its data server: the largest batch, and its port if any. */
export function dataServerLimitsFromRun(run: {
  config: { globalBatchSizeStart: number; globalBatchSizeEnd: number };
  model: { dataLocation: DataLocation };
}): { maxBatchSequences: number; port?: number } {
  const { globalBatchSizeStart, globalBatchSizeEnd } = run.config;
  const location = run.model.dataLocation;
  const port = location.kind === "Server"
    ? Number(/:(\d{1,5})$/.exec(location.address)?.[1] ?? NaN)
    : NaN;
  return {
    maxBatchSequences: Math.max(globalBatchSizeStart, globalBatchSizeEnd),
    ...(port >= 1 && port <= 65_535 ? { port } : {}),
  };
}

/** The per-client rate for a largest batch: that batch per second, a burst of two. */
export function defaultRateLimit(
  maxBatchSequences: number,
  sequencesPerSecond?: number,
): RateLimit {
  return {
    sequencesPerSecond: sequencesPerSecond ?? maxBatchSequences,
    burstSequences: 2 * maxBatchSequences,
  };
}

function integer(
  flag: string,
  text: string | undefined,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in ${min}..${max}`;
    throw new UsageError(`--${flag} must be an integer ${range}, found "${text}"`);
  }
  return value;
}
