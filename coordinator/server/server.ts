/**
 * The coordinator's TCP server: the I/O shell around {@linkcode CoordinatorHost}.
 *
 * ```mermaid
 * flowchart LR
 *   conn[client connection] --> table[ConnectionTable: per-address cap and rate, eviction]
 *   table --> hs[ed25519 handshake, allowlist]
 *   hs -->|frames within kind limits and rates| pre[CoordinatorHost.precheck]
 *   pre -->|decodeClientMessage| host[CoordinatorHost]
 *   sweep[idle sweep] -->|closes quiet non-members| table
 *   deadline[timer at the next deadline] --> host
 *   backstop[500 ms backstop tick] --> host
 *   host -->|State / Ack / Error| outbox[Outbox per client]
 *   host -->|events| log[log lines] & save[state.toml at epoch end]
 *   host -->|authorizeData| data[in-process data server]
 * ```
 *
 * Per connection: the handshake binds it to an ed25519 key (a bad signature, a key outside
 * a permissioned run's allowlist, a garbage or oversized frame, or a message before the
 * handshake is answered `Rejected` and closed); then every frame is one
 * {@linkcode ClientMessage}, answered `Ack` or `Error` (rejected by the coordinator's rules;
 * the connection stays open). A frame that does not decode, or is longer than its kind can
 * be in this run (checked on its first byte, before the rest is read), or a refused join,
 * is answered `Refused` and closed. Nothing one connection does disturbs the others. A
 * second connection with the same key replaces the first (a reconnecting client) without
 * withdrawing it.
 *
 * Against hostile peers (docs/server.md, "Hostile clients"): connections per IP address
 * are capped; at the global cap a new connection evicts the quietest non-member (never a
 * member: {@linkcode ConnectionTable}); an authenticated non-member quiet for the idle
 * timeout is closed; each connection has a token bucket of messages and one of bytes, and
 * a connection over its rate is not read until it is back within it (TCP flow control
 * holds the sender); a health check from a non-member, or with more entries than clients,
 * is answered from its head without being decoded ({@linkcode CoordinatorHost.precheck}).
 *
 * Ticks come at the right moment rather than on a poll: after every request (the host ticks
 * then, and a state it moved is pushed to every client at once), and at the run's next
 * deadline ({@linkcode CoordinatorHost.nextTickDeadline}: the current state's start plus its
 * timer), rescheduled after anything that moves the state. A slow periodic tick stays as a
 * backstop. With millisecond time, a 0.1 s witness window lasts 0.1 s, not "0 to 1.5 s" as
 * with Psyche's whole-second clock polled every 500 ms.
 *
 * Time and randomness enter here: `now` is the injected clock in seconds with millisecond
 * precision, and every tick and request gets a fresh u64 seed from the system's secure random
 * source.
 *
 * @module
 */
import {
  addressKey,
  ConnectionTable,
  DEFAULT_SERVER_MAX_FRAME_BYTES,
  encodeHandshakeMessage,
  FRAME_HEADER_BYTES,
  FrameError,
  FrameReader,
  HandshakeError,
  ProtocolError,
  serverHandshake,
  TokenBucket,
  writeFrame,
} from "../../net/mod.ts";
import { encodeCoordinatorState } from "../encoding/mod.ts";
import { StateFrames } from "./state_frames.ts";
import { CoordinatorHost, type HostEvent, type HostReply } from "./host.ts";
import type { ServerEvent } from "./log.ts";
import { Outbox, UnreadRepliesError } from "./outbox.ts";
import {
  clientFrameLimitFor,
  type ClientFrameLimits,
  clientFrameLimits,
  COORDINATOR_CONTEXT,
  decodeClientMessage,
  encodeServerMessage,
  peekClientMessage,
  type ServerMessage,
} from "./protocol.ts";
import { resumableRunConfig, saveRunConfig } from "./save_state.ts";
import { fromMillis, toHex, toMillis } from "../../common/mod.ts";

/**
 * Milliseconds between backstop ticks (Psyche's server loop ticked this often; here ticks
 * normally happen at deadlines and after requests).
 */
