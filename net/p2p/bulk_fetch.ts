/**
 * The fetching side of the bulk path: connect to a provider's bulk listener, present the ticket
 * from its `BulkOffer`, and read the content straight into one buffer of the announced length,
 * hashing it as it arrives. Nothing is returned unless the length is exactly the offered one and
 * the bytes hash to the offered hash; the connection is plain TCP, so every byte is checked.
 * Reads stop at the offered length: a listener that keeps sending is hung up on unread.
 *
 * @module
 */
import { createHash } from "node:crypto";
import {
  BULK_OK_HEADER_BYTES,
  BulkWireError,
  decodeBulkResponseHeader,
  encodeBulkRequest,
} from "./bulk_wire.ts";
import { hashFromBytes } from "./content_store.ts";

/**
 * How long connecting and the listener's answer may take, by default. A listener behind a
 * firewall that drops packets would otherwise hold the whole attempt until its timeout, leaving
 * no time for the in-band fallback.
 */
export const DEFAULT_BULK_ANSWER_TIMEOUT_MS = 5_000;

/**
 * Payload bytes per millisecond of round trip a bulk fetch must move to be worth its two extra
 * round trips (connect, then request and answer), by default. It saves the encryption (its
 * cost per MB on two cores: docs/benchmarks.md, "Networked training"), so it breaks even near
 * 0.6 MB per ms of round trip; 1 MiB leaves a margin for links slower than the CPU.
 */
export const DEFAULT_BULK_BYTES_PER_RTT_MS = 1024 * 1024;

/**
 * Whether to accept a bulk offer for `size` bytes from a provider `rttMs` away (pure). Unknown
 * size or round trip: yes (the provider's own size floor still applies). `bytesPerRttMs` 0
 * always accepts.
 *
 * @example
 * ```ts
 * import { bulkWorthwhile } from "./bulk_fetch.ts";
 * console.assert(bulkWorthwhile(64 << 20, 0.3, 1 << 20)); // 64 MiB on a LAN: yes
 * console.assert(!bulkWorthwhile(4 << 20, 80, 1 << 20)); // 4 MiB across a continent: no
 * ```
 */
export function bulkWorthwhile(
  size: number | undefined,
  rttMs: number | undefined,
  bytesPerRttMs: number,
): boolean {
  return size === undefined || rttMs === undefined || size >= rttMs * bytesPerRttMs;
}

/** Received bytes hashed per `update` call while reading. */
const HASH_BATCH_BYTES = 4 * 1024 * 1024;

/** Why a bulk fetch failed. */
export type BulkFailureCode =
  | "unreachable"
  | "refused"
  | "protocol"
  | "too-large"
  | "hash-mismatch";

/** A bulk fetch failed; `code` says why. The caller falls back to the in-band stream. */
export class BulkFetchError extends Error {
  /** Why the fetch failed. */
  readonly code: BulkFailureCode;
  /** Builds the error. */
  constructor(code: BulkFailureCode, message: string, options?: ErrorOptions) {
    super(`Bulk fetch failed (${code}): ${message}`, options);
    this.name = "BulkFetchError";
    this.code = code;
  }
}

/** What to fetch, from where, and what it must be (all from the authenticated offer). */
export interface BulkFetchOptions {
  /** The provider's address: the one its libp2p connection came from. */
  hostname: string;
  /** Its bulk listener's port, from the offer. */
  port: number;
  /** The ticket from the offer. */
  ticket: Uint8Array;
  /** The content's sha256 (32 bytes), from the offer and the request. */
  hash: Uint8Array;
  /** The content's exact length, from the offer (already checked against the caller's limits). */
  length: number;
  /** Aborts the fetch, closing the connection. */
  signal?: AbortSignal;
  /** Longest wait for the connection and the listener's answer (ms). */
  answerTimeoutMs?: number;
  /** Told the size of every read of content bytes (reads never go past `length`). */
  received?: (bytes: number) => void;
}

