/**
 * `deno task coordinator run --state state.toml [options]`: runs a coordinator over TCP
 * (Psyche's `psyche-centralized-server run`). Loads the run (a fresh state.toml, or one
 * saved by `--save-state-dir` to resume), starts ticking and serving clients, optionally
 * serves the run's data in-process, and stops cleanly on SIGINT/SIGTERM.
 *
 * Exit codes: 0 stopped by a signal, 1 invalid config, 2 usage error or unreadable file.
 *
 * @module
 */
import { AuthorizedKeysError, parseAuthorizedKeys } from "./authorized_keys.ts";
import { CoordinatorHost } from "./host.ts";
import { DEFAULT_JOIN_BACKOFF_EPOCHS } from "./join_backoff.ts";
import { eventLogger, LOG_FORMATS, type LogFormat, type ServerEvent } from "./log.ts";
import { coordinatorFromRunConfig } from "./save_state.ts";
import {
  type CoordinatorServer,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
  startCoordinatorServer,
} from "./server.ts";
import {
  type CliIo,
  type EnvLookup,
  EXIT_INVALID,
  EXIT_OK,
  EXIT_USAGE,
  explainEnv,
  type FlagValues,
  helpText,
  onStopRequest,
  parseFlags,
} from "../../cli/entry.ts";
import { DataError, startDataServerFromConfig } from "../../data/mod.ts";
import type { Relay } from "../../net/p2p/mod.ts";
import { crossCheckDataConfig, parseRunConfig, type RunConfig } from "../config/mod.ts";
import { ConfigError, durationProblem, UsageError } from "../../common/mod.ts";

/** The flags of `deno task coordinator run`. */
export const RUN_SPEC = {
  usage: "deno task coordinator run --state FILE [options]",
  summary: "Runs a training run's coordinator over TCP until SIGINT or SIGTERM.",
  flags: {
    state: {
      type: "string",
      value: "FILE",
      description: "the run config (state.toml, or a saved {run_id}-step{n}.toml)",
      required: true,
    },
    "server-port": {
      type: "string",
      value: "P",
      short: "s",
      description: "TCP port for clients (the port taken is printed)",
      defaultText: "any free port",
    },
    hostname: {
      type: "string",
      value: "H",
      description: "address to listen on",
      defaultText: "0.0.0.0",
    },
    "data-config": {
      type: "string",
      value: "FILE",
      description: "serve the run's data in-process (data.toml); the run's data_location must be " +
        'Server = "host:port"',
    },
    "save-state-dir": {
      type: "string",
      value: "DIR",
      description: "save the run at every epoch end, to resume with --state",
    },
    "init-warmup-time": {
      type: "string",
      value: "S",
      description: "Warmup seconds until the run first trains (ms precision)",
    },
    "withdraw-on-disconnect": {
      type: "string",
      value: "true|false",
      description: "withdraw clients whose connection closes",
      defaultText: "true",
    },
    logs: {
      type: "string",
      value: LOG_FORMATS.join("|"),
      description: "progress lines or one JSON object per event (docs/logs.md)",
      defaultText: "console",
    },
    "authorized-keys": {
      type: "string",
      value: "FILE",
      description: "a permissioned run: only the client keys listed in FILE may connect " +
        "(one hex or base58 public key per line, # comments)",
    },
    "max-connections": {
      type: "string",
      value: "N",
      description: "open connections in all; at the cap a new one evicts the quietest non-member",
      defaultText: String(DEFAULT_MAX_CONNECTIONS),
    },
    "max-connections-per-address": {
      type: "string",
      value: "N",
      description: "open connections from one IP address; raise it for many clients on one " +
        "host (a local testnet)",
      defaultText: String(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS),
    },
    "idle-timeout": {
      type: "string",
      value: "S",
      description: "close a connection that is neither pending nor a client of the epoch " +
        "after S quiet seconds",
      defaultText: String(DEFAULT_IDLE_TIMEOUT_MS / 1000),
    },
    "join-backoff-epochs": {
      type: "string",
      value: "K",
      description: "a key dropped by a health check in epoch e may join again from epoch e + K " +
        "(0: no back-off)",
      defaultText: String(DEFAULT_JOIN_BACKOFF_EPOCHS),
    },
    relay: {
      type: "boolean",
      description: "serve a circuit relay, so clients behind NAT can meet; only the run's " +
        "members may use it, and every client is told its address (docs/p2p.md)",
    },
    "relay-port": {
      type: "string",
      value: "P",
      description: "TCP port of the relay (implies --relay)",
      defaultText: "any free port",
    },
    "relay-announce": {
      type: "string",
      value: "MULTIADDR",
      description: "tell clients to dial the relay here (/ip4/../tcp/..), not where it listens: " +
        "a public address forwarded to this machine, or a proxy (implies --relay)",
      multiple: true,
    },
    "dashboard-port": {
      type: "string",
      value: "P",
      description: "serve a live web dashboard and Prometheus /metrics on port P (0: any free " +
        "port, printed); docs/dashboard.md",
      defaultText: "none",
    },
    "dashboard-hostname": {
      type: "string",
      value: "H",
      description: "address the dashboard listens on",
      defaultText: "127.0.0.1",
    },
  },
  footer:
    "Exit status: 0 stopped by a signal, 1 invalid config, 2 bad arguments or unreadable file.",
} as const;

