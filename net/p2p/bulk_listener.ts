/**
 * A provider's plain-TCP bulk listener: it serves content to whoever presents a valid ticket
 * (issued over the authenticated payload stream, see `payload_service.ts`), unencrypted, so a
 * large transfer costs a socket copy instead of ChaCha20-Poly1305 on both ends.
 *
 * One connection carries one transfer: the fetcher writes a 65-byte request (`bulk_wire.ts`; 73
 * bytes for the rest from an offset), the listener redeems the ticket in its `TicketBook` and
 * answers with a status, then for `Ok` the length and the bytes, for `OkFrom` the length, the
 * offset and the bytes from it, and closes. The ticket names the content and the offset
 * (`bulk_tickets.ts`); an offset at or past the content's end is refused as `BadOffset`, so no
 * request reads other content or more than it. Limits keep it from being abused: at most
 * `maxConnections` at once and `maxConnectionsPerAddress` from one IP address (more are answered
 * `Busy`, so one host cannot take every slot), a complete request within
 * `requestTimeoutMs`, and every write must make progress within `idleTimeoutMs` (a reader that
 * stops reading is hung up on). It never reads more than the request and never serves content
 * no ticket names.
 *
 * @module
 */
import type { ContentHash } from "./content_store.ts";
import { hashFromBytes } from "./content_store.ts";
import {
  BULK_REQUEST_BYTES,
  BULK_REQUEST_FROM_BYTES,
  type BulkRefusal,
  bulkRequestBytes,
  BulkWireError,
  decodeBulkRequest,
  encodeBulkResponseHeader,
} from "./bulk_wire.ts";
import type { TicketBook, TicketRefusal } from "./bulk_tickets.ts";

/** Bulk connections served at once, by default. */
export const DEFAULT_BULK_MAX_CONNECTIONS = 32;
/** Bulk connections served at once to one IP address, by default. */
export const DEFAULT_BULK_MAX_CONNECTIONS_PER_ADDRESS = 16;
/** How long the listener waits for a complete request, by default. */
export const DEFAULT_BULK_REQUEST_TIMEOUT_MS = 5_000;
/** How long one write may make no progress before the listener hangs up, by default. */
export const DEFAULT_BULK_IDLE_TIMEOUT_MS = 30_000;
/** Bytes per `write` call when serving. */
const WRITE_CHUNK_BYTES = 4 * 1024 * 1024;

/** Options for `BulkListener.start`. */
export interface BulkListenerOptions {
  /** Interface to listen on (an IPv4 or IPv6 address). */
  host: string;
  /** Port; 0 (the default) picks a free one. */
  port?: number;
  /** Where tickets are redeemed (the payload service issues them into the same book). */
  tickets: TicketBook;
  /** The content served under a hash, if still held. */
  content: (hash: ContentHash) => Uint8Array | undefined;
  /** Milliseconds now, for ticket expiry. Default `Date.now`. */
  now?: () => number;
  maxConnections?: number;
  maxConnectionsPerAddress?: number;
  requestTimeoutMs?: number;
  idleTimeoutMs?: number;
}

/** Counters of a bulk listener. */
export interface BulkListenerStats {
  /** Transfers completed. */
  served: number;
  /** Content bytes sent by completed transfers (for a rest, the bytes from its offset). */
  servedBytes: number;
  /** Of `served`, transfers of the rest of content from an offset. */
  resumed: number;
  /** Connections refused, by the status they were answered with (or "Timeout"). */
  refused: Partial<Record<BulkRefusal | "Timeout", number>>;
}

const REFUSAL_STATUS: Record<TicketRefusal, BulkRefusal> = {
  "unknown": "UnknownTicket",
  "expired": "ExpiredTicket",
  "used": "UsedTicket",
  "wrong-hash": "WrongHash",
  "wrong-offset": "WrongOffset",
};

