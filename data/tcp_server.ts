/**
 * The TCP data server: serves a {@linkcode DataProvider}'s sequences to clients that
 * prove their ed25519 identity (net/ handshake) and that the `authorize` callback
 * admits for the batch they ask for. Run standalone by `deno task data-server`, or
 * in-process by the coordinator, which supplies `authorize` from its epoch state.
 *
 * Per connection: handshake (with a timeout), then request/response frames in order.
 * A malformed frame closes the connection; a refused request is answered `Rejected`
 * and the connection stays open.
 *
 * Limits, each refused in words. Connections at once per IP address, and new ones per second
 * from it (net/connection_table.ts; over either, a handshake `Rejected` naming it, then closed).
 * Connections at once in all: at that cap a newcomer takes the place of the quietest connection
 * that is not a member's (`isMember`: still handshaking, or a key the run does not know), so idle
 * connections, handshaking or not, cannot lock a real client out; only when every connection is a
 * member's is the newcomer refused. An authenticated connection idle for `idleTimeoutMs` (30 s)
 * gets `Closing` and is closed;
 * with `maxBatchSequences`, a request spanning more sequences is refused `TooLarge`; with
 * `rateLimit`, a client past its sequences per second (shared by its connections) is
 * refused `RateLimited`. The coordinator's `authorize` admits only a client's own batch;
 * the standalone server, which cannot know the assignments, relies on the last two.
 *
 * @module
 */
import type { DataProvider } from "./provider.ts";
import { type RateLimit, SequenceRateLimiter } from "./rate_limit.ts";
import {
  DATA_SERVER_CONTEXT,
  type DataServerMessage,
  decodeDataClientMessage,
  encodeDataServerMessage,
  MAX_REQUEST_FRAME_BYTES,
  MAX_RESPONSE_FRAME_BYTES,
  type RejectReason,
  samplesFrameBytes,
} from "./tcp_messages.ts";
import { type BatchId, toHex } from "../common/mod.ts";
import {
  addressKey,
  type ConnectionEntry,
  ConnectionTable,
  encodeHandshakeMessage,
  FrameReader,
  serverHandshake,
  withAbort,
  writeFrame,
} from "../net/mod.ts";

/** The coordinator's verdict on one request. */
export type AuthorizeResult = "Allowed" | "NotInThisRound" | "WrongDataIdForStep";

/**
 * Decides whether `client` (its 32-byte ed25519 public key) may have `batch` now:
 * typically "is a client of the current epoch, and this batch is its assignment".
 */
export type AuthorizeFn = (
  client: Uint8Array,
  batch: BatchId,
) => AuthorizeResult | Promise<AuthorizeResult>;

/** Connections served at once, by default (handshaking ones included). */
export const DEFAULT_DATA_MAX_CONNECTIONS = 256;
/** Connections served at once to one IP address, by default. */
export const DEFAULT_DATA_MAX_CONNECTIONS_PER_ADDRESS = 32;
/** How long an authenticated connection may go without a request, by default. */
export const DEFAULT_DATA_IDLE_TIMEOUT_MS = 30_000;

/** Something the server did, for logs. */
export type DataServerEvent =
  | { kind: "RefusedConnection"; address: string; reason: string }
  /** At the cap, the quietest non-member connection was closed to let a newcomer in. */
  | { kind: "EvictedConnection"; address: string; client: string | null }
  | { kind: "Connected"; client: string }
  | { kind: "Served"; client: string; batch: BatchId }
  | { kind: "Rejected"; client: string; batch: BatchId; reason: RejectReason }
  | { kind: "Disconnected"; client: string | null; error?: Error };

/** Options of {@linkcode startDataServer}. */
export interface DataServerOptions {
  /** The dataset served (the server does not close it). */
  provider: DataProvider;
  /** Consulted for every request. */
  authorize: AuthorizeFn;
  /** Default `127.0.0.1`. */
  hostname?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** Milliseconds a client has to finish the handshake (default 5000). */
  handshakeTimeoutMs?: number;
  /** Milliseconds an authenticated connection may wait between requests (default 30000). */
  idleTimeoutMs?: number;
  /** Connections at once, handshaking ones included (default 256). */
  maxConnections?: number;
  /** Connections at once from one IP address (default 32). */
  maxConnectionsPerAddress?: number;
  /** New connections per second from one IP address, on average (default: its cap, a second). */
  connectsPerSecond?: number;
  /**
   * Whether a key (hex) belongs to the run: its connections are never closed to let a newcomer
   * in. The coordinator passes its pending and epoch clients; default: nobody.
   */
  isMember?: (key: string) => boolean;
  /**
   * Most sequences one request may span; more is refused `TooLarge`. Default: only the
   * frame limit (an `authorize` that admits only assigned batches bounds it already).
   */
  maxBatchSequences?: number;
  /**
   * Sequences per second each client (by key, across its connections) may fetch; more is
   * refused `RateLimited`. The burst must cover `maxBatchSequences`. Default: no limit.
   */
  rateLimit?: RateLimit;
  /** Milliseconds now, for the rate limit (tests drive it). Default `Date.now`. */
  now?: () => number;
  /** Called for every connection, request and disconnection. */
  onEvent?: (event: DataServerEvent) => void;
}

