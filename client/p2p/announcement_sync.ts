/**
 * Pulling a step's announcements from one peer, over libp2p streams (`sync_wire.ts`).
 *
 * Gossip is push-only and delivers each announcement once, so a copy lost on the way (a peer
 * not yet in the mesh, a dropped connection) comes back only through a resend, which arrives
 * seconds later, often after the round it was about has closed. A pull asks a peer that is
 * known to hold it (its trainer, or a peer whose Finished says it heard more) at once.
 *
 * The provider answers from what it holds; the requester caps the count and every length
 * before reading the bytes, and checks each envelope's signature as gossip would.
 *
 * @module
 */
import type { Stream } from "@libp2p/interface";
import { peerIdOf } from "../../net/p2p/mod.ts";
import type { P2PNode } from "../../net/p2p/mod.ts";
import { StreamReader } from "../../net/p2p/mod.ts";
import {
  decodeSyncRequest,
  decodeSyncResponse,
  encodeSyncRequest,
  encodeSyncResponse,
  maxSyncResponseBytes,
  SYNC_HEADER_BYTES,
  SYNC_PROTOCOL,
  SYNC_REQUEST_BYTES,
  syncResponseCount,
  SyncWireError,
} from "./sync_wire.ts";
import { sendChunked } from "../../net/p2p/mod.ts";
import type { PublicKeyBytes } from "../../common/mod.ts";

/** Milliseconds a provider waits for a whole request. */
const REQUEST_TIMEOUT_MS = 5_000;
/** Default milliseconds a pull may take, dial included. */
export const DEFAULT_PULL_TIMEOUT_MS = 5_000;
/** Bytes per send while answering (the response is small; this only bounds one write). */
const CHUNK_BYTES = 64 * 1024;

/**
 * Answers pulls on `node` from `lookup(step)` (the envelopes held for that step, at most
 * `maxEnvelopes` of them are sent). Stops when the node stops or with `unserve`.
 */
export async function serveAnnouncements(
  node: P2PNode,
  lookup: (step: number) => readonly Uint8Array[],
  options: { maxEnvelopes: number; maxInboundStreams?: number },
): Promise<void> {
  await node.libp2p.handle(
    SYNC_PROTOCOL,
    (stream: Stream) => answer(stream, lookup, options.maxEnvelopes),
    { maxInboundStreams: options.maxInboundStreams ?? 32, maxOutboundStreams: 32 },
  );
}

/** Stops answering pulls (the node keeps running). */
export async function unserveAnnouncements(node: P2PNode): Promise<void> {
  if (node.libp2p.status === "started") await node.libp2p.unhandle(SYNC_PROTOCOL);
}

async function answer(
  stream: Stream,
  lookup: (step: number) => readonly Uint8Array[],
  maxEnvelopes: number,
): Promise<void> {
  const reader = new StreamReader(stream);
  const timer = setTimeout(
    () => stream.abort(new Error(`no complete request within ${REQUEST_TIMEOUT_MS} ms`)),
    REQUEST_TIMEOUT_MS,
  );
  try {
    const request = await readAll(reader, () => SYNC_REQUEST_BYTES, "request");
    clearTimeout(timer);
    const step = decodeSyncRequest(request);
    await sendChunked(
      stream,
      [encodeSyncResponse(lookup(step).slice(0, maxEnvelopes))],
      CHUNK_BYTES,
    );
    await stream.close();
  } catch (error) {
    // A malformed request or a failed stream: nothing to answer, just release it.
    stream.abort(error instanceof Error ? error : new Error(String(error)));
  } finally {
    clearTimeout(timer);
    reader.release();
  }
}

/** Options of {@link pullAnnouncements}. */
export interface PullOptions {
  /** Most envelopes accepted in the answer; a header declaring more is refused unread. */
  readonly maxEnvelopes: number;
  readonly signal?: AbortSignal;
  /** Default {@link DEFAULT_PULL_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
}

/**
 * Asks `peer` (a public key) for what it holds of `step` and returns the raw envelopes, not yet
 * checked. Throws when the peer cannot be reached, times out or answers out of format.
 */
export async function pullAnnouncements(
  node: P2PNode,
  peer: PublicKeyBytes,
  step: number,
  options: PullOptions,
): Promise<Uint8Array[]> {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_PULL_TIMEOUT_MS);
  const signal = options.signal === undefined
    ? timeout
    : AbortSignal.any([options.signal, timeout]);
  const connection = await node.libp2p.dial(peerIdOf(peer), { signal });
  const stream = await connection.newStream(SYNC_PROTOCOL, { signal, negotiateFully: false });
  const reader = new StreamReader(stream);
  const onAbort = () => stream.abort(new Error(`announcement pull aborted: ${signal.reason}`));
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    stream.send(encodeSyncRequest(step));
    await stream.close({ signal });
    const bytes = await readAll(
      reader,
      (head) =>
        head.length < SYNC_HEADER_BYTES
          ? maxSyncResponseBytes(0) // the header's own length, until it is here
          : maxSyncResponseBytes(syncResponseCount(head, options.maxEnvelopes)),
      "response",
    );
    return decodeSyncResponse(bytes, options.maxEnvelopes);
  } catch (error) {
    stream.abort(error instanceof Error ? error : new Error(String(error)));
    throw error;
  } finally {
    signal.removeEventListener("abort", onAbort);
    reader.release();
  }
}

/**
 * Reads the stream to its end, refusing to hold more than `limit(head)` bytes, where `head` is
 * what arrived of the first `SYNC_HEADER_BYTES` (a response's limit follows from its header).
 */
async function readAll(
  reader: StreamReader,
  limit: (head: Uint8Array) => number,
  what: string,
): Promise<Uint8Array> {
  let buffer = new Uint8Array(0);
  while (true) {
    const chunk = await reader.next();
    if (chunk === undefined) return buffer;
    const next = new Uint8Array(buffer.length + chunk.length);
    next.set(buffer);
    next.set(chunk, buffer.length);
    buffer = next;
    const cap = limit(buffer.subarray(0, SYNC_HEADER_BYTES));
    if (buffer.length > cap) {
      throw new SyncWireError(what, `more than ${cap} bytes`, cap);
    }
  }
}
