/**
 * An in-process coordinator and its {@linkcode CoordinatorBackend}s: the same
 * {@linkcode CoordinatorHost} the TCP server drives, without sockets, with a clock the
 * caller controls. For client tests and simulations that need a real coordinator but not
 * a network; it passes the same compliance suite as `TcpBackend`
 * (client/testing/backend_compliance.ts).
 *
 * States reach backends as the TCP server sends them (encoded, then decoded), so a client
 * sees exactly the values it would see over TCP and cannot mutate the coordinator's state.
 *
 * @example
 * ```ts
 * import { MemoryCoordinator } from "./memory.ts";
 * import { CoordinatorHost } from "../../coordinator/server/mod.ts";
 * import { generateIdentity } from "../../net/mod.ts";
 * import { testState } from "../../tests/support/coordinator_fixtures.ts";
 * let now = 100;
 * const host = new CoordinatorHost({
 *   state: testState({ initMinClients: 1, minClients: 1 }, now),
 *   withdrawOnDisconnect: true,
 * });
 * const coordinator = new MemoryCoordinator({ host, clock: () => now });
 * const backend = coordinator.connect(generateIdentity().publicKey, "test-run");
 * await backend.join();
 * now += 2;
 * coordinator.tick();
 * if (backend.latest()?.runState !== "Warmup") throw new Error(backend.latest()?.runState);
 * await backend.close();
 * ```
 *
 * @module
 */
import { decodeCoordinatorState, encodeCoordinatorState } from "../../coordinator/encoding/mod.ts";
import {
  type Checkpoint,
  CoordinatorError,
  type CoordinatorState,
  type HealthCheck,
  type NodeIdentity,
  type VerificationReport,
  type Witness,
  type WitnessMetadata,
  type WitnessProof,
} from "../../coordinator/core/mod.ts";
import {
  BackendError,
  type CallOptions,
  type ClientTelemetry,
  type CoordinatorBackend,
} from "./backend.ts";
import { StateFeed } from "./state_feed.ts";
import type { ClientMessage, CoordinatorHost } from "../../coordinator/server/mod.ts";

/** Options of {@linkcode MemoryCoordinator}. */
export interface MemoryCoordinatorOptions {
  /** The run (the coordinator mutates it through the host). */
  host: CoordinatorHost;
  /** Seconds, whole milliseconds at most (default: the wall clock to the millisecond). */
  clock?: () => number;
  /** A u64 per tick or request (default: a fixed sequence, so runs are reproducible). */
  randomSeed?: () => bigint;
}

/** A coordinator run in this process, shared by the backends it hands out. */
export class MemoryCoordinator {
  /** The host every backend talks to (inspect it in tests). */
  readonly host: CoordinatorHost;
  readonly #clock: () => number;
  readonly #randomSeed: () => bigint;
  #backends = new Set<MemoryBackend>();
  #publishedVersion = -1;
  #seed = 0x9e37_79b9n;

