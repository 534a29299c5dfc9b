/**
 * {@linkcode CoordinatorBackend} over TCP, for runs coordinated by
 * `deno task coordinator run`: length-prefixed frames, the ed25519 handshake of net/,
 * and the messages of coordinator/server/protocol.ts.
 *
 * The connection is kept up: when it drops, calls in flight fail with
 * `BackendError("Disconnected")`, the backend reconnects with exponential back-off and,
 * if this client had joined, joins again. A `Refused` from the server (wrong run id,
 * malformed frame) or a state it cannot decode is final: the backend stops and every
 * later call fails with that error.
 *
 * @module
 */
import {
  abortableSleep,
  clientHandshake,
  DEFAULT_CLIENT_MAX_FRAME_BYTES,
  FRAME_HEADER_BYTES,
  FrameReader,
  type Identity,
  ProtocolError,
  withAbort,
  writeFrame,
} from "../../net/mod.ts";
import { decodeCoordinatorState } from "../../coordinator/encoding/mod.ts";
import {
  type Checkpoint,
  CoordinatorError,
  type CoordinatorState,
  type HealthCheck,
  type NodeIdentity,
  sha256,
  type VerificationReport,
  type Witness,
  type WitnessMetadata,
  type WitnessProof,
} from "../../coordinator/core/mod.ts";
import { BackendError, type CallOptions, type CoordinatorBackend } from "./backend.ts";
import { StateFeed } from "./state_feed.ts";
import {
  applyDelta,
  type ClientMessage,
  type ClientTelemetry,
  COORDINATOR_CONTEXT,
  decodeServerMessage,
  encodeClientMessage,
  isStateFrame,
  type ServerMessage,
  STATE_CHECKSUM_BYTES,
} from "../../coordinator/server/mod.ts";
import { equalBytes } from "../../common/mod.ts";

/** Connection changes, for the client's log. */
export type TcpBackendEvent =
  | { kind: "Connected"; address: string }
  | { kind: "Disconnected"; address: string; reason: string }
  /** `error`: why the previous attempt failed (null before the first one after a drop). */
  | {
    kind: "Reconnecting";
    address: string;
    attempt: number;
    delayMs: number;
    error: string | null;
  }
  /** Connected again after a drop, at the `attempts`-th try. */
  | { kind: "Reconnected"; address: string; attempts: number }
  /**
   * After a stall (a cut link, a busy CPU) `skipped` states had piled up behind newer ones;
   * only the newest (and every Cooldown) was followed.
   */
  | { kind: "StatesSkipped"; skipped: number }
  /** The coordinator named the run's circuit relays (on every connection, after the handshake). */
  | { kind: "Relays"; addresses: string[] }
  | { kind: "Failed"; error: BackendError };

/** Options of {@linkcode TcpBackend.connect}. */
export interface TcpBackendOptions {
  /** The coordinator's `host:port` (or `[v6]:port`). */
  address: string;
  /** The run to join; the server refuses any other. */
  runId: string;
  /** This client's ed25519 key pair (net/identity.ts). */
  identity: Identity;
  /** Milliseconds for connecting plus the handshake (default 5000). */
  connectTimeoutMs?: number;
  /** First reconnect delay in ms (default 250), doubled per failure up to `maxReconnectDelayMs`. */
  reconnectDelayMs?: number;
  /** Longest reconnect delay in ms (default 5000). */
  maxReconnectDelayMs?: number;
  /** Reconnect after the connection drops (default true). */
  reconnect?: boolean;
  /** Largest frame accepted from the server (default 64 MiB). */
  maxFrameBytes?: number;
  /**
   * Milliseconds the connection may carry nothing from the coordinator before it counts as
   * dead and is dropped and redialled (default {@link SILENT_LINK_MS}; 0: never).
   */
  silentLinkMs?: number;
  /** Connection changes. */
  onEvent?: (event: TcpBackendEvent) => void;
  /** Aborts the first connection attempt. */
  signal?: AbortSignal;
  /**
   * When the first connection is refused or times out (the coordinator is not up yet), try
   * again with the reconnect back-off, saying so each time (`Reconnecting`), until `signal`
   * aborts. Any other failure (a bad address, a refused handshake) still rejects at once.
   * Default false.
   */
  waitForCoordinator?: boolean;
}

/**
 * How long a connection may carry nothing from the coordinator before it is given up. The
 * coordinator pushes its state every 5 s whatever happens (`PUSH_INTERVAL_MS`), so this is six
 * pushes missed: its machine died, or a router between dropped the connection, without a reset.
 * Nothing else would tell: a client that has nothing to send reads a dead connection forever.
 */
