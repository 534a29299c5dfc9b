/**
 * The coordinator's TCP server: the I/O shell around {@linkcode CoordinatorHost}.
 *
 * ```mermaid
 * flowchart LR
 *   conn[client connection] -->|frames| hs[ed25519 handshake]
 *   hs -->|decodeClientMessage| host[CoordinatorHost]
 *   deadline[timer at the next deadline] --> host
 *   backstop[500 ms backstop tick] --> host
 *   host -->|State / Ack / Error| outbox[Outbox per client]
 *   host -->|events| log[log lines] & save[state.toml at epoch end]
 *   host -->|authorizeData| data[in-process data server]
 * ```
 *
 * Per connection: the handshake binds it to an ed25519 key (a bad signature, a garbage
 * or oversized frame, or a message before the handshake is answered `Rejected` and
 * closed); then every frame is one {@linkcode ClientMessage}, answered `Ack` or `Error`
 * (rejected by the coordinator's rules; the connection stays open). A frame that does not
 * decode, or a refused join, is answered `Refused` and closed. Nothing one connection does
 * disturbs the others. A second connection with the same key replaces the first (a
 * reconnecting client) without withdrawing it.
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
  DEFAULT_SERVER_MAX_FRAME_BYTES,
  encodeHandshakeMessage,
  FrameError,
  FrameReader,
  HandshakeError,
  ProtocolError,
  serverHandshake,
  toHex,
  writeFrame,
} from "../../net/mod.ts";
import { encodeCoordinatorState } from "../encoding.ts";
import { keyString } from "../machine_core.ts";
import { fromMillis, toMillis } from "../time.ts";
import { CoordinatorHost, type HostEvent } from "./host.ts";
import type { ServerEvent } from "./log.ts";
import { Outbox } from "./outbox.ts";
import {
  COORDINATOR_CONTEXT,
  decodeClientMessage,
  encodeServerMessage,
  type ServerMessage,
} from "./protocol.ts";
import { resumableRunConfig, saveRunConfig } from "./save_state.ts";

/**
 * Milliseconds between backstop ticks (Psyche's server loop ticked this often; here ticks
 * normally happen at deadlines and after requests).
 */
export const TICK_INTERVAL_MS = 500;
/** Milliseconds between unconditional state pushes (clients also get every change). */
export const PUSH_INTERVAL_MS = 5000;
/** Default cap on open connections (handshaking or authenticated). */
export const DEFAULT_MAX_CONNECTIONS = 4096;

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
  /** Largest frame a client may send (default 8 MiB, as Psyche's server). */
  maxFrameBytes?: number;
  /** Milliseconds a client has to finish the handshake (default 5000). */
  handshakeTimeoutMs?: number;
  /** More connections than this are rejected at once (default DEFAULT_MAX_CONNECTIONS). */
  maxConnections?: number;
  /** Where to save the run at every successful epoch end (none when absent). */
  saveStateDir?: string;
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

function secureSeed(): bigint {
  return crypto.getRandomValues(new BigUint64Array(1))[0];
}

function peerName(conn: Deno.Conn): string {
  const addr = conn.remoteAddr as Deno.NetAddr;
  return `${addr.hostname}:${addr.port}`;
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
  const handshakeTimeoutMs = options.handshakeTimeoutMs ?? 5000;
  const maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const nowMs = () => Math.floor(clock());
  const now = () => fromMillis(nowMs());

  const listener = Deno.listen({
    hostname: options.hostname ?? "0.0.0.0",
    port: options.port ?? 0,
  });
  const sessions = new Map<string, Session>();
  const conns = new Set<Deno.Conn>();
  const handlers = new Set<Promise<void>>();
  let closing = false;
  let pushedVersion = -1;
  let saves: Promise<void> = Promise.resolve();

  const stateFrame = () =>
    encodeServerMessage({ kind: "State", bytes: encodeCoordinatorState(host.state) });

  /** Sends the state to every session (if it changed, or always when `force`). */
  const push = (force: boolean) => {
    if (!force && host.version === pushedVersion) return;
    pushedVersion = host.version;
    if (sessions.size === 0) return;
    const frame = stateFrame();
    for (const s of sessions.values()) s.outbox.sendState(frame);
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
    push(false);
    armDeadline();
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

  const refuseHandshake = async (conn: Deno.Conn, reason: string) => {
    try {
      await writeFrame(conn, encodeHandshakeMessage({ kind: "Rejected", reason }));
    } catch {
      // the peer may be gone already
    }
  };

  const serve = async (conn: Deno.Conn) => {
    const peer = peerName(conn);
    const frames = new FrameReader(conn, { maxFrameBytes });
    let key: Uint8Array;
    try {
      key = await serverHandshake(conn, frames, {
        context: COORDINATOR_CONTEXT,
        signal: AbortSignal.timeout(handshakeTimeoutMs),
      });
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      // serverHandshake already answered a bad signature or a wrong message kind.
      if (!(e instanceof HandshakeError)) await refuseHandshake(conn, reason);
      if (!closing) emit({ kind: "ConnectionRefused", peer, client: null, reason });
      return;
    }
    const name = keyString(key);
    const session: Session = {
      key,
      conn,
      outbox: new Outbox(conn, () => closeQuietly(conn)),
    };
    const previous = sessions.get(name);
    sessions.set(name, session);
    if (previous !== undefined) closeQuietly(previous.conn);
    emit({ kind: "Connected", client: toHex(key), peer });
    session.outbox.sendState(stateFrame());

    const reply = (msg: ServerMessage) => session.outbox.send(encodeServerMessage(msg));
    const refuse = async (reason: string) => {
      reply({ kind: "Refused", reason });
      await session.outbox.flush();
      emit({ kind: "ConnectionRefused", peer, client: name, reason });
    };
    try {
      for (;;) {
        const frame = await frames.next();
        if (frame === null) break;
        let msg;
        try {
          msg = decodeClientMessage(frame);
        } catch (e) {
          if (!(e instanceof ProtocolError)) throw e;
          await refuse(e.message);
          break;
        }
        const answer = host.handle(key, msg, now(), randomSeed());
        if (answer.kind === "Refused") {
          await refuse(answer.reason);
          afterHost();
          break;
        }
        reply(
          answer.kind === "Ack" ? { kind: "Ack", requestId: msg.requestId } : {
            kind: "Error",
            requestId: msg.requestId,
            code: answer.code,
            message: answer.message,
          },
        );
        afterHost();
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
      if (conns.size >= maxConnections) {
        const reason = `the server already has ${maxConnections} connections`;
        refuseHandshake(conn, reason).finally(() => closeQuietly(conn));
        emit({ kind: "ConnectionRefused", peer: peerName(conn), client: null, reason });
        continue;
      }
      conns.add(conn);
      const handler = serve(conn).finally(() => {
        conns.delete(conn);
        handlers.delete(handler);
        closeQuietly(conn);
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
      clearTimeout(deadlineTimer);
      closeQuietly(listener);
      for (const c of conns) closeQuietly(c);
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
    saved: () => saves,
    close,
    [Symbol.asyncDispose]: close,
  };
}