/**
 * Fetches and verifies the offered content over the provider's bulk listener. Throws
 * `BulkFetchError` for anything short of exactly the offered bytes, or the signal's reason.
 */
export async function bulkFetch(options: BulkFetchOptions): Promise<Uint8Array> {
  const { hostname, port, ticket, hash, length, signal } = options;
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`bulk length must be a non-negative safe integer, found ${length}`);
  }
  const answerTimeoutMs = options.answerTimeoutMs ?? DEFAULT_BULK_ANSWER_TIMEOUT_MS;
  const request = encodeBulkRequest({ ticket, hash });
  signal?.throwIfAborted();
  const answerTimer = AbortSignal.timeout(answerTimeoutMs);
  const early = signal === undefined ? answerTimer : AbortSignal.any([signal, answerTimer]);
  const late = () =>
    new BulkFetchError(
      "unreachable",
      `no answer from ${hostname}:${port} within ${answerTimeoutMs} ms`,
    );
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname, port, transport: "tcp", signal: early });
  } catch (error) {
    signal?.throwIfAborted();
    if (answerTimer.aborted) throw late();
    throw new BulkFetchError("unreachable", `cannot connect to ${hostname}:${port}: ${error}`, {
      cause: error,
    });
  }
  const onAbort = () => closeQuietly(conn);
  early.addEventListener("abort", onAbort, { once: true });
  let answered = false;
  try {
    conn.setNoDelay(true);
    for (let sent = 0; sent < request.length;) sent += await conn.write(request.subarray(sent));
    const header = new Uint8Array(BULK_OK_HEADER_BYTES);
    let got = 0;
    let decoded;
    while (true) {
      const n = await conn.read(header.subarray(got, got === 0 ? 1 : BULK_OK_HEADER_BYTES));
      if (n === null) throw new BulkFetchError("protocol", `response ended after ${got} bytes`);
      got += n;
      try {
        decoded = decodeBulkResponseHeader(header.subarray(0, got));
      } catch (error) {
        if (!(error instanceof BulkWireError)) throw error;
        throw new BulkFetchError("protocol", error.message, { cause: error });
      }
      if (decoded !== undefined) break;
    }
    // Answered in time: from here only the caller's signal limits the transfer.
    answered = true;
    early.removeEventListener("abort", onAbort);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (decoded.header.status !== "Ok") {
      throw new BulkFetchError("refused", `the listener answered ${decoded.header.status}`);
    }
    if (decoded.header.length !== length) {
      throw new BulkFetchError(
        decoded.header.length > length ? "too-large" : "protocol",
        `the listener declares ${decoded.header.length} bytes, the offer said ${length}`,
      );
    }
    const out = new Uint8Array(length);
    const hasher = createHash("sha256");
    let filled = 0;
    let hashed = 0;
    while (filled < length) {
      const n = await conn.read(out.subarray(filled));
      if (n === null) {
        throw new BulkFetchError("protocol", `response ended after ${filled} of ${length} bytes`);
      }
      options.received?.(n);
      filled += n;
      if (filled - hashed >= HASH_BATCH_BYTES) {
        hasher.update(out.subarray(hashed, filled));
        hashed = filled;
      }
    }
    hasher.update(out.subarray(hashed, filled));
    // Anything the listener sends past `length` is never read: closing drops it.
    const received = hasher.digest("hex");
    if (received !== hashFromBytes(hash)) {
      throw new BulkFetchError(
        "hash-mismatch",
        `received bytes hash to ${received}, expected ${hashFromBytes(hash)}`,
      );
    }
    return out;
  } catch (error) {
    signal?.throwIfAborted();
    if (!answered && answerTimer.aborted) throw late();
    if (error instanceof BulkFetchError) throw error;
    throw new BulkFetchError("unreachable", `connection to ${hostname}:${port} failed: ${error}`, {
      cause: error,
    });
  } finally {
    early.removeEventListener("abort", onAbort);
    signal?.removeEventListener("abort", onAbort);
    closeQuietly(conn);
  }
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}