export const SILENT_LINK_MS = 30_000;

/** Whether a failed first connection says the coordinator is not listening (yet). */
function coordinatorNotUp(e: unknown): boolean {
  return e instanceof Deno.errors.ConnectionRefused ||
    (e instanceof DOMException && e.name === "TimeoutError");
}

/**
 * `e` with the coordinator's address in its message, its type kept (callers tell a refusal or a
 * timeout from the rest by it). A DOMException (a timeout) has a message that cannot be set: a
 * new one of the same name carries it.
 */
function withAddress(e: unknown, address: string): unknown {
  if (!(e instanceof Error) || e.message.includes(address)) return e;
  const message = `cannot reach the coordinator at ${address}: ${e.message}`;
  if (e instanceof DOMException) return new DOMException(message, e.name);
  e.message = message;
  return e;
}

/** Splits `host:port` or `[v6]:port`; TypeError naming the address otherwise. */
export function parseAddress(address: string): { hostname: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(address.trim());
  const port = m === null ? NaN : Number(m[3]);
  if (m === null || port < 1 || port > 65535) {
    throw new TypeError(`Coordinator address "${address}" is not host:port`);
  }
  return { hostname: m[1] ?? m[2], port };
}

interface Pending {
  resolve(): void;
  reject(error: Error): void;
}

interface Link {
  conn: Deno.Conn;
  frames: FrameReader;
  /** The last write queued: frames are written one after another, never interleaved. */
  writes: Promise<void>;
  /** The bytes of the last state this connection carried: the base of the next delta. */
  lastState: Uint8Array | null;
}

/**
 * The state a `StateDelta` describes, rebuilt from `base` and checked against its checksum;
 * `ProtocolError` when there is no base, the delta does not fit it, or the bytes are not the
 * coordinator's (the connection is then dropped, and the reconnection starts with a whole state).
 */
function rebuildState(
  base: Uint8Array | null,
  delta: Extract<ServerMessage, { kind: "StateDelta" }>,
): Uint8Array {
  if (base === null) throw new ProtocolError("StateDelta: no state before it to apply it to");
  let bytes: Uint8Array;
  try {
    bytes = applyDelta(base, delta.ops, delta.length);
  } catch (e) {
    throw new ProtocolError(`StateDelta: ${(e as Error).message}`);
  }
  if (!equalBytes(sha256(bytes).subarray(0, STATE_CHECKSUM_BYTES), delta.checksum)) {
    throw new ProtocolError("StateDelta: the rebuilt state does not match its checksum");
  }
  return bytes;
}

/** A client's TCP connection to a coordinator run. */
export class TcpBackend implements CoordinatorBackend {
  /** On TCP the signer and the p2p identity are the same key. */
  readonly identity: NodeIdentity;
  readonly #options: TcpBackendOptions;
  readonly #hostname: string;
  readonly #port: number;
  #link: Link | null = null;
  #requests = new Map<number, Pending>();
  #nextRequestId = 1;
  #feed = new StateFeed();
  #joined = false;
  #closed = false;
  #failure: BackendError | null = null;
  #receivedBytes = 0;
  #loop: Promise<void> = Promise.resolve();
  /** Aborts a reconnect back-off when the backend closes. */
  #closing = new AbortController();

  private constructor(options: TcpBackendOptions) {
    const { hostname, port } = parseAddress(options.address);
    this.#options = options;
    this.#hostname = hostname;
    this.#port = port;
    const key = options.identity.publicKey.slice();
    this.identity = { signer: key, p2pIdentity: key };
  }

  /**
   * Connects and completes the handshake; rejects (with the cause) if the first attempt
   * fails, so a misconfigured address or run is reported at once.
   */
  static async connect(options: TcpBackendOptions): Promise<TcpBackend> {
    const backend = new TcpBackend(options);
    const waiting = options.signal ?? new AbortController().signal;
    for (let attempt = 1;; attempt++) {
      try {
        backend.#link = await backend.#open(options.signal);
        break;
      } catch (e) {
        if (!options.waitForCoordinator || !coordinatorNotUp(e) || waiting.aborted) throw e;
        const delayMs = backend.#backoffMs(attempt);
        const error = (e as Error).message;
        backend.#emit({ kind: "Reconnecting", address: options.address, attempt, delayMs, error });
        if (!(await sleep(delayMs, waiting))) throw e;
      }
    }
    backend.#emit({ kind: "Connected", address: options.address });
    backend.#loop = backend.#run();
    return backend;
  }

