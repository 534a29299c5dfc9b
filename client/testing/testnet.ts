/**
 * Small runs for end-to-end tests of the testnet and the client (not part of the public
 * surface): config/models/llama-tiny (about 0.1 M parameters), all-zero `Dummy` data, and
 * epochs of a few seconds, written as a config folder `Testnet.start` accepts.
 *
 * @module
 */
import { join } from "node:path";
import { TcpBackend } from "../backend/tcp.ts";
import { IP, type TestNetwork } from "./netns.ts";
import { REPO_ROOT, Testnet, type TestnetOptions } from "../testnet/launcher.ts";
import type { CoordinatorState } from "../../coordinator/core/mod.ts";
import { generateIdentity } from "../../net/mod.ts";

/** Timings and sizes of a tiny run (seconds, sequences). */
export interface TinyRunOptions {
  readonly runId?: string;
  readonly warmupTime?: number;
  readonly cooldownTime?: number;
  readonly epochTime?: number;
  readonly maxRoundTrainTime?: number;
  readonly roundWitnessTime?: number;
  readonly minClients?: number;
  readonly initMinClients?: number;
  readonly globalBatchSize?: number;
  readonly witnessNodes?: number;
  readonly waitingForMembersExtraTime?: number;
  /** `max_clients` (left out: the config's default). */
  readonly maxClients?: number;
  /** The run finishes at this step (default 10,000: never, in tests). */
  readonly totalSteps?: number;
  /** `Dummy` (start from the seeded init) or `Hub` (fall back to it after P2P). */
  readonly checkpoint?: "Dummy" | "Hub";
  /** The checkpoint's model folder (default config/models/llama-tiny). */
  readonly modelDir?: string;
  /** Where the tokens come from (default all-zero `Dummy` data). */
  readonly data?: TinyRunData;
  /** The constant learning rate (default 1e-3). */
  readonly baseLr?: number;
  /** DisTrO's decoupled weight decay (left out: the config's default). */
  readonly weightDecay?: number;
  /** `snapshot_dtype` (left out: the config's default, f32). */
  readonly snapshotDtype?: "f32" | "bf16";
  /** `verification_percent` (default 0). */
  readonly verificationPercent?: number;
  /** `verification_bar_epochs` (left out: the config's default). */
  readonly verificationBarEpochs?: number;
}

/** A tiny run's data: zeros, a local token folder, or a TCP data server's `host:port`. */
export type TinyRunData = "Dummy" | { readonly local: string } | { readonly server: string };

function dataLocationToml(data: TinyRunData): string {
  if (data === "Dummy") return `data_location = "Dummy"`;
  if ("local" in data) return `[model.LLM.data_location]\nLocal = ${JSON.stringify(data.local)}`;
  return `[model.LLM.data_location]\nServer = ${JSON.stringify(data.server)}`;
}

/** The state.toml of a tiny run. */
export function tinyRunToml(options: TinyRunOptions = {}): string {
  const model = options.modelDir ?? join(REPO_ROOT, "config", "models", "llama-tiny");
  const batch = options.globalBatchSize ?? 4;
  const maxClients = options.maxClients === undefined
    ? ""
    : `max_clients = ${options.maxClients}\n`;
  const weightDecay = options.weightDecay === undefined
    ? ""
    : `weight_decay = ${options.weightDecay}\n`;
  const snapshotDtype = options.snapshotDtype === undefined
    ? ""
    : `snapshot_dtype = "${options.snapshotDtype}"\n`;
  const bar = options.verificationBarEpochs === undefined
    ? ""
    : `verification_bar_epochs = ${options.verificationBarEpochs}\n`;
  return `run_id = "${options.runId ?? "e2e-tiny"}"
run_state = "WaitingForMembers"

[config]
warmup_time = ${options.warmupTime ?? 6}
cooldown_time = ${options.cooldownTime ?? 3}
epoch_time = ${options.epochTime ?? 10}
max_round_train_time = ${options.maxRoundTrainTime ?? 8}
round_witness_time = ${options.roundWitnessTime ?? 1}
min_clients = ${options.minClients ?? 1}
init_min_clients = ${options.initMinClients ?? 1}
${maxClients}global_batch_size_start = ${batch}
global_batch_size_end = ${batch}
global_batch_size_warmup_tokens = 0
verification_percent = ${options.verificationPercent ?? 0}
${bar}witness_nodes = ${options.witnessNodes ?? 1}
total_steps = ${options.totalSteps ?? 10000}
waiting_for_members_extra_time = ${options.waitingForMembersExtraTime ?? 1}

[model.LLM]
architecture = "HfLlama"
data_type = "Pretraining"
max_seq_len = 32
cold_start_warmup_steps = 0
${snapshotDtype}${dataLocationToml(options.data ?? "Dummy")}

[model.LLM.checkpoint.${options.checkpoint ?? "Dummy"}]
repo_id = ${JSON.stringify(model)}

[model.LLM.lr_schedule.Constant]
base_lr = ${options.baseLr ?? 1.0e-3}
warmup_steps = 0
warmup_init_lr = 0.0

[model.LLM.optimizer.Distro]
clip_grad_norm = 1.0
compression_decay = 0.999
${weightDecay}compression_chunk = 64
compression_topk = 8
quantize_1bit = true
`;
}