export const TICK_INTERVAL_MS = 500;
/** Milliseconds between unconditional state pushes (clients also get every change). */
export const PUSH_INTERVAL_MS = 5000;
/**
 * Longest a state change that does not move the run waits before it is pushed (a witness
 * report, a join, a health check): such changes are batched, while a new run state, step or
 * epoch goes out at once. Each push sends the whole state to every client, so one push per
 * report cost a round (reports x clients) state frames, and a client on a 64 kbit/s link fell
 * a minute behind the run (docs/benchmarks.md, "Many peers", has the figures).
 */
export const STATE_BATCH_MS = 100;
/** Default cap on open connections (handshaking or authenticated). */
export const DEFAULT_MAX_CONNECTIONS = 4096;
/**
 * Default cap on open connections from one IP address: room for a few machines behind
 * one NAT, too few for one host to hold a run's pending list or the connection cap.
 * Raise it for many clients on one address (a local testnet on 127.0.0.1).
 */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 16;
/** Default milliseconds an authenticated non-member may stay quiet before it is closed. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;

/** Per-connection token buckets: one of messages, one of bytes (frames with headers). */
export interface RateLimits {
  messagesPerSecond: number;
  messageBurst: number;
  bytesPerSecond: number;
  byteBurst: number;
}

/**
 * Default rates for a run with these frame limits: 20 messages a second with bursts of 100
 * (an honest client sends a few per round), and bytes enough for two of the run's largest
 * messages a second, with bursts of four (at least 64 KiB a second, 256 KiB bursts).
 */
export function defaultRateLimits(limits: ClientFrameLimits): RateLimits {
  const largest = Math.max(...Object.values(limits)) + FRAME_HEADER_BYTES;
  return {
    messagesPerSecond: 20,
    messageBurst: 100,
    bytesPerSecond: Math.max(64 * 1024, 2 * largest),
    byteBurst: Math.max(256 * 1024, 4 * largest),
  };
}

/** Options of {@linkcode startCoordinatorServer}. */
export interface CoordinatorServerOptions {
  /** The run and its pending list. */
  host: CoordinatorHost;
  /** Default `0.0.0.0`. */
  hostname?: string;
  /** Default 0 (any free port; read it from the result). */
  port?: number;
  /**
   * Milliseconds since the epoch (default `Date.now`); the machine sees seconds with the
   * fraction cut to whole milliseconds.
   */
  clock?: () => number;
  /** A u64 per tick or request (default: the system's secure random source). */
  randomSeed?: () => bigint;
  /** Default {@linkcode TICK_INTERVAL_MS}. */
  tickIntervalMs?: number;
  /** Default {@linkcode PUSH_INTERVAL_MS}. */
  pushIntervalMs?: number;
  /** Batching of state changes that do not move the run (default {@link STATE_BATCH_MS}). */
  stateBatchMs?: number;
  /**
   * Push a state as its difference from the connection's previous one when that is smaller
   * (`StateDelta`, state_delta.ts). Default true; false sends every state whole.
   */
  stateDeltas?: boolean;
  /** Largest frame a client may send (default 8 MiB, as Psyche's server). */
  maxFrameBytes?: number;
  /** Milliseconds a client has to finish the handshake (default 5000). */
  handshakeTimeoutMs?: number;
  /**
   * Most open connections (default DEFAULT_MAX_CONNECTIONS); at the cap a new connection
   * evicts the quietest non-member, or is rejected if every connection is a member's.
   */
  maxConnections?: number;
  /**
   * Most open connections from one IP address, or IPv6 /64 (default
   * DEFAULT_MAX_CONNECTIONS_PER_ADDRESS). An address may also open only a tenth of that
   * many new connections a second on average, in bursts of all of them.
   */
  maxConnectionsPerAddress?: number;
  /** New connections a second from one address (default a tenth of maxConnectionsPerAddress). */
  connectsPerSecondPerAddress?: number;
  /**
   * Milliseconds an authenticated connection that is neither pending nor a client of the
   * epoch may stay quiet before it is closed (default DEFAULT_IDLE_TIMEOUT_MS). Members are
   * never closed for being idle.
   */
  idleTimeoutMs?: number;
  /** Per-connection rates (default {@linkcode defaultRateLimits} of the run); null: none. */
  rateLimits?: RateLimits | null;
  /** Where to save the run at every successful epoch end (none when absent). */
  saveStateDir?: string;
  /**
   * The run's circuit relays (multiaddrs ending in `/p2p/<relay>`), told to every client right
   * after its handshake, so a client behind NAT needs no flag to find them.
   */
  relays?: readonly string[];
  /** Receives every event (log lines are the caller's choice). */
  onEvent?: (event: ServerEvent) => void;
}