  /** {@inheritDoc CoordinatorBackend.statesEndOnTime} */
  readonly statesEndOnTime = true;

  /** {@inheritDoc CoordinatorBackend.receivedBytes} */
  get receivedBytes(): number {
    return this.#receivedBytes;
  }

  /** {@inheritDoc CoordinatorBackend.latest} */
  latest(): CoordinatorState | null {
    return this.#feed.latest();
  }

  /**
   * {@inheritDoc CoordinatorBackend.states}
   * The yielded objects are shared between iterators: read them, do not mutate them.
   * Throws the backend's final error (Refused, Protocol) if it failed.
   */
  states(options: CallOptions = {}): AsyncIterable<CoordinatorState> {
    return this.#feed.follow(options.signal);
  }

  /**
   * {@inheritDoc CoordinatorBackend.join}
   *
   * A join the connection dropped under is asked again once the backend reconnected (a
   * coordinator restarting as the client starts is no reason to give up); the join is also
   * remembered, so every later reconnection joins again.
   */
  async join(options: CallOptions = {}): Promise<void> {
    const closing = options.signal === undefined
      ? this.#closing.signal
      : AbortSignal.any([options.signal, this.#closing.signal]);
    for (;;) {
      try {
        await this.#request(
          (requestId) => ({ kind: "Join", requestId, runId: this.#options.runId }),
          options,
        );
        this.#joined = true;
        return;
      } catch (e) {
        const dropped = e instanceof BackendError && e.kind === "Disconnected" &&
          this.#failure === null && this.#options.reconnect !== false;
        if (!dropped) throw e;
        this.#joined = true;
        while (this.#link === null && this.#failure === null) {
          if (!(await sleep(50, closing))) throw e;
        }
      }
    }
  }

  /** {@inheritDoc CoordinatorBackend.sendWitness} */
  sendWitness(
    witness: Witness,
    metadata: WitnessMetadata,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    return this.#request(
      (requestId) => ({ kind: "Witness", requestId, witness, metadata, paramsDigest }),
      options,
    );
  }

  /** {@inheritDoc CoordinatorBackend.sendWarmupWitness} */
  sendWarmupWitness(
    witness: Witness,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    return this.#request(
      (requestId) => ({ kind: "WarmupWitness", requestId, witness, paramsDigest }),
      options,
    );
  }

  /** {@inheritDoc CoordinatorBackend.sendCooldownWitness} */
  sendCooldownWitness(
    proof: WitnessProof,
    paramsDigest: Uint8Array,
    options: CallOptions = {},
  ): Promise<void> {
    return this.#request(
      (requestId) => ({ kind: "CooldownWitness", requestId, proof, paramsDigest }),
      options,
    );
  }

