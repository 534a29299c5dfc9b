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
import { parseArgs } from "node:util";
import type { RateLimit } from "./rate_limit.ts";
import {
  DEFAULT_DATA_IDLE_TIMEOUT_MS,
  DEFAULT_DATA_MAX_CONNECTIONS,
  DEFAULT_DATA_MAX_CONNECTIONS_PER_ADDRESS,
} from "./tcp_server.ts";
import { type DataLocation, toHex, UsageError } from "../common/mod.ts";
import { IdentityError, publicKeyFromHex } from "../net/mod.ts";

/** `deno task data-server --help`. */
export const DATA_SERVER_USAGE =
  `Usage: deno task data-server --config data.toml (--state state.toml | --max-batch-sequences N)
         (--allow PUBKEY_HEX ... | --allow-any-client) [options]

Serves a tokenized folder to authenticated clients over TCP until SIGINT or SIGTERM. Without a
coordinator to say which batch is whose, it serves at most the run's largest batch per request
and about one such batch per second per client.

Options:
  --config FILE                      the data.toml to serve
  --state FILE                       the run config: its largest batch (global_batch_size_end)
                                     caps each request, its data_location Server port is the
                                     default port, and seq_len must equal its max_seq_len
  --max-batch-sequences N            the largest batch one request may ask for (overrides --state)
  --allow PUBKEY_HEX                 a client key to serve (repeat the flag for more)
  --allow-any-client                 serve any client that completes the handshake (local demos)
  --port N                           port (default: the run's data_location port, else any free)
  --hostname H                       address to listen on (default 127.0.0.1)
  --max-sequences-per-second R       per client, across its connections (default: the largest
                                     batch per second, with a burst of two batches)
  --max-connections N                connections at once (default ${DEFAULT_DATA_MAX_CONNECTIONS})
  --max-connections-per-address N    connections at once from one IP (default ${DEFAULT_DATA_MAX_CONNECTIONS_PER_ADDRESS})
  --idle-timeout S                   seconds a connection may go without a request (default ${
    DEFAULT_DATA_IDLE_TIMEOUT_MS / 1000
  })
  -h, --help                         show this help

Exit status: 0 stopped by a signal, 1 invalid config or data, 2 bad arguments.`;

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
export function parseDataServerArgs(args: readonly string[]): DataServerArgs | "help" {
  let values;
  try {
    values = parseArgs({
      args: [...args],
      options: {
        config: { type: "string" },
        state: { type: "string" },
        "max-batch-sequences": { type: "string" },
        allow: { type: "string", multiple: true },
        "allow-any-client": { type: "boolean" },
        port: { type: "string" },
        hostname: { type: "string" },
        "max-sequences-per-second": { type: "string" },
        "max-connections": { type: "string" },
        "max-connections-per-address": { type: "string" },
        "idle-timeout": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help) return "help";
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
