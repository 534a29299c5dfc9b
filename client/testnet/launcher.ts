/**
 * A local testnet: one coordinator (`coordinator/cli/main.ts run`, what `deno task coordinator
 * run` starts) and any number of training clients (`client/main.ts train`), each a child
 * process on 127.0.0.1, in a temporary folder that holds the run config, the clients'
 * identities (32-byte ed25519 secret keys), the saved coordinator states and the checkpoints.
 *
 * Ports are free ones picked at start: the coordinator's, the data server's (when the run reads
 * from one, the coordinator serves it with `--data-config`) and each client's libp2p port; each
 * client is given the other clients' addresses (`--bootstrap-peer /ip4/127.0.0.1/tcp/P/p2p/ID`,
 * known in advance from the generated identities) so they find each other without discovery.
 *
 * Every child logs JSON; each line is shown labelled (output.ts) and handed to `onEvent`, which
 * is how the demo builds its summary and the end-to-end tests follow the run. `stop()` ends the
 * children (SIGTERM, then SIGKILL after a grace period) and removes the temporary folder.
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { peerIdOf } from "../../net/p2p/mod.ts";
import type { TestnetLogFormat } from "./args.ts";
import { ChildProcess } from "./child.ts";
import { formatLine, parseEventLine, type ProcessKind } from "./output.ts";
import { prepareRunConfig, withCoordinatorConfig } from "./run_config.ts";
import { describeFit, fitBudgets, measureStep } from "./calibrate.ts";
import { logLine } from "../../cli/entry.ts";
import { toHex } from "../../common/mod.ts";
import { abortableSleep, generateIdentity, type Identity, saveIdentity } from "../../net/mod.ts";

/** The repository root, where children run (deno.json's import map, relative model paths). */
export const REPO_ROOT: string = fileURLToPath(new URL("../../", import.meta.url));

/** Options for {@link Testnet.start}. */
export interface TestnetOptions {
  /** Folder with `state.toml` and, for runs reading a TCP data server, `data.toml`. */
  readonly configPath: string;
  /** Clients started at once. */
  readonly numClients: number;
  /** How lines are shown (default console). */
  readonly logs?: TestnetLogFormat;
  /** Where shown lines go (default stdout); null shows nothing. */
  readonly write?: ((line: string) => void) | null;
  /** Colour the labels (default: stdout is a terminal and NO_COLOR is unset). */
  readonly colour?: boolean;
  /** Every JSON event of every child, with the child's label and kind. */
  readonly onEvent?: (label: string, kind: ProcessKind, event: Record<string, unknown>) => void;
  /** Checkpoints go to `checkpointDir/<label>` (default: in the temp folder). */
  readonly checkpointDir?: string | null;
  /**
   * Which clients write checkpoints at each Cooldown: `first` (client-1 only, the default:
   * every honest client holds the same parameters, and a checkpoint of the 20 M model is
   * 80 MB) or `all`.
   */
  readonly checkpointClients?: "first" | "all";
  /** Called when a client's process exits, whether killed or by itself. */
  readonly onClientExit?: (label: string, status: Deno.CommandStatus) => void;
  /** Keep the temporary folder after `stop()`. */
  readonly keepTemp?: boolean;
  /** Extra arguments for the coordinator (e.g. `--withdraw-on-disconnect false`). */
  readonly coordinatorArgs?: readonly string[];
  /** Extra arguments for every client (e.g. `--model DIR`). */
  readonly clientArgs?: readonly string[];
  /** Extra environment variables of one client, by label (test hooks such as faults). */
  readonly clientEnv?: (label: string) => Record<string, string> | undefined;
  /**
   * Give each client the others' addresses (`--bootstrap-peer`; default true). Off, clients
   * meet only as a real run's would: through gossip and the coordinator's relay.
   */
  readonly bootstrapPeers?: boolean;
  /** The libp2p port of a client's first start, by label (default: a free one; tests). */
  readonly clientPort?: (label: string) => number | undefined;
  /**
   * Measure a training step of the run's model here first, and raise the run's round, Warmup
   * and epoch times to what `numClients` clients sharing this machine need (calibrate.ts).
   */
  readonly calibrate?: boolean;
  /** How long to wait for the coordinator to listen (default 60 s). */
  readonly startTimeoutMs?: number;
  /** The coordinator serves its dashboard on 127.0.0.1 at this port (0: a free one). */
  readonly dashboardPort?: number | null;
  /** The address the coordinator listens on (default 127.0.0.1). */
  readonly coordinatorHost?: string;
  /**
   * What clients dial to reach the coordinator, from its `host:port` once the port is chosen
   * (default: that address itself). The network lab puts a delaying proxy there.
   */
  readonly clientRoute?: (serverAddr: string) => string;
  /**
   * Where a client runs, by label: a network namespace and its address there (tests of what
   * crosses a real network, client/testing/netns.ts). Default: here, on 127.0.0.1.
   */
  readonly clientHost?: (label: string) => ClientHost | undefined;
}

