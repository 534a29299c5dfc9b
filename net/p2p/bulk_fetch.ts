/**
 * The fetching side of the bulk path: connect to a provider's bulk listener, present the ticket
 * from its `BulkOffer`, and read the content straight into the fetch's `PartialContent`, which
 * hashes it as it arrives. When the fetch already holds a prefix (from an earlier attempt, over
 * bulk or in-band), the request asks for the rest from there and the listener must answer
 * `OkFrom` that very offset. Nothing is returned unless the length is exactly the offered one and
 * the whole content hashes to the offered hash; the connection is plain TCP, so every byte is
 * checked. Reads stop at the offered length: a listener that keeps sending is hung up on unread.
 * Bytes read before a failure (a stall, a reset) stay in the `PartialContent` for the next
 * attempt to go on from.
 *
 * @module
 */
import {
  BULK_OK_FROM_HEADER_BYTES,
  type BulkResponseHeader,
  bulkResponseHeaderBytes,
  BulkWireError,
  decodeBulkResponseHeader,
  encodeBulkRequest,
} from "./bulk_wire.ts";
import type { PartialContent } from "./partial_content.ts";

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
  /**
   * For a hash mismatch: the content was assembled from two or more sources (this connection
   * and earlier attempts), so nobody can be told apart as the liar; it was discarded with
   * resuming off (`PartialContent.verify`).
   */
  readonly mixed: boolean;
  /** Builds the error. */
  constructor(
    code: BulkFailureCode,
    message: string,
    options?: ErrorOptions & { mixed?: boolean },
  ) {
    super(`Bulk fetch failed (${code}): ${message}`, options);
    this.name = "BulkFetchError";
    this.code = code;
    this.mixed = options?.mixed ?? false;
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
  /**
   * Where the bytes go. The request asks for the content from `into.offset` (the bytes it holds
   * already; 0 for all of it), and each read is committed as it lands, so the bytes received
   * before a failure stay there. The caller has checked the offer against what `into` holds
   * (`PartialContent.check`).
   */
  into: PartialContent;
  /**
   * Whom `into` names as these bytes' source: a name for this bulk connection, not the
   * provider's own (the bytes crossed plain TCP; see `partial_content.ts`, "Blame").
   */
  source: string;
  /** Aborts the fetch, closing the connection. */
  signal?: AbortSignal;
  /** Longest wait for the connection and the listener's answer (ms). */
  answerTimeoutMs?: number;
  /** Told the size of every read of content bytes (reads never go past `length`). */
  received?: (bytes: number) => void;
}

/**
 * Fetches the offered content (or its rest, after the bytes `into` holds) over the provider's
 * bulk listener, and returns the whole content once it hashes to the offered hash. Throws
 * `BulkFetchError` for anything short of exactly the offered bytes, or the signal's reason; on a
 * hash mismatch, `into` has discarded everything (`mixed` says how).
 */
export async function bulkFetch(options: BulkFetchOptions): Promise<Uint8Array> {
  const { hostname, port, ticket, hash, length, into, source, signal } = options;
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`bulk length must be a non-negative safe integer, found ${length}`);
  }
  const offset = into.offset;
  const answerTimeoutMs = options.answerTimeoutMs ?? DEFAULT_BULK_ANSWER_TIMEOUT_MS;
  const request = encodeBulkRequest({ ticket, hash, offset });
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
    const header = await readHeader(conn);
    // Answered in time: from here only the caller's signal limits the transfer.
    answered = true;
    early.removeEventListener("abort", onAbort);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (header.status !== "Ok" && header.status !== "OkFrom") {
      throw new BulkFetchError("refused", `the listener answered ${header.status}`);
    }
    const from = header.status === "OkFrom" ? header.offset : 0;
    if (from !== offset) {
      throw new BulkFetchError(
        "protocol",
        `the listener serves from byte ${from}, we asked from ${offset}`,
      );
    }
    if (header.length !== length) {
      throw new BulkFetchError(
        header.length > length ? "too-large" : "protocol",
        `the listener declares ${header.length} bytes, the offer said ${length}`,
      );
    }
    try {
      into.begin(source, { hash, length, offset });
    } catch (error) {
      throw new BulkFetchError("protocol", (error as Error).message, { cause: error });
    }
    while (!into.complete) {
      const n = await conn.read(into.unfilled());
      if (n === null) {
        const { held } = into.progress();
        throw new BulkFetchError("protocol", `response ended after ${held} of ${length} bytes`);
      }
      options.received?.(n);
      into.commit(source, n);
    }
    // Anything the listener sends past `length` is never read: closing drops it.
    const verified = into.verify();
    if (!verified.ok) {
      const mixed = verified.sources >= 2;
      throw new BulkFetchError(
        "hash-mismatch",
        `received bytes hash to ${verified.hash}, expected ${verified.declared}` +
          (mixed ? ` (from ${verified.sources} sources: nobody to blame)` : ""),
        { mixed },
      );
    }
    return verified.bytes;
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

/**
 * Reads a response header and not a byte past it: the status first, then the rest of the
 * header it announces. Throws `BulkFetchError` ("protocol") for a malformed or cut-off header.
 */
async function readHeader(conn: Deno.Conn): Promise<BulkResponseHeader> {
  const header = new Uint8Array(BULK_OK_FROM_HEADER_BYTES);
  let size = 1;
  for (let got = 0;;) {
    const n = await conn.read(header.subarray(got, size));
    if (n === null) throw new BulkFetchError("protocol", `response ended after ${got} bytes`);
    got += n;
    if (got === 1) size = bulkResponseHeaderBytes(header[0]) ?? 1;
    let decoded;
    try {
      decoded = decodeBulkResponseHeader(header.subarray(0, got));
    } catch (error) {
      if (!(error instanceof BulkWireError)) throw error;
      throw new BulkFetchError("protocol", error.message, { cause: error });
    }
    if (decoded !== undefined) return decoded.header;
  }
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}
