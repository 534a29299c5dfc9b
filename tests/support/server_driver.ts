/**
 * Helpers for the TCP server tests: scripted clients that follow a run through a
 * {@linkcode CoordinatorBackend} and send real warmup witnesses and committee-selected
 * witnesses, raw connections for hostile peers, and a coordinator server child process
 * whose JSON log lines the test can wait on.
 *
 * @module
 */
import { FrameReader, generateIdentity } from "../../net/mod.ts";
import { testState, warmupReport, witnessReport } from "./coordinator_fixtures.ts";
import {
  type CoordinatorState,
  currentRound,
  NO_DIGEST,
  roundSelection,
  type RunState,
  unhealthyTrainers,
  type WitnessMetadata,
} from "../../coordinator/core/mod.ts";
import {
  CoordinatorHost,
  type CoordinatorServer,
  type CoordinatorServerOptions,
  startCoordinatorServer,
} from "../../coordinator/server/mod.ts";
import { equalBytes } from "../../common/mod.ts";
import { lifelineSpawnOptions } from "../../cli/entry.ts";
import { releaseLifeline } from "./lifeline.ts";
import {
  type CoordinatorBackend,
  TcpBackend,
  type TcpBackendOptions,
} from "../../client/backend/mod.ts";

/**
 * A coordinator server on loopback for the test run (`testState`, no clients yet, disconnects
 * withdraw), ticking every 10 s unless `options` say otherwise.
 */
export function startTestServer(
  options: Partial<Omit<CoordinatorServerOptions, "host">> = {},
): CoordinatorServer {
  const host = new CoordinatorHost({ state: testState({}, 0), withdrawOnDisconnect: true });
  return startCoordinatorServer({
    host,
    hostname: "127.0.0.1",
    tickIntervalMs: 10_000,
    ...options,
  });
}

/** A {@linkcode TcpBackend} on the test run at `server`, a fresh identity unless `options` give one. */
export function connectTestBackend(
  server: { address: string },
  options: Partial<TcpBackendOptions> = {},
): Promise<TcpBackend> {
  return TcpBackend.connect({
    address: server.address,
    runId: "test-run",
    identity: generateIdentity(),
    ...options,
  });
}

/** What a scripted client saw: one entry per distinct (run state, epoch, step, height). */
export interface Observed {
  runState: RunState;
  epoch: number;
  step: number;
  height: number;
  clients: number;
}

const METADATA: WitnessMetadata = {
  step: 0,
  tokensPerSec: 1000,
  bandwidthPerSec: 1e6,
  loss: 4.5,
  evals: [{ name: "unit", value: 0.5 }],
  promptResults: [1, 2, 3],
  promptIndex: 0,
  efficiency: 0.9,
};

/** Options of {@linkcode ScriptedClient}. */
export interface ScriptedClientOptions {
  /** Keys this client's witness reports say it never received a payload from. */
  unseen?: readonly Uint8Array[];
  /** Report the previous round's unhealthy trainers (from round 2 on), as a witness would. */
  healthChecks?: boolean;
  /** Draw each report's bloom keys at random, as a real client does (default: fixed keys). */
  randomBloomKeys?: boolean;
}

/**
 * A client that does what an honest trainer does towards the coordinator, without
 * training: warmup witness in Warmup, a witness (participant bloom: every client, less
 * `unseen`) when elected in a round, and with `healthChecks` a health check naming the
 * unhealthy trainers. Errors from the coordinator are collected, not thrown.
 */
export class ScriptedClient {
  readonly backend: CoordinatorBackend;
  readonly seen: Observed[] = [];
  readonly errors: Error[] = [];
  readonly #options: ScriptedClientOptions;
  #sent = new Set<string>();
  #loop: Promise<void> | null = null;
  #stop = new AbortController();

  constructor(backend: CoordinatorBackend, options: ScriptedClientOptions = {}) {
    this.backend = backend;
    this.#options = options;
  }

  /** Starts following the run in the background. */
  start(): void {
    this.#loop = (async () => {
      try {
        for await (const state of this.backend.states({ signal: this.#stop.signal })) {
          this.#observe(state);
          this.#act(state);
        }
      } catch (e) {
        this.errors.push(e as Error);
      }
    })();
  }

  /** Stops following and closes the backend. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.backend.close();
    await this.#loop;
  }

  /** Resolves with the first state `predicate` accepts (checked on every state). */
  async waitFor(
    predicate: (state: CoordinatorState) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<CoordinatorState> {
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      for await (const state of this.backend.states({ signal })) {
        if (predicate(state)) return state;
      }
    } catch (e) {
      throw new Error(`while waiting for ${what}: ${(e as Error).message}`);
    }
    const last = this.backend.latest();
    throw new Error(
      `Timed out after ${timeoutMs} ms waiting for ${what}; last state ${last?.runState} ` +
        `epoch ${last?.progress.epoch} step ${last?.progress.step}`,
    );
  }