  constructor(options: MemoryCoordinatorOptions) {
    this.host = options.host;
    this.#clock = options.clock ?? (() => Math.floor(Date.now()) / 1000);
    this.#randomSeed = options.randomSeed ?? (() => {
      this.#seed = (this.#seed * 6364136223846793005n + 1442695040888963407n) &
        0xffff_ffff_ffff_ffffn;
      return this.#seed;
    });
  }

  /** A backend for the client with public key `key`, following run `runId`. */
  connect(key: Uint8Array, runId: string): MemoryBackend {
    const backend = new MemoryBackend(this, key, runId);
    this.#backends.add(backend);
    backend.deliver(this.#snapshot());
    return backend;
  }

  /** Ticks the run at the clock's time and sends a changed state to every backend. */
  tick(): void {
    this.host.tick(this.#clock(), this.#randomSeed());
    this.#publish();
  }

  /** @internal A backend's request (MemoryBackend only). */
  request(backend: MemoryBackend, msg: ClientMessage): void {
    const reply = this.host.handle(backend.identity.signer, msg, this.#clock(), this.#randomSeed());
    this.#publish();
    if (reply.kind === "Error") throw new CoordinatorError(reply.code, reply.message);
    if (reply.kind === "Refused") throw new BackendError("Refused", reply.reason);
  }

  /** @internal A backend closed or was refused: the client left (MemoryBackend only). */
  leave(backend: MemoryBackend): void {
    if (!this.#backends.delete(backend)) return;
    this.host.disconnect(backend.identity.signer, this.#clock(), this.#randomSeed());
    this.#publish();
  }

  #snapshot(): CoordinatorState {
    return decodeCoordinatorState(encodeCoordinatorState(this.host.state));
  }

  #publish(): void {
    if (this.host.version === this.#publishedVersion) return;
    this.#publishedVersion = this.host.version;
    const state = this.#snapshot();
    for (const b of this.#backends) b.deliver(state);
  }
}

/** One client's backend on a {@linkcode MemoryCoordinator}. */
export class MemoryBackend implements CoordinatorBackend {
  /** The client's identity (signer and p2p key are the same key, as on TCP). */
  readonly identity: NodeIdentity;
  readonly #coordinator: MemoryCoordinator;
  readonly #runId: string;
  #feed = new StateFeed();
  #closed = false;

  /** Use {@linkcode MemoryCoordinator.connect}. */
  constructor(coordinator: MemoryCoordinator, key: Uint8Array, runId: string) {
    this.#coordinator = coordinator;
    this.#runId = runId;
    this.identity = { signer: key.slice(), p2pIdentity: key.slice() };
  }

  /** @internal A new state from the coordinator. */
  deliver(state: CoordinatorState): void {
    this.#feed.publish(state);
  }

  /** {@inheritDoc CoordinatorBackend.latest} */
  latest(): CoordinatorState | null {
    return this.#feed.latest();
  }

  /** {@inheritDoc CoordinatorBackend.states} */
  states(options: CallOptions = {}): AsyncIterable<CoordinatorState> {
    return this.#feed.follow(options.signal);
  }

  /** {@inheritDoc CoordinatorBackend.join} */
  join(options: CallOptions = {}): Promise<void> {
    return this.#call({ kind: "Join", requestId: 0, runId: this.#runId }, options);
  }

  /** {@inheritDoc CoordinatorBackend.sendWitness} */
  sendWitness(
    witness: Witness,
    metadata: WitnessMetadata,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    return this.#call({ kind: "Witness", requestId: 0, witness, metadata, paramsDigest }, options);
  }

  /** {@inheritDoc CoordinatorBackend.sendWarmupWitness} */
  sendWarmupWitness(
    witness: Witness,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    return this.#call({ kind: "WarmupWitness", requestId: 0, witness, paramsDigest }, options);
  }

  /** {@inheritDoc CoordinatorBackend.sendCooldownWitness} */
  sendCooldownWitness(
    proof: WitnessProof,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    return this.#call({ kind: "CooldownWitness", requestId: 0, proof, paramsDigest }, options);
  }

  /** {@inheritDoc CoordinatorBackend.sendHealthCheck} */
  sendHealthCheck(checks: readonly HealthCheck[], options: CallOptions = {}): Promise<void> {
    return this.#call({ kind: "HealthCheck", requestId: 0, checks: [...checks] }, options);
  }

  /** {@inheritDoc CoordinatorBackend.sendVerificationReport} */
  sendVerificationReport(report: VerificationReport, options: CallOptions = {}): Promise<void> {
    return this.#call({ kind: "Verification", requestId: 0, report }, options);
  }

  /** {@inheritDoc CoordinatorBackend.withdraw} */
  withdraw(options: CallOptions = {}): Promise<void> {
    return this.#call({ kind: "Withdraw", requestId: 0 }, options);
  }

  /** {@inheritDoc CoordinatorBackend.sendTelemetry} */
  sendTelemetry(telemetry: ClientTelemetry, options: CallOptions = {}): Promise<void> {
    return this.#call({ kind: "Telemetry", requestId: 0, telemetry }, options);
  }

  /** {@inheritDoc CoordinatorBackend.sendCheckpoint} */
  sendCheckpoint(repo: Checkpoint, options: CallOptions = {}): Promise<void> {
    return this.#call({ kind: "Checkpoint", requestId: 0, repo }, options);
  }

  /** {@inheritDoc CoordinatorBackend.close} */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#coordinator.leave(this);
      this.#feed.close();
    }
    return Promise.resolve();
  }

  /** Same as `close`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #call(msg: ClientMessage, options: CallOptions): Promise<void> {
    const failure = this.#feed.failure;
    if (failure !== null) return Promise.reject(failure);
    if (this.#closed) return Promise.reject(new BackendError("Closed", "the backend was closed"));
    if (options.signal?.aborted) return Promise.reject(options.signal.reason);
    // Structured-clone the message: the coordinator must not keep the caller's objects.
    const copy = structuredClone(msg);
    return Promise.resolve().then(() => {
      try {
        this.#coordinator.request(this, copy);
      } catch (e) {
        if (e instanceof BackendError && e.kind === "Refused") {
          this.#feed.fail(e);
          this.#coordinator.leave(this);
        }
        throw e;
      }
    });
  }
}