/** Help text of `run`. */
export const RUN_USAGE: string = helpText(RUN_SPEC);

/** Parsed `run` options. */
export interface RunOptions {
  statePath: string;
  port: number;
  hostname: string;
  dataConfigPath?: string;
  saveStateDir?: string;
  initWarmupTime?: number;
  withdrawOnDisconnect: boolean;
  logs: LogFormat;
  /** Absent: anyone may connect. */
  authorizedKeysPath?: string;
  maxConnections?: number;
  maxConnectionsPerAddress?: number;
  /** Seconds. */
  idleTimeout?: number;
  joinBackoffEpochs?: number;
  /** Absent: no relay (`--relay`, `--relay-port`); 0: any free port. */
  relayPort?: number;
  /** Where clients are told the relay is (`--relay-announce`); absent: where it listens. */
  relayAnnounce?: string[];
  /** Absent: no dashboard. */
  dashboardPort?: number;
  dashboardHostname: string;
}

/** A running dashboard, fed every server event (coordinator/dashboard/). */
export interface RunDashboard {
  readonly url: string;
  publish(event: ServerEvent): void;
  close(): Promise<void>;
}

/**
 * Starts a dashboard of `host` on `hostname:port`; the CLI passes coordinator/dashboard's (this
 * room may not import it: the dashboard reads this room's events).
 */
export type DashboardStarter = (
  options: { hostname: string; port: number; host: CoordinatorHost },
) => RunDashboard;

function integerOption(name: string, text: string | undefined, min: number, max: number) {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < min || value > max) {
    throw new UsageError(`--${name} must be a whole number in ${min}..${max}, found "${text}"`);
  }
  return value;
}

/** What `--relay-announce` accepts: an IP or DNS name, a TCP port; the relay adds its peer id. */
const RELAY_ANNOUNCE =
  /^\/(ip4\/\d{1,3}(\.\d{1,3}){3}|ip6\/[0-9a-fA-F:.]+|dns[46]?\/[A-Za-z0-9.-]+)\/tcp\/\d{1,5}$/;

/** A duration flag in seconds, with at most millisecond precision, like the run config's. */
function secondsOption(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = /^\s*\d+(\.\d+)?\s*$/.test(text) ? Number(text) : NaN;
  const problem = durationProblem(value) ?? (value === 0 ? "must be > 0" : null);
  if (problem !== null) {
    throw new UsageError(`--${name} (seconds) ${problem}, found "${text}"`);
  }
  return value;
}

/**
 * Parses `run`'s arguments; null when help was asked for. `env` fills flags not given
 * (`PSYCHE_*`). Throws {@linkcode UsageError}.
 */
export function parseRunArgs(args: readonly string[], env: EnvLookup = {}): RunOptions | null {
  const parsed = parseFlags(RUN_SPEC, args, { env });
  if (parsed.help) return null;
  return explainEnv(parsed, () => checkRunArgs(parsed.values));
}

function checkRunArgs(values: FlagValues<typeof RUN_SPEC>): RunOptions {
  if (values.state === undefined) throw new UsageError("--state FILE is required");
  const withdraw = values["withdraw-on-disconnect"] ?? "true";
  if (withdraw !== "true" && withdraw !== "false") {
    throw new UsageError(`--withdraw-on-disconnect must be true or false, found "${withdraw}"`);
  }
  const logs = values.logs ?? "console";
  if (!(LOG_FORMATS as readonly string[]).includes(logs)) {
    throw new UsageError(`--logs must be one of ${LOG_FORMATS.join(", ")}, found "${logs}"`);
  }
  const relayAnnounce = values["relay-announce"];
  for (const address of relayAnnounce ?? []) {
    if (!RELAY_ANNOUNCE.test(address)) {
      throw new UsageError(
        `--relay-announce must be a TCP multiaddr without a peer id (/ip4/203.0.113.7/tcp/4001, ` +
          `/dns4/relay.example.org/tcp/4001), found "${address}"`,
      );
    }
  }
  return {
    statePath: values.state,
    port: integerOption("server-port", values["server-port"], 0, 65535) ?? 0,
    hostname: values.hostname ?? "0.0.0.0",
    dataConfigPath: values["data-config"],
    saveStateDir: values["save-state-dir"],
    initWarmupTime: secondsOption("init-warmup-time", values["init-warmup-time"]),
    withdrawOnDisconnect: withdraw === "true",
    logs: logs as LogFormat,
    authorizedKeysPath: values["authorized-keys"],
    maxConnections: integerOption("max-connections", values["max-connections"], 1, 1_000_000),
    maxConnectionsPerAddress: integerOption(
      "max-connections-per-address",
      values["max-connections-per-address"],
      1,
      1_000_000,
    ),
    idleTimeout: secondsOption("idle-timeout", values["idle-timeout"]),
    joinBackoffEpochs: integerOption(
      "join-backoff-epochs",
      values["join-backoff-epochs"],
      0,
      1_000_000,
    ),
    relayPort: integerOption("relay-port", values["relay-port"], 0, 65535) ??
      (values.relay === true || relayAnnounce !== undefined ? 0 : undefined),
    relayAnnounce,
    dashboardPort: integerOption("dashboard-port", values["dashboard-port"], 0, 65535),
    dashboardHostname: values["dashboard-hostname"] ?? "127.0.0.1",
  };
}