/** A client's host on a test network. */
export interface ClientHost {
  /** The network namespace to run the client in. */
  readonly netns: string;
  /** Its address there: peers reach it at it. */
  readonly address: string;
  /** The interface it binds p2p to (default `address`; `0.0.0.0` for every interface). */
  readonly bind?: string;
  /** The `ip` binary that enters the namespace (default `ip`, looked up on PATH). */
  readonly ip?: string;
}

interface ClientSlot {
  label: string;
  index: number;
  identity: Identity;
  keyPath: string;
  port: number;
  process: ChildProcess | null;
  /** Times it was started again because another process took its libp2p port first. */
  portRetries?: number;
}

/** Fresh ports a client gets when another process took its libp2p port before it listened. */
const MAX_PORT_RETRIES = 3;

/**
 * `n` distinct free TCP ports on 127.0.0.1: all are held open together while the OS picks them,
 * so no two are the same, then released.
 */
export function freePorts(n: number): number[] {
  const listeners = Array.from(
    { length: n },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((l) => (l.addr as Deno.NetAddr).port);
  for (const l of listeners) l.close();
  return ports;
}

/** A free TCP port on 127.0.0.1 (asked of the OS, then released). */
export function freePort(): number {
  return freePorts(1)[0];
}

/** The libp2p address of a client listening on `host:port` with `identity`. */
export function clientMultiaddr(identity: Identity, port: number, host = "127.0.0.1"): string {
  return `/ip4/${host}/tcp/${port}/p2p/${peerIdOf(identity.publicKey).toString()}`;
}

/** A running testnet. Start with {@link Testnet.start}; always `stop()` it. */
export class Testnet {
  /** The temporary folder (config, identities, saved states, default checkpoints). */
  readonly tempDir: string;
  /** The run id from the config. */
  readonly runId: string;
  /** `host:port` of the coordinator. */
  readonly serverAddr: string;
  /** `host:port` clients dial for it (`clientRoute`; else `serverAddr`). */
  readonly clientServerAddr: string;
  /** `http://127.0.0.1:port` of the coordinator's dashboard; null when it serves none. */
  readonly dashboardUrl: string | null;
  readonly #options: TestnetOptions;
  /** The coordinator's command line without `--state` (restarts give another file). */
  readonly #coordinatorArgs: readonly string[];
  #coordinator: ChildProcess | null = null;
  /** Resolves when a coordinator exits by itself (not in `restartCoordinator`). */
  readonly #coordinatorExited: Promise<Deno.CommandStatus>;
  #coordinatorExit: (status: Deno.CommandStatus) => void = () => {};
  readonly #clients: ClientSlot[] = [];
  readonly #labelWidth = 11;
  #stopped = false;
  #restartsPending = 0;

  private constructor(
    options: TestnetOptions,
    fields: {
      tempDir: string;
      runId: string;
      serverAddr: string;
      coordinatorArgs: string[];
      dashboardUrl: string | null;
    },
  ) {
    this.#options = options;
    this.tempDir = fields.tempDir;
    this.runId = fields.runId;
    this.serverAddr = fields.serverAddr;
    this.clientServerAddr = options.clientRoute?.(fields.serverAddr) ?? fields.serverAddr;
    this.dashboardUrl = fields.dashboardUrl;
    this.#coordinatorArgs = fields.coordinatorArgs;
    this.#coordinatorExited = new Promise((resolve) => (this.#coordinatorExit = resolve));
  }

  /** The folder the coordinator saves the run to at every epoch end. */
  get savedStatesDir(): string {
    return join(this.tempDir, "saved-states");
  }

  /**
   * Starts the coordinator on `statePath` and waits until it listens (or throws with its last
   * lines when it exits or does not listen within the start timeout).
   */
  async #startCoordinator(statePath: string): Promise<void> {
    let listening: (() => void) | null = null;
    const ready = new Promise<void>((resolve) => (listening = resolve));
    const tail: string[] = [];
    const coordinator = new ChildProcess("coordinator", {
      args: [...this.#coordinatorArgs, "--state", statePath],
      cwd: REPO_ROOT,
      onLine: (line) => {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        const event = parseEventLine(line);
        if (event?.event === "listening") listening?.();
        this.#show("coordinator", "coordinator", 0, line, event);
      },
    });
    this.#coordinator = coordinator;
    coordinator.status.then((status) => {
      if (this.#coordinator === coordinator) this.#coordinatorExit(status);
    });
    const timeout = this.#options.startTimeoutMs ?? 60_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      ready.then(() => "ready" as const),
      coordinator.status.then(() => "exited" as const),
      new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), timeout))),
    ]);
    clearTimeout(timer);
    if (outcome !== "ready") {
      await coordinator.stop(1000);
      throw new Error(
        `the coordinator ${
          outcome === "exited" ? "exited" : `did not listen within ${timeout} ms`
        }; its last lines:\n${tail.join("\n")}`,
      );
    }
  }

  /**
   * Kills the coordinator (SIGKILL: no goodbye, nothing saved) and starts it again from the
   * newest run it saved (`{run_id}-step{N}.toml`), on the same port; resolves once it listens.
   * Returns the saved file used. Throws when it saved nothing yet.
   */
  async restartCoordinator(): Promise<string> {
    const saved: { path: string; step: number }[] = [];
    for await (const entry of Deno.readDir(this.savedStatesDir)) {
      const m = /-step(\d+)\.toml$/.exec(entry.name);
      if (entry.isFile && m) {
        saved.push({ path: join(this.savedStatesDir, entry.name), step: +m[1] });
      }
    }
    if (saved.length === 0) throw new Error("the coordinator saved no run to restart from");
    const newest = saved.sort((a, b) => b.step - a.step)[0].path;
    const old = this.#coordinator;
    this.#coordinator = null; // its exit is not the testnet's end
    if (old !== null) {
      this.#note(`sending SIGKILL to the coordinator (pid ${old.pid})`);
      old.signal("SIGKILL");
      await old.status;
    }
    this.#note(`restarting the coordinator from ${newest}`);
    await this.#startCoordinator(newest);
    return newest;
  }

  /**
   * Writes the config, starts the coordinator, waits until it listens, then starts
   * `numClients` clients. Throws (after cleaning up) when the config is invalid or the
   * coordinator does not come up.
   */
  static async start(options: TestnetOptions): Promise<Testnet> {
    const configDir = resolve(options.configPath);
    const statePath = join(configDir, "state.toml");
    const dataPath = join(configDir, "data.toml");
    const text = await Deno.readTextFile(statePath);
    const dataPort = freePort();
    let prepared = prepareRunConfig(text, statePath, { dataPort });
    if (prepared.servesData && !(await exists(dataPath))) {
      throw new Error(
        `${statePath} reads its data from a TCP server, but ${dataPath} (the data server's ` +
          `config) does not exist`,
      );
    }
    let calibration: string | null = null;
    if (options.calibrate) {
      const cost = await measureStep(prepared.run, {
        clients: options.numClients,
        baseDir: REPO_ROOT,
      });
      const fitted = fitBudgets(prepared.run.config, cost, options.numClients);
      calibration = `calibration: ${
        describeFit(cost, options.numClients, prepared.run.config, fitted)
      }`;
      prepared = withCoordinatorConfig(prepared, fitted, calibration);
    }
    const tempDir = await Deno.makeTempDir({ prefix: "psyche-testnet-" });
    try {
      const runConfig = join(tempDir, "state.toml");
      await Deno.writeTextFile(runConfig, prepared.text);
      await Deno.mkdir(join(tempDir, "identities"));
      const port = freePort();
      const coordinatorHost = options.coordinatorHost ?? "127.0.0.1";
      const serverAddr = `${coordinatorHost}:${port}`;
      const dashboardPort = options.dashboardPort === 0 ? freePort() : options.dashboardPort;
      const dashboardUrl = dashboardPort == null ? null : `http://127.0.0.1:${dashboardPort}`;
      const coordinatorArgs = [
        Deno.execPath(),
        "run",
        "--allow-read",
        "--allow-write",
        "--allow-net",
        "--allow-env",
        // The relay on 0.0.0.0 lists the interfaces it is reachable on (deno task coordinator).
        "--allow-sys=networkInterfaces",
        "coordinator/cli/main.ts",
        "run",
        "--server-port",
        String(port),
        "--hostname",
        coordinatorHost,
        "--logs",
        "json",
        "--save-state-dir",
        join(tempDir, "saved-states"),
        // Every client connects from 127.0.0.1: lift the per-address cap meant for the internet.
        "--max-connections-per-address",
        "1024",
        ...(prepared.servesData ? ["--data-config", dataPath] : []),
        ...(dashboardPort == null ? [] : ["--dashboard-port", String(dashboardPort)]),
        ...(options.coordinatorArgs ?? []),
      ];
      const testnet = new Testnet(options, {
        tempDir,
        runId: prepared.run.runId,
        serverAddr,
        coordinatorArgs,
        dashboardUrl,
      });
      if (calibration !== null) testnet.#note(calibration);
      if (dashboardUrl !== null) testnet.#note(`dashboard: ${dashboardUrl}`);
      try {
        await testnet.#startCoordinator(runConfig);
      } catch (e) {
        testnet.#stopped = true;
        throw e;
      }
      for (let i = 0; i < options.numClients; i++) await testnet.#newSlot();
      for (const slot of testnet.#clients) testnet.#spawn(slot);
      return testnet;
    } catch (e) {
      if (!options.keepTemp) await Deno.remove(tempDir, { recursive: true }).catch(() => {});
      throw e;
    }
  }

  /** Labels of the clients whose process is running. */
  liveClients(): string[] {
    return this.#clients.filter((c) => c.process !== null && !c.process.exited).map((c) => c.label);
  }

  /** Whether no client runs and none is about to be restarted by `randomKills`. */
  idle(): boolean {
    return this.#restartsPending === 0 && this.liveClients().length === 0;
  }

  /** The hex public key of a client, by label. */
  clientKey(label: string): string {
    return toHex(this.#slot(label).identity.publicKey);
  }

  /** Resolves when the coordinator exits. */
  get coordinatorExited(): Promise<Deno.CommandStatus> {
    return this.#coordinatorExited;
  }

  /** Starts one more client with a fresh identity; returns its label. */
  async addClient(): Promise<string> {
    const slot = await this.#newSlot();
    this.#spawn(slot);
    return slot.label;
  }

  /** Sends `signal` (default SIGKILL: no goodbye) to a client and waits for it to exit. */
  async kill(label: string, signal: Deno.Signal = "SIGKILL"): Promise<void> {
    const slot = this.#slot(label);
    if (slot.process === null) return;
    this.#note(`sending ${signal} to ${label} (pid ${slot.process.pid})`);
    slot.process.signal(signal);
    await slot.process.status;
  }

  /** Starts a stopped client again with the same identity (on a fresh libp2p port). */
  restart(label: string): void {
    const slot = this.#slot(label);
    if (slot.process !== null && !slot.process.exited) {
      throw new Error(`${label} is still running`);
    }
    slot.port = freePort();
    this.#note(`restarting ${label}`);
    this.#spawn(slot);
  }

  /**
   * Kills `count` random running clients, one every `intervalMs`, each restarted `restartMs`
   * later, until done or `signal` aborts. `randomIndex(n)` picks in 0..n-1.
   */
  async randomKills(options: {
    count: number;
    intervalMs: number;
    restartMs?: number;
    randomIndex?: (n: number) => number;
    signal?: AbortSignal;
  }): Promise<void> {
    const pick = options.randomIndex ?? ((n: number) => Math.floor(Math.random() * n));
    for (let done = 0; done < options.count; done++) {
      if (!(await sleep(options.intervalMs, options.signal))) return;
      const live = this.liveClients();
      if (live.length === 0) continue;
      const victim = live[pick(live.length)];
      this.#restartsPending++;
      try {
        this.#note(`random kill ${done + 1}/${options.count}: ${victim}`);
        await this.kill(victim);
        if (!(await sleep(options.restartMs ?? 5000, options.signal))) return;
        if (!this.#stopped) this.restart(victim);
      } finally {
        this.#restartsPending--;
      }
    }
  }

  /** Stops every child (SIGTERM, SIGKILL after `graceMs`) and removes the temporary folder. */
  async stop(graceMs = 5000): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#note("stopping");
    await Promise.all(this.#clients.map((c) => c.process?.stop(graceMs)));
    await this.#coordinator?.stop(graceMs);
    if (!this.#options.keepTemp) {
      await Deno.remove(this.tempDir, { recursive: true }).catch(() => {});
    }
  }

  /** Stops the testnet (for `await using`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  #slot(label: string): ClientSlot {
    const slot = this.#clients.find((c) => c.label === label);
    if (slot === undefined) throw new RangeError(`no client labelled "${label}"`);
    return slot;
  }

  async #newSlot(): Promise<ClientSlot> {
    const index = this.#clients.length + 1;
    const label = `client-${index}`;
    const identity = generateIdentity();
    const keyPath = join(this.tempDir, "identities", `${label}.key`);
    await saveIdentity(keyPath, identity);
    const port = this.#options.clientPort?.(label) ?? freePort();
    const slot = { label, index, identity, keyPath, port, process: null };
    this.#clients.push(slot);
    return slot;
  }

  #spawn(slot: ClientSlot): void {
    const checkpoints = join(
      this.#options.checkpointDir ?? join(this.tempDir, "checkpoints"),
      slot.label,
    );
    const checkpointing = (this.#options.checkpointClients ?? "first") === "all" ||
      slot.index === 1;
    const hostOf = (c: ClientSlot) => this.#options.clientHost?.(c.label);
    const bootstrap = this.#options.bootstrapPeers !== false;
    const peers = this.#clients.filter((c) => bootstrap && c !== slot).flatMap((c) => [
      "--bootstrap-peer",
      clientMultiaddr(c.identity, c.port, hostOf(c)?.address),
    ]);
    const host = hostOf(slot);
    const args = [
      ...(host === undefined ? [] : [host.ip ?? "ip", "netns", "exec", host.netns]),
      Deno.execPath(),
      "run",
      "-A",
      "client/main.ts",
      "train",
      "--run-id",
      this.runId,
      "--server-addr",
      this.clientServerAddr,
      "--identity-secret-key-path",
      slot.keyPath,
      "--bind-p2p-port",
      String(slot.port),
      // A local testnet keeps its clients on loopback: nothing outside this machine needs them.
      "--bind-p2p-interface",
      host === undefined ? "127.0.0.1" : host.bind ?? host.address,
      "--logs",
      "json",
      ...(checkpointing ? ["--checkpoint-dir", checkpoints] : []),
      ...peers,
      ...(this.#options.clientArgs ?? []),
    ];
    // freePort releases the port it found: another process may take it before the client
    // listens (EADDRINUSE at start). Such a client is started again on a fresh port.
    let portTaken = false;
    slot.process = new ChildProcess(slot.label, {
      args,
      cwd: REPO_ROOT,
      env: this.#options.clientEnv?.(slot.label),
      onLine: (line) => {
        if (line.includes("EADDRINUSE") && line.includes(`:${slot.port}`)) portTaken = true;
        this.#show(slot.label, "client", slot.index, line, parseEventLine(line));
      },
    });
    const process = slot.process;
    process.status.then((status) => {
      const retries = slot.portRetries ?? 0;
      if (portTaken && status.code !== 0 && !this.#stopped && retries < MAX_PORT_RETRIES) {
        const taken = slot.port;
        slot.port = freePort();
        slot.portRetries = retries + 1;
        this.#note(
          `${slot.label} could not listen on p2p port ${taken} (another process took it): ` +
            `starting it again on ${slot.port}`,
        );
        this.#spawn(slot);
        return;
      }
      if (!this.#stopped) {
        this.#note(
          `${slot.label} exited (${
            status.signal === null ? `code ${status.code}` : `signal ${status.signal}`
          })`,
        );
      }
      this.#options.onClientExit?.(slot.label, status);
    });
    this.#note(
      `${slot.label} started (pid ${slot.process.pid}, key ${
        toHex(slot.identity.publicKey).slice(0, 12)
      }…, p2p port ${slot.port})`,
    );
  }

  #show(
    label: string,
    kind: ProcessKind,
    index: number,
    line: string,
    event: Record<string, unknown> | null,
  ): void {
    if (event !== null) this.#options.onEvent?.(label, kind, event);
    const write = this.#options.write === undefined
      ? (text: string) => console.log(text)
      : this.#options.write;
    if (write === null) return;
    write(formatLine({ label, kind, index }, line, {
      format: this.#options.logs ?? "console",
      colour: this.#options.colour ?? defaultColour(),
      labelWidth: this.#labelWidth,
      timeMs: Date.now(),
    }));
  }

  #note(message: string): void {
    const line = logLine(Date.now(), "info", "testnet", { message });
    this.#show("testnet", "testnet", 10, line, JSON.parse(line));
  }
}

function defaultColour(): boolean {
  return Deno.stdout.isTerminal() && !Deno.env.get("NO_COLOR");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Waits `ms`; false when `signal` aborted first. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return abortableSleep(ms, signal).then(() => true, () => false);
}