/** A running coordinator server. */
export interface CoordinatorServer {
  /** The host it drives (read its state in tests and tools). */
  readonly host: CoordinatorHost;
  /** The port bound (the real one when 0 was asked for). */
  readonly port: number;
  /** `host:port` to give clients. */
  readonly address: string;
  /**
   * Whether an authenticated client is connected from this IP now: the run's relay lets only
   * such addresses start a handshake (net/p2p/relay.ts).
   */
  hasClientAt(ip: string): boolean;
  /** Resolves when every save started so far has finished. */
  saved(): Promise<void>;
  /** Stops ticking and accepting, closes every connection and waits for their handlers. */
  close(): Promise<void>;
  /** Same as `close`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

interface Session {
  readonly key: Uint8Array;
  readonly conn: Deno.Conn;
  readonly outbox: Outbox;
}

/** A socket and what stops its handler's waits (a throttled read) when it is closed. */
interface Link {
  readonly conn: Deno.Conn;
  readonly stop: AbortController;
}

/** Waits `ms` unless `signal` fires first; false if it did. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function secureSeed(): bigint {
  return crypto.getRandomValues(new BigUint64Array(1))[0];
}

function peerName(conn: Deno.Conn): string {
  const addr = conn.remoteAddr as Deno.NetAddr;
  return `${addr.hostname}:${addr.port}`;
}

function closeLink(link: Link): void {
  link.stop.abort();
  closeQuietly(link.conn);
}

function closeQuietly(c: { close(): void }): void {
  try {
    c.close();
  } catch {
    // already closed
  }
}

/** Starts listening and ticking at once; runs until `close`. */
export function startCoordinatorServer(options: CoordinatorServerOptions): CoordinatorServer {
  const { host } = options;
  const clock = options.clock ?? Date.now;
  const randomSeed = options.randomSeed ?? secureSeed;
  const emit = options.onEvent ?? (() => {});
  const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_SERVER_MAX_FRAME_BYTES;
  const relays = options.relays ?? [];
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? 5000;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  if (!(idleTimeoutMs > 0)) {
    throw new RangeError(`idleTimeoutMs must be > 0, found ${idleTimeoutMs}`);
  }
  const table = new ConnectionTable<Link>({
    maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    maxPerAddress: options.maxConnectionsPerAddress ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    connectsPerSecond: options.connectsPerSecondPerAddress,
  });
  const frameLimits = clientFrameLimits(host.state.config.maxClients);
  const limitFor = clientFrameLimitFor(frameLimits);
  // No frame, handshake included, may be longer than the run's largest client message.
  const readerMaxBytes = Math.min(
    maxFrameBytes,
    Math.max(1024, ...Object.values(frameLimits)),
  );
  const rateLimits = options.rateLimits === undefined
    ? defaultRateLimits(frameLimits)
    : options.rateLimits;
  const nowMs = () => Math.floor(clock());
  const now = () => fromMillis(nowMs());
  const isMember = (name: string) => host.isMemberKey(name);

  const listener = Deno.listen({
    hostname: options.hostname ?? "0.0.0.0",
    port: options.port ?? 0,
  });
  const sessions = new Map<string, Session>();
  const handlers = new Set<Promise<void>>();
  let closing = false;
  let pushedVersion = -1;
  const phaseOf = (state: typeof host.state) =>
    `${state.runState}:${state.progress.epoch}:${state.progress.step}:${state.pendingPause}`;
  /** The run state, epoch and step of the last push: a change there is pushed at once. */
  let pushedPhase = phaseOf(host.state);
  let batchTimer: ReturnType<typeof setTimeout> | undefined;
  const stateBatchMs = options.stateBatchMs ?? STATE_BATCH_MS;
  let saves: Promise<void> = Promise.resolve();

  const stateFrames = new StateFrames();
  const stateDeltas = options.stateDeltas ?? true;

  /** Sends the state to every session (if it changed, or always when `force`). */
  const push = (force: boolean) => {
    if (!force && host.version === pushedVersion) return;
    clearTimeout(batchTimer);
    batchTimer = undefined;
    pushedVersion = host.version;
    pushedPhase = phaseOf(host.state);
    if (sessions.size === 0) return;
    const state = encodeCoordinatorState(host.state);
    for (const s of sessions.values()) s.outbox.sendState(state);
  };

  const save = (event: Extract<HostEvent, { kind: "EpochEnd" }>) => {
    const dir = options.saveStateDir;
    if (dir === undefined || !event.success) return;
    const run = resumableRunConfig(host.state, host.configuredWarmupTime);
    saves = saves.then(async () => {
      try {
        const path = await saveRunConfig(dir, run);
        emit({ kind: "Saved", path, step: run.progress.step });
      } catch (e) {
        emit({ kind: "SaveFailed", path: dir, reason: (e as Error).message });
      }
    });
  };

  /** Logs and acts on what the host did, pushes a changed state, re-arms the deadline. */
  const afterHost = () => {
    for (const event of host.takeEvents()) {
      emit(event);
      if (event.kind === "EpochEnd") save(event);
    }
    pushChange();
    armDeadline();
  };

  /** Pushes a change that moves the run now, and batches the others (see STATE_BATCH_MS). */
  const pushChange = () => {
    if (host.version === pushedVersion || closing) return;
    if (stateBatchMs === 0 || phaseOf(host.state) !== pushedPhase) return push(false);
    batchTimer ??= setTimeout(() => push(false), stateBatchMs);
  };

  const tickNow = () => {
    host.tick(now(), randomSeed());
    afterHost();
  };

  // The deadline timer: armed for the host's next deadline whenever that changes.
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  let armedFor: number | null = null;
  /** The deadline the timer last fired for (a tick there that moved nothing is not retried). */
  let firedFor: number | null = null;
  const armDeadline = () => {
    if (closing) return;
    const at = host.nextTickDeadline();
    if (at === armedFor) return;
    clearTimeout(deadlineTimer);
    armedFor = null;
    if (at === null) return;
    const delay = toMillis(at) - nowMs();
    // Already due and already tried: the machine did not move (a clock that went back, or a
    // bug); leave it to the backstop tick rather than spin.
    if (delay <= 0 && at === firedFor) return;
    armedFor = at;
    deadlineTimer = setTimeout(() => {
      armedFor = null;
      firedFor = at;
      tickNow();
    }, Math.max(0, delay));
  };

  const tickTimer = setInterval(tickNow, options.tickIntervalMs ?? TICK_INTERVAL_MS);
  armDeadline();
  const pushTimer = setInterval(() => push(true), options.pushIntervalMs ?? PUSH_INTERVAL_MS);

  // Idle non-members are looked for a few times per timeout.
  const idleSweep = setInterval(() => {
    for (const entry of table.takeIdle(nowMs(), idleTimeoutMs, isMember)) {
      closeLink(entry.handle);
      emit({
        kind: "ConnectionClosed",
        peer: peerName(entry.handle.conn),
        client: entry.key,
        reason: `idle for ${idleTimeoutMs / 1000} s and not a member of the run`,
      });
    }
  }, Math.min(5000, Math.max(10, idleTimeoutMs / 4)));

  const refuseHandshake = async (conn: Deno.Conn, reason: string) => {
    try {
      await writeFrame(conn, encodeHandshakeMessage({ kind: "Rejected", reason }));
    } catch {
      // the peer may be gone already
    }
  };

  const serve = async (link: Link, entry: { key: string | null; lastActiveMs: number }) => {
    const { conn, stop } = link;
    const peer = peerName(conn);
    const frames = new FrameReader(conn, { maxFrameBytes: readerMaxBytes });
    let key: Uint8Array;
    try {
      key = await serverHandshake(conn, frames, {
        context: COORDINATOR_CONTEXT,
        signal: AbortSignal.timeout(handshakeTimeoutMs),
        authorize: (k) =>
          host.isAuthorized(k) ? null : "this key is not in the run's authorized keys",
      });
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      // serverHandshake already answered a bad signature, a refused key or a wrong message.
      if (!(e instanceof HandshakeError)) await refuseHandshake(conn, reason);
      if (!closing) emit({ kind: "ConnectionRefused", peer, client: null, reason });
      return;
    }
    const name = toHex(key);
    entry.key = name;
    entry.lastActiveMs = nowMs();
    const session: Session = {
      key,
      conn,
      outbox: new Outbox(conn, (e) => {
        closeQuietly(conn);
        // A failed write means the peer is gone (its read loop reports that); only a
        // peer that stopped reading its answers is closed for what it did.
        if (e instanceof UnreadRepliesError && !closing) {
          emit({ kind: "ConnectionClosed", peer, client: name, reason: e.message });
        }
      }, { stateFrame: (base, state) => stateFrames.frame(stateDeltas ? base : null, state) }),
    };
    const previous = sessions.get(name);
    sessions.set(name, session);
    if (previous !== undefined) closeQuietly(previous.conn);
    emit({ kind: "Connected", client: toHex(key), peer });
    if (relays.length > 0) {
      session.outbox.send(encodeServerMessage({ kind: "Relays", addresses: [...relays] }));
    }
    session.outbox.sendState(encodeCoordinatorState(host.state));

    const reply = (msg: ServerMessage) => session.outbox.send(encodeServerMessage(msg));
    const refuse = async (reason: string) => {
      session.outbox.sendLast(encodeServerMessage({ kind: "Refused", reason }));
      await session.outbox.flush();
      emit({ kind: "ConnectionRefused", peer, client: name, reason });
    };
    /** Answers a request; false when the connection must close (a refusal). */
    const answer = async (answer: HostReply, requestId: number): Promise<boolean> => {
      if (answer.kind === "Refused") {
        await refuse(answer.reason);
        afterHost();
        return false;
      }
      if (answer.kind === "Noted") {
        afterHost(); // a notice: its events, no answer
        return true;
      }
      reply(
        answer.kind === "Ack" ? { kind: "Ack", requestId } : {
          kind: "Error",
          requestId,
          code: answer.code,
          message: answer.message,
        },
      );
      afterHost();
      return true;
    };
    const buckets = rateLimits === null ? null : {
      messages: new TokenBucket(
        { ratePerSecond: rateLimits.messagesPerSecond, burst: rateLimits.messageBurst },
        nowMs(),
      ),
      bytes: new TokenBucket(
        { ratePerSecond: rateLimits.bytesPerSecond, burst: rateLimits.byteBurst },
        nowMs(),
      ),
    };
    let throttled = false;
    /** Waits while the connection is over its rates; false if it was closed meanwhile. */
    const withinRates = async (frameBytes: number): Promise<boolean> => {
      if (buckets === null) return true;
      const t = nowMs();
      const messageWait = buckets.messages.take(1, t);
      const byteWait = buckets.bytes.take(frameBytes + FRAME_HEADER_BYTES, t);
      const waitMs = Math.max(messageWait, byteWait);
      if (waitMs === 0) {
        throttled = false;
        return true;
      }
      if (!throttled) {
        // Once per episode: a flood is one line, not one per frame.
        throttled = true;
        const limit = byteWait > messageWait ? "bytes" : "messages";
        emit({ kind: "Throttled", peer, client: name, limit, waitMs });
      }
      return await pause(waitMs, stop.signal);
    };
    try {
      for (;;) {
        const frame = await frames.next({ limitFor });
        if (frame === null) break;
        entry.lastActiveMs = nowMs();
        if (!(await withinRates(frame.length))) break;
        let head;
        try {
          head = peekClientMessage(frame);
        } catch (e) {
          if (!(e instanceof ProtocolError)) throw e;
          await refuse(e.message);
          break;
        }
        // Cheap checks first: some requests are answered from their head alone.
        const early = host.precheck(key, head);
        if (early !== null) {
          if (!(await answer(early, head.requestId))) break;
          continue;
        }
        let msg;
        try {
          msg = decodeClientMessage(frame);
        } catch (e) {
          if (!(e instanceof ProtocolError)) throw e;
          await refuse(e.message);
          break;
        }
        if (!(await answer(host.handle(key, msg, now(), randomSeed()), msg.requestId))) break;
      }
    } catch (e) {
      if (e instanceof FrameError) {
        await refuse(e.message);
      } else if (!closing && !(e instanceof Deno.errors.BadResource)) {
        // Connection resets and host bugs end this connection only.
        emit({ kind: "ConnectionRefused", peer, client: name, reason: (e as Error).message });
      }
    } finally {
      session.outbox.close();
      if (sessions.get(name) === session) {
        sessions.delete(name);
        if (!closing) {
          host.disconnect(key, now(), randomSeed());
          afterHost();
        }
      }
    }
  };

  const accepting = (async () => {
    for await (const conn of listener) {
      const address = addressKey((conn.remoteAddr as Deno.NetAddr).hostname);
      const admission = table.admit(address, nowMs(), isMember);
      if (admission.kind === "Refuse") {
        refuseHandshake(conn, admission.reason).finally(() => closeQuietly(conn));
        emit({
          kind: "ConnectionRefused",
          peer: peerName(conn),
          client: null,
          reason: admission.reason,
        });
        continue;
      }
      if (admission.kind === "Evict") {
        const { handle, key } = admission.victim;
        closeLink(handle);
        emit({
          kind: "ConnectionClosed",
          peer: peerName(handle.conn),
          client: key,
          reason: "evicted: the server is at its connection cap and this was its quietest " +
            "non-member",
        });
      }
      // Frames are written whole: Nagle's algorithm would only hold a reply back until the
      // previous one is acknowledged (40 ms behind a delayed ACK).
      conn.setNoDelay(true);
      const link: Link = { conn, stop: new AbortController() };
      const entry = table.add(link, address, nowMs());
      const handler = serve(link, entry).finally(() => {
        table.remove(entry);
        handlers.delete(handler);
        closeLink(link);
      });
      handlers.add(handler);
    }
  })().catch(() => {/* the listener was closed */});

  const addr = listener.addr as Deno.NetAddr;
  const shownHost = addr.hostname === "0.0.0.0" ? "127.0.0.1" : addr.hostname;
  const address = `${shownHost.includes(":") ? `[${shownHost}]` : shownHost}:${addr.port}`;
  const { progress, runState, runId } = host.state;
  emit({
    kind: "Listening",
    address,
    runId,
    runState,
    epoch: progress.epoch,
    step: progress.step,
  });

  let closed: Promise<void> | null = null;
  const close = () => {
    closed ??= (async () => {
      closing = true;
      clearInterval(tickTimer);
      clearInterval(pushTimer);
      clearTimeout(batchTimer);
      clearTimeout(deadlineTimer);
      clearInterval(idleSweep);
      closeQuietly(listener);
      for (const entry of table.entries()) closeLink(entry.handle);
      await Promise.all([accepting, ...handlers]);
      await saves;
      emit({ kind: "Stopped" });
    })();
    return closed;
  };
  return {
    host,
    port: addr.port,
    address,
    hasClientAt: (ip) =>
      [...sessions.values()].some((s) => (s.conn.remoteAddr as Deno.NetAddr).hostname === ip),
    saved: () => saves,
    close,
    [Symbol.asyncDispose]: close,
  };
}