  /** {@inheritDoc CoordinatorBackend.sendHealthCheck} */
  sendHealthCheck(checks: readonly HealthCheck[], options: CallOptions = {}): Promise<void> {
    return this.#request(
      (requestId) => ({ kind: "HealthCheck", requestId, checks: [...checks] }),
      options,
    );
  }

  /** {@inheritDoc CoordinatorBackend.sendVerificationReport} */
  sendVerificationReport(report: VerificationReport, options: CallOptions = {}): Promise<void> {
    return this.#request((requestId) => ({ kind: "Verification", requestId, report }), options);
  }

  /** {@inheritDoc CoordinatorBackend.withdraw} */
  withdraw(options: CallOptions = {}): Promise<void> {
    return this.#request((requestId) => ({ kind: "Withdraw", requestId }), options);
  }

  /**
   * {@inheritDoc CoordinatorBackend.sendTelemetry}
   * Resolves once the frame is written: the server never answers a notice.
   */
  sendTelemetry(telemetry: ClientTelemetry, options: CallOptions = {}): Promise<void> {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new BackendError("Closed", "the backend was closed"));
    const link = this.#link;
    if (link === null) {
      return Promise.reject(new BackendError("Disconnected", "not connected to the coordinator"));
    }
    const bytes = encodeClientMessage({ kind: "Telemetry", requestId: 0, telemetry });
    const written = link.writes.then(() => writeFrame(link.conn, bytes));
    link.writes = written.catch(() => closeQuietly(link.conn));
    return withAbort(
      written.catch((e) => {
        throw new BackendError("Disconnected", (e as Error).message, { cause: e });
      }),
      options.signal,
    );
  }

  /** {@inheritDoc CoordinatorBackend.sendCheckpoint} */
  sendCheckpoint(repo: Checkpoint, options: CallOptions = {}): Promise<void> {
    return this.#request((requestId) => ({ kind: "Checkpoint", requestId, repo }), options);
  }

  /** {@inheritDoc CoordinatorBackend.close} */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#closing.abort();
      if (this.#link !== null) closeQuietly(this.#link.conn);
      this.#failAll(new BackendError("Closed", "the backend was closed"));
      this.#feed.close();
    }
    await this.#loop;
  }

  /** Same as `close`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** {@link #connect}, with the coordinator's address in the message of any error. */
  async #open(signal?: AbortSignal): Promise<Link> {
    try {
      return await this.#connect(signal);
    } catch (e) {
      throw withAddress(e, this.#options.address);
    }
  }

  async #connect(signal?: AbortSignal): Promise<Link> {
    const timeout = AbortSignal.timeout(this.#options.connectTimeoutMs ?? 5000);
    const abort = signal === undefined ? timeout : AbortSignal.any([timeout, signal]);
    const conn = await withAbort(
      Deno.connect({ hostname: this.#hostname, port: this.#port }),
      abort,
    );
    const frames = new FrameReader(conn, {
      maxFrameBytes: this.#options.maxFrameBytes ?? DEFAULT_CLIENT_MAX_FRAME_BYTES,
    });
    try {
      await clientHandshake(conn, frames, {
        context: COORDINATOR_CONTEXT,
        secretKey: this.#options.identity.secretKey,
        signal: abort,
      });
    } catch (e) {
      closeQuietly(conn);
      throw e;
    }
    return { conn, frames, writes: Promise.resolve(), lastState: null };
  }

  /** Reads the current link until it ends, then reconnects, until closed or failed. */
  async #run(): Promise<void> {
    let attempt = 0;
    let lastError: string | null = null;
    const address = this.#options.address;
    while (!this.#closed && this.#failure === null) {
      const link = this.#link;
      if (link !== null) {
        const reason = await this.#read(link);
        closeQuietly(link.conn);
        this.#link = null;
        this.#failAll(new BackendError("Disconnected", reason));
        if (this.#closed || this.#failure !== null) break;
        this.#emit({ kind: "Disconnected", address, reason });
        if (this.#options.reconnect === false) {
          this.#fail(new BackendError("Disconnected", `${reason}; reconnecting is off`));
          break;
        }
      }
      attempt++;
      const delayMs = this.#backoffMs(attempt);
      this.#emit({ kind: "Reconnecting", address, attempt, delayMs, error: lastError });
      if (!(await sleep(delayMs, this.#closing.signal))) break;
      try {
        this.#link = await this.#open(this.#closing.signal);
      } catch (e) {
        lastError = (e as Error).message;
        continue;
      }
      this.#emit({ kind: "Connected", address });
      this.#emit({ kind: "Reconnected", address, attempts: attempt });
      attempt = 0;
      lastError = null;
      if (this.#joined) {
        this.#request((requestId) => ({ kind: "Join", requestId, runId: this.#options.runId }), {})
          .catch(() => {/* a refusal fails the backend; a drop retries */});
      }
    }
    this.#feed.close();
  }

  /** The wait before the `attempt`-th try (1-based): doubling from the first delay, capped. */
  #backoffMs(attempt: number): number {
    const first = this.#options.reconnectDelayMs ?? 250;
    return Math.min(first * 2 ** (attempt - 1), this.#options.maxReconnectDelayMs ?? 5000);
  }

  /** Handles frames until the link ends; returns why it ended. */
  async #read(link: Link): Promise<string> {
    let skipped = 0;
    const silence = watchSilence(link.conn, this.#options.silentLinkMs ?? SILENT_LINK_MS);
    try {
      for (;;) {
        const frame = await link.frames.next();
        if (frame === null) return silence.reason() ?? "the coordinator closed the connection";
        silence.heard();
        this.#receivedBytes += FRAME_HEADER_BYTES + frame.length;
        const msg = decodeServerMessage(frame);
        switch (msg.kind) {
          case "State":
          case "StateDelta": {
            // Rebuilt even when skipped below: the next delta is taken from these bytes.
            const bytes = msg.kind === "State" ? msg.bytes : rebuildState(link.lastState, msg);
            link.lastState = bytes;
            const state = decodeCoordinatorState(bytes);
            // A newer state already read behind this one supersedes it (the feed is latest
            // wins), so a backlog is skipped rather than worked through state by state. Never
            // a Cooldown: the apply of the epoch's last results is planned from it alone.
            const next = link.frames.peekBuffered();
            const newer = next !== null && isStateFrame(next);
            if (newer && state.runState !== "Cooldown") {
              skipped++;
              break;
            }
            this.#feed.publish(state);
            if (skipped > 0) this.#emit({ kind: "StatesSkipped", skipped });
            skipped = 0;
            // Let the followers plan from the Cooldown before the newer state replaces it.
            if (newer) await new Promise((resolve) => setTimeout(resolve, 0));
            break;
          }
          case "Ack":
            this.#settle(msg.requestId, null);
            break;
          case "Error":
            this.#settle(msg.requestId, new CoordinatorError(msg.code, msg.message));
            break;
          case "Refused":
            this.#fail(new BackendError("Refused", msg.reason));
            return msg.reason;
          case "Relays":
            this.#emit({ kind: "Relays", addresses: msg.addresses });
            break;
        }
      }
    } catch (e) {
      if (this.#closed) return "closed";
      const silent = silence.reason();
      if (silent !== undefined) return silent;
      const error = e as Error;
      if (
        error.name === "ProtocolError" || error.name === "StateDecodeError" ||
        error.name === "FrameError"
      ) {
        this.#fail(new BackendError("Protocol", error.message, { cause: error }));
      }
      return error.message;
    } finally {
      silence.stop();
    }
  }

  #request(build: (requestId: number) => ClientMessage, options: CallOptions): Promise<void> {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new BackendError("Closed", "the backend was closed"));
    const link = this.#link;
    if (link === null) {
      return Promise.reject(new BackendError("Disconnected", "not connected to the coordinator"));
    }
    const requestId = this.#nextRequestId;
    this.#nextRequestId = requestId === 0xffff_ffff ? 1 : requestId + 1;
    const bytes = encodeClientMessage(build(requestId));
    const answer = new Promise<void>((resolve, reject) => {
      this.#requests.set(requestId, { resolve, reject });
    });
    link.writes = link.writes.then(() => writeFrame(link.conn, bytes)).catch((e) => {
      this.#settle(requestId, new BackendError("Disconnected", (e as Error).message, { cause: e }));
      closeQuietly(link.conn);
    });
    return withAbort(answer, options.signal).finally(() => this.#requests.delete(requestId));
  }

  #settle(requestId: number, error: Error | null): void {
    const pending = this.#requests.get(requestId);
    if (pending === undefined) return;
    this.#requests.delete(requestId);
    if (error === null) pending.resolve();
    else pending.reject(error);
  }

  #failAll(error: Error): void {
    const all = [...this.#requests.values()];
    this.#requests.clear();
    for (const p of all) p.reject(error);
  }

  #fail(error: BackendError): void {
    if (this.#failure !== null) return;
    this.#failure = error;
    this.#failAll(error);
    this.#emit({ kind: "Failed", error });
    if (this.#link !== null) closeQuietly(this.#link.conn);
    this.#feed.fail(error);
  }

  #emit(event: TcpBackendEvent): void {
    this.#options.onEvent?.(event);
  }
}

/** Waits `ms`; false when `signal` aborted first. */
function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return abortableSleep(ms, signal).then(() => true, () => false);
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // already closed
  }
}

/**
 * Closes `conn` once nothing was heard on it for `silentMs` (never when 0), and says so. Checked
 * four times per `silentMs`; a check that comes late (the event loop was blocked: a busy machine)
 * starts the count again, since frames that arrived meanwhile are not read yet.
 */
function watchSilence(
  conn: Deno.Conn,
  silentMs: number,
): { heard(): void; reason(): string | undefined; stop(): void } {
  let heardAt = performance.now();
  let reason: string | undefined;
  if (silentMs <= 0) return { heard() {}, reason: () => undefined, stop() {} };
  const every = silentMs / 4;
  let checkedAt = heardAt;
  const timer = setInterval(() => {
    const now = performance.now();
    const late = now - checkedAt > 2 * every;
    checkedAt = now;
    if (late) heardAt = now;
    if (now - heardAt < silentMs || reason !== undefined) return;
    reason = `the coordinator sent nothing for ${Math.round((now - heardAt) / 1000)} s ` +
      `(it sends its state every 5 s): its machine or the route to it is gone`;
    try {
      conn.close();
    } catch { /* closed already */ }
  }, every);
  return {
    heard: () => heardAt = performance.now(),
    reason: () => reason,
    stop: () => clearInterval(timer),
  };
}
