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
 * @module
 */
import type { BatchId } from "../coordinator/types.ts";
import { withAbort } from "../net/abort.ts";
import { FrameReader, writeFrame } from "../net/frame.ts";
import { serverHandshake } from "../net/handshake.ts";
import { toHex } from "../net/identity.ts";
import type { DataProvider } from "./provider.ts";
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

/** Something the server did, for logs. */
export type DataServerEvent =
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
  /** Milliseconds an authenticated connection may wait between requests (default 300000). */
  idleTimeoutMs?: number;
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

/** Starts listening at once; connections are served until {@linkcode DataServer.close}. */
export function startDataServer(options: DataServerOptions): DataServer {
  const listener = Deno.listen({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
  });
  const conns = new Set<Deno.Conn>();
  const handlers = new Set<Promise<void>>();
  const emit = options.onEvent ?? (() => {});
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      const h = serveConnection(conn, options, emit).finally(() => {
        conns.delete(conn);
        handlers.delete(h);
        closeQuietly(conn);
      });
      handlers.add(h);
    }
  })().catch(() => {/* listener closed */});
  const { hostname, port } = listener.addr;
  const close = async () => {
    closeQuietly(listener);
    for (const c of conns) closeQuietly(c);
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

async function serveConnection(
  conn: Deno.Conn,
  options: DataServerOptions,
  emit: (event: DataServerEvent) => void,
): Promise<void> {
  const frames = new FrameReader(conn, { maxFrameBytes: MAX_REQUEST_FRAME_BYTES });
  let client: string | null = null;
  try {
    const key = await serverHandshake(conn, frames, {
      context: DATA_SERVER_CONTEXT,
      signal: AbortSignal.timeout(options.handshakeTimeoutMs ?? 5000),
    });
    client = toHex(key);
    emit({ kind: "Connected", client });
    for (;;) {
      const frame = await nextWithin(frames, options.idleTimeoutMs ?? 300_000);
      if (frame === null) break;
      const request = decodeDataClientMessage(frame);
      let reply: DataServerMessage;
      if (request.kind === "GetInfo") {
        reply = {
          kind: "Info",
          seqLen: options.provider.seqLen,
          numSequences: options.provider.numSequences,
        };
      } else {
        reply = await answerRequest(key, request.batch, options);
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

async function answerRequest(
  key: Uint8Array,
  batch: BatchId,
  options: DataServerOptions,
): Promise<DataServerMessage> {
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
  if (samplesFrameBytes(count, provider.seqLen) > MAX_RESPONSE_FRAME_BYTES) {
    return reject(
      "TooLarge",
      `batch of ${count} sequences exceeds the ${MAX_RESPONSE_FRAME_BYTES}-byte frame limit`,
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

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch { /* already closed */ }
}