/** A temporary config folder holding the tiny run's state.toml; remove it when done. */
export async function tinyRunFolder(options: TinyRunOptions = {}): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "psyche-e2e-config-" });
  await Deno.writeTextFile(join(dir, "state.toml"), tinyRunToml(options));
  return dir;
}

/** One JSON event of one testnet process. */
export interface SeenEvent {
  readonly label: string;
  readonly kind: "coordinator" | "client" | "testnet";
  readonly event: Record<string, unknown>;
}

/**
 * Collects a testnet's events (pass `watcher.onEvent` to `Testnet.start`) and waits for
 * conditions on them, failing with the condition's name and the last events seen.
 */
export class EventWatcher {
  /** Every event so far, in arrival order. */
  readonly events: SeenEvent[] = [];
  readonly #waiters = new Set<() => void>();

  /** Records an event (give this to `Testnet.start`). */
  readonly onEvent = (
    label: string,
    kind: SeenEvent["kind"],
    event: Record<string, unknown>,
  ): void => {
    this.events.push({ label, kind, event });
    for (const wake of this.#waiters) wake();
  };

  /** Events of `name` (from `label` when given). */
  named(name: string, label?: string): SeenEvent[] {
    return this.events.filter((e) =>
      e.event.event === name && (label === undefined || e.label === label)
    );
  }

  /**
   * Resolves with the first truthy value of `check()`, re-evaluated on every event; throws
   * naming `what` after `timeoutMs`.
   */
  async waitFor<T>(what: string, check: () => T | undefined | null | false, timeoutMs: number) {
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const value = check();
      if (value) return value;
      const left = deadline - Date.now();
      if (left <= 0) {
        const tail = this.events.slice(-25).map((e) => `${e.label}: ${JSON.stringify(e.event)}`);
        throw new Error(
          `timed out after ${timeoutMs} ms waiting for ${what}; last events:\n` +
            tail.join("\n"),
        );
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.#waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, 500));
        this.#waiters.add(wake);
      });
    }
  }
}

/**
 * Follows the coordinator's state as an observer (connected, never joined) and hands every
 * state to `onState`, until `signal` aborts. Tests use it to see what the logs do not say,
 * such as the checkpoint an epoch starts from.
 */
export async function observeCoordinator(
  options: { address: string; runId: string; signal: AbortSignal },
  onState: (state: CoordinatorState) => void,
): Promise<void> {
  const backend = await TcpBackend.connect({
    address: options.address,
    runId: options.runId,
    identity: generateIdentity(),
    signal: options.signal,
  });
  try {
    for await (const state of backend.states({ signal: options.signal })) onState(state);
  } catch (e) {
    if (!options.signal.aborted) throw e;
  } finally {
    await backend.close();
  }
}

/**
 * A tiny testnet an end-to-end test drives ({@link startTinyTestnet}). `await using` stops its
 * observers and the testnet and removes its run folder, whatever the test did.
 */
export interface TinyTestnet extends AsyncDisposable {
  readonly net: Testnet;
  /** Every JSON event of every process. */
  readonly watcher: EventWatcher;
  /** The testnet's console lines, for a failing test to show. */
  readonly lines: string[];
  /** Follows the coordinator's state until disposal ({@link observeCoordinator}). */
  observe(onState: (state: CoordinatorState) => void): void;
}

/**
 * Writes a tiny run folder from `run` ({@link tinyRunFolder}) and starts a testnet on it with
 * `options`, its events watched and its lines kept.
 */
export async function startTinyTestnet(
  run: TinyRunOptions,
  options: Omit<TestnetOptions, "configPath" | "write" | "colour" | "onEvent">,
): Promise<TinyTestnet> {
  const config = await tinyRunFolder(run);
  const watcher = new EventWatcher();
  const lines: string[] = [];
  let net: Testnet;
  try {
    net = await Testnet.start({
      ...options,
      configPath: config,
      write: (line) => lines.push(line),
      colour: false,
      onEvent: watcher.onEvent,
    });
  } catch (e) {
    await Deno.remove(config, { recursive: true });
    throw e;
  }
  const observing = new AbortController();
  const observers: Promise<void>[] = [];
  return {
    net,
    watcher,
    lines,
    observe(onState) {
      const where = { address: net.serverAddr, runId: net.runId, signal: observing.signal };
      observers.push(observeCoordinator(where, onState));
    },
    async [Symbol.asyncDispose]() {
      observing.abort();
      await Promise.all(observers.map((o) => o.catch(() => {})));
      await net.stop();
      await Deno.remove(config, { recursive: true });
    },
  };
}

/**
 * {@link startTinyTestnet} across `network` (client/testing/netns.ts): the coordinator on its
 * bridge, client-N on host N-1 at the host's address. A client named in `bindAll` binds p2p to
 * every interface (`0.0.0.0`) instead of that address.
 */
export function startTinyTestnetOn(
  network: TestNetwork,
  run: TinyRunOptions,
  options: Omit<TestnetOptions, "configPath" | "write" | "colour" | "onEvent"> & {
    readonly bindAll?: readonly string[];
  },
): Promise<TinyTestnet> {
  const { bindAll, ...rest } = options;
  return startTinyTestnet(run, {
    ...rest,
    coordinatorHost: network.gateway,
    clientHost: (label) => ({
      ...network.hosts[Number(label.split("-")[1]) - 1],
      ip: IP,
      bind: bindAll?.includes(label) ? "0.0.0.0" : undefined,
    }),
  });
}