/** A running bulk listener. Start with `BulkListener.start`; `close()` when done. */
export class BulkListener {
  readonly #listener: Deno.TcpListener;
  readonly #options: Required<Omit<BulkListenerOptions, "port">>;
  readonly #open = new Set<Deno.TcpConn>();
  /** Open connections per remote IP address. */
  readonly #perAddress = new Map<string, number>();
  readonly #stats: BulkListenerStats = { served: 0, servedBytes: 0, resumed: 0, refused: {} };
  readonly #accepting: Promise<void>;
  #closed = false;
  #failure: Error | undefined;

  private constructor(listener: Deno.TcpListener, options: BulkListenerOptions) {
    this.#listener = listener;
    this.#options = {
      host: options.host,
      tickets: options.tickets,
      content: options.content,
      now: options.now ?? Date.now,
      maxConnections: positive(
        "maxConnections",
        options.maxConnections ?? DEFAULT_BULK_MAX_CONNECTIONS,
      ),
      maxConnectionsPerAddress: positive(
        "maxConnectionsPerAddress",
        options.maxConnectionsPerAddress ?? DEFAULT_BULK_MAX_CONNECTIONS_PER_ADDRESS,
      ),
      requestTimeoutMs: positive(
        "requestTimeoutMs",
        options.requestTimeoutMs ?? DEFAULT_BULK_REQUEST_TIMEOUT_MS,
      ),
      idleTimeoutMs: positive(
        "idleTimeoutMs",
        options.idleTimeoutMs ?? DEFAULT_BULK_IDLE_TIMEOUT_MS,
      ),
    };
    this.#accepting = this.#accept();
  }

  /** Listens on `host:port` and serves until `close()`. */
  static start(options: BulkListenerOptions): BulkListener {
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65_535) {
      throw new RangeError(`bulk port must be an integer in 0..65535, found ${port}`);
    }
    let listener: Deno.TcpListener;
    try {
      listener = Deno.listen({ hostname: options.host, port, transport: "tcp" });
    } catch (error) {
      throw new Error(
        `Cannot start the bulk listener on ${options.host}:${port}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return new BulkListener(listener, options);
  }

  /** The port it listens on. */
  get port(): number {
    return this.#listener.addr.port;
  }

  /** The address it listens on. */
  get host(): string {
    return this.#listener.addr.hostname;
  }

  /** Connections being served now. */
  get openConnections(): number {
    return this.#open.size;
  }

  /** Why the listener stopped accepting on its own, if it did. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /** A snapshot of the counters. */
  get stats(): BulkListenerStats {
    return { ...this.#stats, refused: { ...this.#stats.refused } };
  }

  /** Stops listening and hangs up on every open connection. Safe to call twice. */
  async close(): Promise<void> {
    this.#shut();
    await this.#accepting;
  }

  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#listener.close();
    } catch {
      // Already closed by a failed accept.
    }
    for (const conn of this.#open) closeQuietly(conn);
  }

  async #accept(): Promise<void> {
    const serving = new Set<Promise<void>>();
    try {
      for await (const conn of this.#listener) {
        const task = this.#handle(conn).finally(() => serving.delete(task));
        serving.add(task);
      }
    } catch (error) {
      // Accepting failed on its own (e.g. out of file descriptors): stop serving rather than
      // crash the client; fetchers then fall back to the in-band stream.
      if (!this.#closed) {
        this.#failure = error as Error;
        this.#shut();
      }
    } finally {
      await Promise.allSettled(serving);
    }
  }

  async #handle(conn: Deno.TcpConn): Promise<void> {
    if (this.#closed) return closeQuietly(conn);
    const address = conn.remoteAddr.hostname;
    const fromAddress = this.#perAddress.get(address) ?? 0;
    if (
      this.#open.size >= this.#options.maxConnections ||
      fromAddress >= this.#options.maxConnectionsPerAddress
    ) {
      this.#refuse("Busy");
      await writeQuietly(conn, encodeBulkResponseHeader({ status: "Busy" }));
      return closeQuietly(conn);
    }
    this.#open.add(conn);
    this.#perAddress.set(address, fromAddress + 1);
    let timer: ReturnType<typeof setTimeout> | undefined;
    let timedOut = false;
    const arm = (ms: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        closeQuietly(conn);
      }, ms);
    };
    try {
      conn.setNoDelay(true);
      arm(this.#options.requestTimeoutMs);
      // The shortest request first; its version says whether an offset follows.
      const request = new Uint8Array(BULK_REQUEST_FROM_BYTES);
      let size = BULK_REQUEST_BYTES;
      for (let got = 0; got < size;) {
        const n = await conn.read(request.subarray(got, size));
        if (n === null) throw new BulkWireError("request", "connection ended early", got);
        got += n;
        if (got === BULK_REQUEST_BYTES) size = bulkRequestBytes(request[0]) ?? size;
      }
      const answer = this.#answer(request.subarray(0, size));
      if (answer.status !== "Ok") {
        this.#refuse(answer.status);
        arm(this.#options.idleTimeoutMs);
        await writeAll(conn, encodeBulkResponseHeader(answer), () => {});
        return;
      }
      const { bytes, offset } = answer;
      const progress = () => arm(this.#options.idleTimeoutMs);
      progress();
      const header = offset === 0
        ? encodeBulkResponseHeader({ status: "Ok", length: bytes.length })
        : encodeBulkResponseHeader({ status: "OkFrom", length: bytes.length, offset });
      await writeAll(conn, header, progress);
      await writeAll(conn, bytes.subarray(offset), progress);
      this.#stats.served++;
      this.#stats.servedBytes += bytes.length - offset;
      if (offset > 0) this.#stats.resumed++;
    } catch (error) {
      if (timedOut) this.#refuse("Timeout");
      else if (error instanceof BulkWireError) this.#refuse("BadRequest");
      // Otherwise the fetcher went away or we are closing: nothing to answer.
    } finally {
      clearTimeout(timer);
      this.#open.delete(conn);
      const left = (this.#perAddress.get(address) ?? 1) - 1;
      if (left === 0) this.#perAddress.delete(address);
      else this.#perAddress.set(address, left);
      closeQuietly(conn);
    }
  }

  /** What to answer a request: a refusal, or Ok with the content and the offset to send from. */
  #answer(
    bytes: Uint8Array,
  ): { status: "Ok"; bytes: Uint8Array; offset: number } | { status: BulkRefusal } {
    let request;
    try {
      request = decodeBulkRequest(bytes);
    } catch (error) {
      if (error instanceof BulkWireError) return { status: "BadRequest" };
      throw error;
    }
    const hash = hashFromBytes(request.hash);
    const { offset } = request;
    const redemption = this.#options.tickets.redeem({
      ticket: request.ticket,
      hash,
      offset,
      now: this.#options.now(),
    });
    if (!redemption.ok) return { status: REFUSAL_STATUS[redemption.reason] };
    const content = this.#options.content(hash);
    if (content === undefined) return { status: "NotFound" };
    // Offset 0 is the whole content, even empty; a rest starts before the end.
    if (offset > 0 && offset >= content.length) return { status: "BadOffset" };
    return { status: "Ok", bytes: content, offset };
  }

  #refuse(status: BulkRefusal | "Timeout"): void {
    this.#stats.refused[status] = (this.#stats.refused[status] ?? 0) + 1;
  }
}

/** Writes all of `bytes`, calling `progress` after every write that moved some. */
async function writeAll(conn: Deno.Conn, bytes: Uint8Array, progress: () => void): Promise<void> {
  for (let offset = 0; offset < bytes.length;) {
    offset += await conn.write(bytes.subarray(offset, offset + WRITE_CHUNK_BYTES));
    progress();
  }
}

async function writeQuietly(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  try {
    await writeAll(conn, bytes, () => {});
  } catch {
    // The peer is gone; it learns nothing more.
  }
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}

function positive(what: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${what} must be a positive integer, found ${value}`);
  }
  return value;
}