/** A running data server. */
export interface DataServer {
  /** The address bound. */
  readonly hostname: string;
  /** The port bound (the real one when 0 was asked for). */
  readonly port: number;
  /** `host:port`, the form `DataLocation.Server` takes. */
  readonly address: string;
  /** Stops accepting, closes every connection and waits for their handlers. */
  close(): Promise<void>;
  /** Same as {@linkcode DataServer.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The options with defaults filled in and checked, and the server's shared state. */
interface ServerContext {
  readonly options: DataServerOptions;
  readonly idleTimeoutMs: number;
  readonly rate: SequenceRateLimiter | null;
  readonly now: () => number;
  readonly emit: (event: DataServerEvent) => void;
}

/**
 * Starts listening at once; connections are served until {@linkcode DataServer.close}.
 * Throws `RangeError` naming a bad limit (not a positive integer, or a rate-limit burst
 * smaller than `maxBatchSequences`).
 */
export function startDataServer(options: DataServerOptions): DataServer {
  const maxConnections = positive(
    "maxConnections",
    options.maxConnections ?? DEFAULT_DATA_MAX_CONNECTIONS,
  );
  const maxPerAddress = positive(
    "maxConnectionsPerAddress",
    options.maxConnectionsPerAddress ?? DEFAULT_DATA_MAX_CONNECTIONS_PER_ADDRESS,
  );
  const idleTimeoutMs = positive(
    "idleTimeoutMs",
    options.idleTimeoutMs ?? DEFAULT_DATA_IDLE_TIMEOUT_MS,
  );
  if (options.maxBatchSequences !== undefined) {
    positive("maxBatchSequences", options.maxBatchSequences);
  }
  const rate = options.rateLimit === undefined ? null : new SequenceRateLimiter(options.rateLimit);
  if (rate !== null && rate.limit.burstSequences < (options.maxBatchSequences ?? 1)) {
    throw new RangeError(
      `rateLimit.burstSequences (${rate.limit.burstSequences}) must be at least ` +
        `maxBatchSequences (${options.maxBatchSequences}), or no batch could ever be served`,
    );
  }
  const context: ServerContext = {
    options,
    idleTimeoutMs,
    rate,
    now: options.now ?? Date.now,
    emit: options.onEvent ?? (() => {}),
  };
  const listener = Deno.listen({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
  });
  const table = new ConnectionTable<Deno.Conn>({
    maxConnections,
    maxPerAddress,
    connectsPerSecond: options.connectsPerSecond ?? maxPerAddress,
  });
  const isMember = options.isMember ?? (() => false);
  const handlers = new Set<Promise<void>>();
  const accepting = (async () => {
    for await (const conn of listener) {
      const address = addressKey((conn.remoteAddr as Deno.NetAddr).hostname);
      const nowMs = context.now();
      const admission = table.admit(address, nowMs, isMember);
      if (admission.kind === "Refuse") {
        context.emit({ kind: "RefusedConnection", address, reason: admission.reason });
        // Refused connections are not counted, but close() still waits for them.
        const h = refuseConnection(conn, admission.reason).finally(() => handlers.delete(h));
        handlers.add(h);
        continue;
      }
      if (admission.kind === "Evict") {
        const { victim } = admission;
        context.emit({ kind: "EvictedConnection", address: victim.address, client: victim.key });
        closeQuietly(victim.handle); // its handler ends on the closed socket
      }
      const entry = table.add(conn, address, nowMs);
      const h: Promise<void> = serveConnection(conn, context, entry).finally(() => {
        table.remove(entry);
        handlers.delete(h);
        closeQuietly(conn);
      });
      handlers.add(h);
    }
  })().catch(() => {/* listener closed */});
  const { hostname, port } = listener.addr;
  const close = async () => {
    closeQuietly(listener);
    for (const e of table.entries()) closeQuietly(e.handle);
    await Promise.all([accepting, ...handlers]);
  };
  return {
    hostname,
    port,
    address: `${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Tells a connection over a limit why (as a handshake refusal), then closes it. */
async function refuseConnection(conn: Deno.Conn, reason: string): Promise<void> {
  try {
    const refusal = encodeHandshakeMessage({ kind: "Rejected", reason });
    await withAbort(writeFrame(conn, refusal), AbortSignal.timeout(1000));
  } catch {
    // A peer that does not read gets no explanation.
  } finally {
    closeQuietly(conn);
  }
}

async function serveConnection(
  conn: Deno.Conn,
  context: ServerContext,
  entry: ConnectionEntry<Deno.Conn>,
): Promise<void> {
  const { options, emit } = context;
  const frames = new FrameReader(conn, { maxFrameBytes: MAX_REQUEST_FRAME_BYTES });
  let client: string | null = null;
  try {
    const key = await serverHandshake(conn, frames, {
      context: DATA_SERVER_CONTEXT,
      signal: AbortSignal.timeout(options.handshakeTimeoutMs ?? 5000),
    });
    client = toHex(key);
    entry.key = client;
    entry.lastActiveMs = context.now();
    emit({ kind: "Connected", client });
    for (;;) {
      let frame: Uint8Array | null;
      try {
        frame = await nextWithin(frames, context.idleTimeoutMs);
      } catch (e) {
        if (e instanceof DOMException && e.name === "TimeoutError") {
          await sayClosing(conn, e.message);
        }
        throw e;
      }
      if (frame === null) break;
      entry.lastActiveMs = context.now();
      const request = decodeDataClientMessage(frame);
      let reply: DataServerMessage;
      if (request.kind === "GetInfo") {
        reply = {
          kind: "Info",
          seqLen: options.provider.seqLen,
          numSequences: options.provider.numSequences,
        };
      } else {
        reply = await answerRequest(key, request.batch, context);
        if (reply.kind === "Samples") emit({ kind: "Served", client, batch: request.batch });
        if (reply.kind === "Rejected") {
          emit({ kind: "Rejected", client, batch: request.batch, reason: reply.reason });
        }
      }
      await writeFrame(conn, encodeDataServerMessage(reply));
    }
    emit({ kind: "Disconnected", client });
  } catch (e) {
    emit({ kind: "Disconnected", client, error: e as Error });
  }
}

/** Sends `Closing` before the server hangs up (best effort: the client may be gone). */
async function sayClosing(conn: Deno.Conn, reason: string): Promise<void> {
  try {
    const closing = encodeDataServerMessage({ kind: "Closing", reason });
    await withAbort(writeFrame(conn, closing), AbortSignal.timeout(1000));
  } catch {
    // Nothing more to do: the connection closes either way.
  }
}

async function answerRequest(
  key: Uint8Array,
  batch: BatchId,
  context: ServerContext,
): Promise<DataServerMessage> {
  const { options } = context;
  const { provider } = options;
  const reject = (reason: RejectReason, detail: string): DataServerMessage => ({
    kind: "Rejected",
    batch,
    reason,
    detail,
  });
  let verdict: AuthorizeResult;
  try {
    verdict = await options.authorize(key, batch);
  } catch (e) {
    return { kind: "Failed", batch, message: `authorization failed: ${(e as Error).message}` };
  }
  if (verdict !== "Allowed") return reject(verdict, `batch ${batch.start}..${batch.end}`);
  if (batch.end >= provider.numSequences) {
    return reject(
      "OutOfRange",
      `batch ${batch.start}..${batch.end}: the dataset has ${provider.numSequences} sequences`,
    );
  }
  const count = batch.end - batch.start + 1;
  const most = options.maxBatchSequences;
  if (most !== undefined && count > most) {
    return reject(
      "TooLarge",
      `batch ${batch.start}..${batch.end} spans ${count} sequences, this server serves at most ` +
        `${most} per request (the run's largest batch)`,
    );
  }
  if (samplesFrameBytes(count, provider.seqLen) > MAX_RESPONSE_FRAME_BYTES) {
    return reject(
      "TooLarge",
      `batch of ${count} sequences exceeds the ${MAX_RESPONSE_FRAME_BYTES}-byte frame limit`,
    );
  }
  const paced = context.rate?.take(toHex(key), count, context.now());
  if (paced !== undefined && !paced.ok) {
    const { sequencesPerSecond } = context.rate!.limit;
    return reject(
      "RateLimited",
      `batch ${batch.start}..${batch.end} needs ${count} sequences, ${paced.available} are ` +
        `available at ${sequencesPerSecond} sequences/s per client; retry in ` +
        `${paced.retryInMs} ms`,
    );
  }
  try {
    const samples = await provider.getSamples(batch);
    return { kind: "Samples", batch, seqLen: samples.seqLen, tokens: samples.tokens };
  } catch (e) {
    return { kind: "Failed", batch, message: (e as Error).message.slice(0, 2000) };
  }
}

/** The next frame, or a `TimeoutError` if none arrives within `ms` (the timer is cleared). */
async function nextWithin(frames: FrameReader, ms: number): Promise<Uint8Array | null> {
  const idle = new AbortController();
  const timer = setTimeout(
    () => idle.abort(new DOMException(`no request for ${ms} ms`, "TimeoutError")),
    ms,
  );
  try {
    return await withAbort(frames.next(), idle.signal);
  } finally {
    clearTimeout(timer);
  }
}

function positive(what: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${what} must be a positive integer, found ${value}`);
  }
  return value;
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch { /* already closed */ }
}