/** Errors of binding a port the operator can fix (in use, not allowed, not an address here). */
function isListenError(e: unknown): boolean {
  return e instanceof Deno.errors.AddrInUse || e instanceof Deno.errors.AddrNotAvailable ||
    e instanceof Deno.errors.PermissionDenied;
}

/** Resolves on the first SIGINT or SIGTERM, or when the parent that spawned it exits. */
function signalled(): Promise<void> {
  return new Promise((resolve) => onStopRequest(() => resolve()));
}

/** The data server's port: the one in the run's `data_location = { Server = "host:port" }`. */
function dataServerPort(run: RunConfig, dataConfigPath: string): number {
  const location = run.model.dataLocation;
  if (location.kind !== "Server") {
    throw new UsageError(
      `--data-config ${dataConfigPath} needs the run's data_location to be Server = "host:port", ` +
        `found ${location.kind}`,
    );
  }
  const m = /:(\d{1,5})$/.exec(location.address);
  const port = m === null ? NaN : Number(m[1]);
  if (!(port >= 1 && port <= 65535)) {
    throw new UsageError(`data_location Server address "${location.address}" has no port`);
  }
  return port;
}

/**
 * Runs `coordinator run` with the arguments after the subcommand name until `stop`
 * resolves (default: SIGINT/SIGTERM); resolves to the exit code.
 */
