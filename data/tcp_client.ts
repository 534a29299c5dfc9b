/**
 * The TCP data provider: fetches sequences from a data server (`DataLocation.Server`),
 * authenticating with the client's ed25519 identity. Requests on one connection are
 * sent one at a time; a broken connection is reopened on the next request. A request on
 * a kept connection that the server closed meanwhile (idle too long: it says `Closing`, or
 * just hangs up) is sent once more on a fresh connection; requests are reads, safe to repeat.
 *
 * @module
 */
import { DataError } from "./errors.ts";
import type { DataProvider, TokenBatch } from "./provider.ts";
import {
  DATA_SERVER_CONTEXT,
  type DataClientMessage,
  type DataServerMessage,
  decodeDataServerMessage,
  encodeDataClientMessage,
  MAX_RESPONSE_FRAME_BYTES,
} from "./tcp_messages.ts";
import { clientHandshake, FrameReader, withAbort, writeFrame } from "../net/mod.ts";
import type { BatchId } from "../common/mod.ts";

/** Options of {@linkcode TcpDataProvider.connect}. */
export interface TcpProviderOptions {
  /** The client's 32-byte ed25519 secret key. */
  secretKey: Uint8Array;
  /** Milliseconds for connecting plus handshake, and for each request (default 30000). */
  timeoutMs?: number;
  /** Aborts connecting, and every later request. */
  signal?: AbortSignal;
}

/** Splits `host:port` (or `[v6]:port`); throws {@linkcode DataError} naming the address. */
export function parseHostPort(address: string): { hostname: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:\[\]]+)):(\d{1,5})$/.exec(address.trim());
  const port = m === null ? NaN : Number(m[3]);
  if (m === null || port < 1 || port > 65535) {
    throw new DataError(`Data server address "${address}" is not host:port`, { key: "Server" });
  }
  return { hostname: m[1] ?? m[2], port };
}

interface Connection {
  conn: Deno.Conn;
  frames: FrameReader;
}