  #observe(s: CoordinatorState): void {
    const round = s.epochState.rounds[s.epochState.roundsHead];
    const entry: Observed = {
      runState: s.runState,
      epoch: s.progress.epoch,
      step: s.progress.step,
      height: round?.height ?? 0,
      clients: s.epochState.clients.length,
    };
    const last = this.seen.at(-1);
    if (
      last === undefined || last.runState !== entry.runState || last.epoch !== entry.epoch ||
      last.step !== entry.step || last.height !== entry.height
    ) this.seen.push(entry);
  }

  #act(state: CoordinatorState): void {
    const me = this.backend.identity.signer;
    const clients = state.epochState.clients;
    const index = clients.findIndex((c) => c.state === "Healthy" && equalBytes(c.id.signer, me));
    if (index < 0) return;
    const epoch = state.progress.epoch;
    if (state.runState === "Warmup") {
      this.#once(
        `warmup:${epoch}`,
        () => this.backend.sendWarmupWitness(warmupReport(state, index), NO_DIGEST),
      );
      return;
    }
    if (state.runState !== "RoundTrain" && state.runState !== "RoundWitness") return;
    const round = currentRound(state);
    if (this.#options.healthChecks === true) {
      const checks = unhealthyTrainers(state);
      if (checks.length > 0) {
        this.#once(
          `health:${epoch}:${round.height}`,
          () => this.backend.sendHealthCheck(checks),
        );
      }
    }
    if (!roundSelection(state.config, round).isWitness(index)) return;
    const unseen = this.#options.unseen ?? [];
    const everyone = clients.map((c) => c.id).filter((id) =>
      !unseen.some((key) => equalBytes(key, id.signer))
    );
    const report = witnessReport(state, index, everyone, [], this.#options.randomBloomKeys);
    this.#once(
      `witness:${epoch}:${round.height}`,
      () => this.backend.sendWitness(report, { ...METADATA, step: state.progress.step }, NO_DIGEST),
    );
  }

  #once(key: string, send: () => Promise<void>): void {
    if (this.#sent.has(key)) return;
    this.#sent.add(key);
    send().catch((e) => this.errors.push(e as Error));
  }
}

/** A raw TCP connection for playing a hostile or broken peer. */
export interface RawConnection {
  conn: Deno.Conn;
  frames: FrameReader;
}

/** Opens a raw connection to `host:port`. */
export async function rawConnect(address: string): Promise<RawConnection> {
  const [hostname, port] = address.split(":");
  const conn = await Deno.connect({ hostname, port: Number(port) });
  return { conn, frames: new FrameReader(conn, { maxFrameBytes: 64 * 1024 * 1024 }) };
}

/** Every frame until the server closes the connection (or `timeoutMs` passes: an error). */
export async function framesUntilClosed(
  raw: RawConnection,
  timeoutMs = 5000,
): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  const timer = setTimeout(() => raw.conn.close(), timeoutMs);
  try {
    for (;;) {
      const frame = await raw.frames.next();
      if (frame === null) return out;
      out.push(frame);
    }
  } catch (e) {
    throw new Error(`connection not closed by the server within ${timeoutMs} ms: ${e}`);
  } finally {
    clearTimeout(timer);
    try {
      raw.conn.close();
    } catch {
      // closed
    }
  }
}

/** The `--allow-*` flags of `deno task coordinator`, as deno.json has them. */
export function coordinatorTaskPermissions(): string[] {
  const denoJson = JSON.parse(
    Deno.readTextFileSync(new URL("../../deno.json", import.meta.url)),
  ) as { tasks: Record<string, string> };
  return denoJson.tasks.coordinator.split(/\s+/).filter((a) => a.startsWith("--allow"));
}

/** A coordinator server child process (`coordinator/cli/main.ts run --logs json`). */
export class ServerProcess {
  readonly child: Deno.ChildProcess;
  /** Every JSON event logged so far. */
  readonly events: Record<string, unknown>[] = [];
  readonly stderr: string[] = [];
  #waiters = new Set<() => void>();
  #reading: Promise<void>;

  private constructor(child: Deno.ChildProcess) {
    this.child = child;
    this.#reading = Promise.all([
      this.#readLines(child.stdout, (line) => {
        try {
          this.events.push(JSON.parse(line));
        } catch {
          this.stderr.push(line);
        }
      }),
      this.#readLines(child.stderr, (line) => this.stderr.push(line)),
    ]).then(() => {});
  }

  /**
   * Starts `deno run coordinator/cli/main.ts run --logs json --hostname 127.0.0.1 ...args`, with
   * the permissions `deno task coordinator` gives it (read from deno.json, so they cannot drift).
   */
  static start(args: string[]): ServerProcess {
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...coordinatorTaskPermissions(),
        new URL("../../coordinator/cli/main.ts", import.meta.url).pathname,
        "run",
        "--logs",
        "json",
        "--hostname",
        "127.0.0.1",
        ...args,
      ],
      ...lifelineSpawnOptions(),
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    releaseLifeline(child);
    return new ServerProcess(child);
  }

  async #readLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) {
    let buffered = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      buffered += chunk;
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        onLine(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
        for (const wake of [...this.#waiters]) wake();
      }
    }
    if (buffered !== "") onLine(buffered);
    for (const wake of [...this.#waiters]) wake();
  }

  /** The first logged event `predicate` accepts, waiting up to `timeoutMs`. */
  async waitForEvent(
    predicate: (event: Record<string, unknown>) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.events.find(predicate);
      if (hit !== undefined) return hit;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `Timed out waiting for ${what}; server stderr:\n${this.stderr.join("\n")}`,
        );
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.#waiters.add(done);
      });
    }
  }

  /** The `host:port` from the Listening event. */
  async address(timeoutMs = 15_000): Promise<string> {
    const e = await this.waitForEvent((e) => e.event === "listening", timeoutMs, "Listening");
    return String(e.address);
  }

  /** Sends SIGTERM and waits for the exit; returns the exit code. */
  async stop(): Promise<number> {
    try {
      this.child.kill("SIGTERM");
    } catch {
      // already exited
    }
    const status = await this.child.status;
    await this.#reading;
    return status.code;
  }
}