export async function runCommand(
  args: string[],
  io: CliIo,
  options: {
    stop?: Promise<void>;
    clock?: () => number;
    env?: EnvLookup;
    startDashboard?: DashboardStarter;
  } = {},
): Promise<number> {
  let opts: RunOptions | null;
  try {
    opts = parseRunArgs(args, options.env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(`run: ${e.message}. Run with --help for usage.`);
    return EXIT_USAGE;
  }
  if (opts === null) {
    io.out(RUN_USAGE);
    return EXIT_OK;
  }
  const clock = options.clock ?? Date.now;
  let text: string;
  try {
    text = await io.readTextFile(opts.statePath);
  } catch (e) {
    io.err(`run: cannot read run config "${opts.statePath}": ${(e as Error).message}`);
    return EXIT_USAGE;
  }
  let run: RunConfig;
  try {
    run = parseRunConfig(text, opts.statePath);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    io.err(`invalid: ${e.message}`);
    return EXIT_INVALID;
  }
  let authorizedKeys: Set<string> | null = null;
  if (opts.authorizedKeysPath !== undefined) {
    let keysText: string;
    try {
      keysText = await io.readTextFile(opts.authorizedKeysPath);
    } catch (e) {
      io.err(
        `run: cannot read authorized keys "${opts.authorizedKeysPath}": ${(e as Error).message}`,
      );
      return EXIT_USAGE;
    }
    try {
      authorizedKeys = parseAuthorizedKeys(keysText, opts.authorizedKeysPath);
    } catch (e) {
      if (!(e instanceof AuthorizedKeysError)) throw e;
      io.err(`invalid: ${e.message}`);
      return EXIT_INVALID;
    }
  }
  const logEvent = eventLogger(opts.logs, { write: io.out, clock });
  let dashboard: RunDashboard | null = null;
  const log = (event: ServerEvent) => {
    logEvent(event);
    dashboard?.publish(event);
  };

  let dataPort: number | undefined;
  if (opts.dataConfigPath !== undefined) {
    try {
      dataPort = dataServerPort(run, opts.dataConfigPath);
    } catch (e) {
      io.err(`run: ${(e as Error).message}`);
      return EXIT_USAGE;
    }
  }
  let host: CoordinatorHost;
  try {
    const state = coordinatorFromRunConfig(run, Math.floor(clock() / 1000));
    host = new CoordinatorHost({
      state,
      withdrawOnDisconnect: opts.withdrawOnDisconnect,
      initWarmupTime: opts.initWarmupTime,
      joinBackoffEpochs: opts.joinBackoffEpochs,
      authorizedKeys,
    });
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    io.err(`invalid: ${opts.statePath}: ${e.message}`);
    return EXIT_INVALID;
  }

  if (opts.dashboardPort !== undefined) {
    if (options.startDashboard === undefined) {
      io.err("run: --dashboard-port: this build of the command has no dashboard");
      return EXIT_USAGE;
    }
    try {
      dashboard = options.startDashboard({
        hostname: opts.dashboardHostname,
        port: opts.dashboardPort,
        host,
      });
    } catch (e) {
      if (!isListenError(e)) throw e;
      io.err(
        `run: dashboard: cannot listen on ${opts.dashboardHostname}:${opts.dashboardPort}: ` +
          (e as Error).message,
      );
      return EXIT_USAGE;
    }
    log({ kind: "Dashboard", url: dashboard.url });
  }

  let data: Awaited<ReturnType<typeof startDataServerFromConfig>> | undefined;
  if (opts.dataConfigPath !== undefined && dataPort !== undefined) {
    try {
      data = await startDataServerFromConfig(opts.dataConfigPath, {
        authorize: (client, batch) => host.authorizeData(client, batch),
        isMember: (key) => host.isMemberKey(key),
        hostname: opts.hostname,
        port: dataPort,
        onEvent: (e) => {
          if (e.kind === "Rejected") {
            log({ kind: "DataRefused", client: e.client, ...e.batch, reason: e.reason });
          }
          if (e.kind === "EvictedConnection") {
            log({
              kind: "ConnectionClosed",
              peer: e.address,
              client: e.client,
              reason: "the data server is at its connection cap, and this was its quietest " +
                "connection of a non-member",
            });
          }
        },
      });
    } catch (e) {
      if (!(e instanceof DataError) && !isListenError(e)) throw e;
      await dashboard?.close();
      io.err(`run: data server: ${(e as Error).message}`);
      return EXIT_USAGE;
    }
    const mismatch = crossCheckDataConfig(run, data.config);
    const issues = [...mismatch.run, ...mismatch.data];
    if (issues.length > 0) {
      await data.close();
      await dashboard?.close();
      io.err(
        `invalid: ${opts.dataConfigPath} does not fit ${opts.statePath}: ` +
          issues.map((i) => `${i.path}: ${i.message}`).join("; "),
      );
      return EXIT_INVALID;
    }
    log(
      {
        kind: "DataServer",
        address: data.server.address,
        sequences: data.provider.numSequences,
      } satisfies ServerEvent,
    );
  }

  let relay: Relay | undefined;
  let server: CoordinatorServer | undefined;
  if (opts.relayPort !== undefined) {
    try {
      // libp2p loads only for a run that serves a relay: validate-config and relay-less runs
      // keep their small permissions (libp2p's logger reads the environment as it loads).
      const { startRelay } = await import("../../net/p2p/mod.ts");
      relay = await startRelay({
        host: opts.hostname,
        port: opts.relayPort,
        isMember: (key) => host.isMemberKey(key),
        // Only where an authenticated client connects from is a handshake worth starting.
        allowAddress: (ip) => server?.hasClientAt(ip) ?? false,
        maxReservations: run.config.maxClients,
        announce: opts.relayAnnounce,
      });
    } catch (e) {
      await data?.close();
      await dashboard?.close();
      io.err(
        `run: relay: cannot listen on ${opts.hostname}:${opts.relayPort}: ${(e as Error).message}`,
      );
      return EXIT_USAGE;
    }
    log({ kind: "Relay", addresses: relay.addresses(), reservations: run.config.maxClients });
  }

  try {
    server = startCoordinatorServer({
      relays: relay?.addresses(),
      host,
      hostname: opts.hostname,
      port: opts.port,
      clock,
      saveStateDir: opts.saveStateDir,
      onEvent: log,
      maxConnections: opts.maxConnections,
      maxConnectionsPerAddress: opts.maxConnectionsPerAddress,
      idleTimeoutMs: opts.idleTimeout === undefined ? undefined : opts.idleTimeout * 1000,
    });
  } catch (e) {
    if (!isListenError(e)) throw e;
    await relay?.close();
    await data?.close();
    await dashboard?.close();
    io.err(`run: cannot listen on ${opts.hostname}:${opts.port}: ${(e as Error).message}`);
    return EXIT_USAGE;
  }
  try {
    await (options.stop ?? signalled());
  } finally {
    await server.close();
    await relay?.close();
    await data?.close();
    await dashboard?.close();
  }
  return EXIT_OK;
}