/** A dataset served by a TCP data server. */
export class TcpDataProvider implements DataProvider {
  readonly seqLen: number;
  readonly numSequences: number;
  /** The server's `host:port`. */
  readonly address: string;
  readonly #options: TcpProviderOptions;
  #connection: Connection | null;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(
    address: string,
    options: TcpProviderOptions,
    connection: Connection,
    info: { seqLen: number; numSequences: number },
  ) {
    this.address = address;
    this.#options = options;
    this.#connection = connection;
    this.seqLen = info.seqLen;
    this.numSequences = info.numSequences;
  }

  /** Connects, authenticates and asks for the dataset's shape. */
  static async connect(address: string, options: TcpProviderOptions): Promise<TcpDataProvider> {
    const connection = await openConnection(address, options, options.signal);
    try {
      const info = await exchange(address, connection, { kind: "GetInfo" }, timeoutSignal(options));
      if (info.kind !== "Info") {
        throw new DataError(`Data server ${address} answered GetInfo with ${info.kind}`, {
          file: address,
        });
      }
      return new TcpDataProvider(address, options, connection, info);
    } catch (e) {
      connection.conn.close();
      throw e;
    }
  }

  /** The sequences `batch.start..batch.end`, as the server sends them. */
  getSamples(batch: BatchId, options: { signal?: AbortSignal } = {}): Promise<TokenBatch> {
    const run = this.#queue.then(() => this.#request(batch, options.signal));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #request(batch: BatchId, callerSignal?: AbortSignal): Promise<TokenBatch> {
    if (this.#closed) throw new Error("TcpDataProvider is closed");
    const signal = timeoutSignal(this.#options, callerSignal);
    const kept = this.#connection !== null;
    let reply: DataServerMessage;
    try {
      reply = await this.#ask(batch, signal);
    } catch (e) {
      if (!kept || signal.aborted) throw e;
      reply = await this.#ask(batch, signal);
    }
    const what = `batch ${batch.start}..${batch.end}`;
    switch (reply.kind) {
      case "Samples": {
        if (
          reply.batch.start !== batch.start || reply.batch.end !== batch.end ||
          reply.seqLen !== this.seqLen
        ) {
          throw new DataError(
            `Data server ${this.address} sent batch ${reply.batch.start}..${reply.batch.end} ` +
              `of seq_len ${reply.seqLen} for ${what} of seq_len ${this.seqLen}`,
            { file: this.address },
          );
        }
        return { count: batch.end - batch.start + 1, seqLen: reply.seqLen, tokens: reply.tokens };
      }
      case "Rejected":
        throw new DataError(
          `Data server ${this.address} rejected ${what}: ${reply.reason} (${reply.detail})`,
          { file: this.address, key: "batch" },
        );
      case "Failed":
        throw new DataError(
          `Data server ${this.address} failed to read ${what}: ${reply.message}`,
          { file: this.address, retryable: true },
        );
      case "Info":
      case "Closing":
        throw new DataError(`Data server ${this.address} answered ${what} with ${reply.kind}`, {
          file: this.address,
        });
    }
  }

  /** Sends `RequestSamples` on the connection (opened if needed); drops it on any failure. */
  async #ask(batch: BatchId, signal: AbortSignal): Promise<DataServerMessage> {
    const connection = this.#connection ??= await openConnection(
      this.address,
      this.#options,
      signal,
    );
    try {
      const reply = await exchange(
        this.address,
        connection,
        { kind: "RequestSamples", batch },
        signal,
      );
      if (reply.kind === "Closing") {
        throw new DataError(
          `Data server ${this.address} closed the connection: ${reply.reason}`,
          { file: this.address, retryable: true },
        );
      }
      return reply;
    } catch (e) {
      // The connection's state is unknown (a reply may still arrive): drop it.
      connection.conn.close();
      if (this.#connection === connection) this.#connection = null;
      throw e;
    }
  }

  /** Closes the connection (after any request in flight). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#queue;
    this.#connection?.conn.close();
    this.#connection = null;
  }
}

function timeoutSignal(options: TcpProviderOptions, caller?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 30_000);
  const signals = [timeout, caller, options.signal].filter((s): s is AbortSignal => !!s);
  return AbortSignal.any(signals);
}

async function openConnection(
  address: string,
  options: TcpProviderOptions,
  signal?: AbortSignal,
): Promise<Connection> {
  const { hostname, port } = parseHostPort(address);
  const s = signal ?? timeoutSignal(options);
  let conn: Deno.Conn;
  try {
    conn = await withAbort(Deno.connect({ hostname, port }), s);
  } catch (cause) {
    throw new DataError(
      `Cannot connect to data server ${address}: ${(cause as Error).message}`,
      { file: address, retryable: true },
      { cause },
    );
  }
  const frames = new FrameReader(conn, { maxFrameBytes: MAX_RESPONSE_FRAME_BYTES });
  try {
    await clientHandshake(conn, frames, {
      context: DATA_SERVER_CONTEXT,
      secretKey: options.secretKey,
      signal: s,
    });
  } catch (cause) {
    conn.close();
    throw new DataError(
      `Handshake with data server ${address} failed: ${(cause as Error).message}`,
      { file: address },
      { cause },
    );
  }
  return { conn, frames };
}

async function exchange(
  address: string,
  { conn, frames }: Connection,
  request: DataClientMessage,
  signal: AbortSignal,
): Promise<DataServerMessage> {
  try {
    await withAbort(writeFrame(conn, encodeDataClientMessage(request)), signal);
    const frame = await withAbort(frames.next(), signal);
    if (frame === null) throw new Error("connection closed by the server");
    return decodeDataServerMessage(frame);
  } catch (cause) {
    throw new DataError(
      `Data server ${address}: ${request.kind} failed: ${(cause as Error).message}`,
      { file: address, retryable: true },
      { cause },
    );
  }
}
