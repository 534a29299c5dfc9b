/**
 * A small Solana JSON-RPC client (HTTP requests, WebSocket account subscriptions) for the
 * operator commands and the training client's Solana backend. It speaks the standard RPC,
 * so it works the same against the localnet (coordinator/solana/localnet/), a
 * `solana-test-validator`, devnet or mainnet.
 *
 * Two kinds of failure, kept apart because callers treat them differently:
 * {@linkcode RpcTransportError} (no answer: retry, or try another RPC) and
 * {@linkcode RpcResponseError} (the node answered with a JSON-RPC error).
 *
 * @module
 */

import { type Address, getBase64EncodedWireTransaction, type Transaction } from "@solana/kit";
import { Buffer } from "node:buffer";
import { readBody } from "../../../net/mod.ts";

/** The node could not be reached or sent something that is not JSON-RPC. */
export class RpcTransportError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "RpcTransportError";
  }
}

/** The node answered with a JSON-RPC error (`code`, `message`, optional `data`). */
export class RpcResponseError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(method: string, code: number, message: string, data: unknown) {
    super(`${method}: ${message} (${code})`);
    this.name = "RpcResponseError";
    this.code = code;
    this.data = data;
  }
}

/** One transaction's status as getSignatureStatuses reports it. */
export interface SignatureStatus {
  slot: number;
  /** RPC JSON of the transaction error, or null on success. */
  err: unknown;
  confirmationStatus: string | null;
}

/** Options of {@linkcode SolanaRpcClient}. */
export interface SolanaRpcClientOptions {
  /** HTTP endpoint, e.g. `http://127.0.0.1:8899`. */
  url: string;
  /** WebSocket endpoint (default: the HTTP one with ws:// and the port + 1, as validators do). */
  wsUrl?: string;
  /** Milliseconds before a request counts as unanswered (default 10000). */
  timeoutMs?: number;
}

/** The WebSocket URL a validator serves next to `url` (port + 1). */
export function defaultWsUrl(url: string): string {
  const u = new URL(url);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  if (u.port !== "") u.port = String(Number(u.port) + 1);
  return u.toString().replace(/\/$/, "");
}

/** Parses large integers in JSON as bigint where a double would lose them. */
function parseJson(text: string): unknown {
  return JSON.parse(text, (_k, v, ctx?: { source?: string }) => {
    if (typeof v === "number" && !Number.isSafeInteger(v) && ctx?.source !== undefined) {
      if (/^-?\d+$/.test(ctx.source)) return BigInt(ctx.source);
    }
    return v;
  });
}

/** JSON-RPC over HTTP, plus account subscriptions over WebSocket. */
export class SolanaRpcClient {
  readonly url: string;
  readonly wsUrl: string;
  readonly #timeoutMs: number;
  #nextId = 1;

  constructor(opts: SolanaRpcClientOptions) {
    this.url = opts.url;
    this.wsUrl = opts.wsUrl ?? defaultWsUrl(opts.url);
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
  }

  /** Calls `method`; RpcResponseError for an error answer, RpcTransportError for none. */
  async call<T>(method: string, params: unknown[] = [], signal?: AbortSignal): Promise<T> {
    const body = JSON.stringify({ jsonrpc: "2.0", id: this.#nextId++, method, params });
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
    let text: string;
    try {
      const res = await fetch(this.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        signal: combined,
      });
      text = new TextDecoder().decode(await readBody(res, combined));
      if (!res.ok && !text.startsWith("{")) {
        throw new RpcTransportError(`${method} at ${this.url}: HTTP ${res.status}`);
      }
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      if (e instanceof RpcTransportError) throw e;
      throw new RpcTransportError(`${method} at ${this.url}: ${(e as Error).message}`, {
        cause: e,
      });
    }
    let reply: { result?: unknown; error?: { code: number; message: string; data?: unknown } };
    try {
      reply = parseJson(text) as typeof reply;
    } catch {
      throw new RpcTransportError(`${method} at ${this.url}: the answer is not JSON`);
    }
    if (reply.error !== undefined) {
      throw new RpcResponseError(method, reply.error.code, reply.error.message, reply.error.data);
    }
    if (!("result" in reply)) {
      throw new RpcTransportError(`${method} at ${this.url}: the answer has no result`);
    }
    return reply.result as T;
  }

  /** The newest blockhash. */
  async latestBlockhash(
    signal?: AbortSignal,
  ): Promise<{ blockhash: string; lastValidBlockHeight: bigint }> {
    const r = await this.call<{ value: { blockhash: string; lastValidBlockHeight: number } }>(
      "getLatestBlockhash",
      [{ commitment: "confirmed" }],
      signal,
    );
    return {
      blockhash: r.value.blockhash,
      lastValidBlockHeight: BigInt(r.value.lastValidBlockHeight),
    };
  }

  /** The data of the account at `at`, or null when it does not exist. */
  async accountData(at: Address, signal?: AbortSignal): Promise<Uint8Array | null> {
    const r = await this.call<{ value: { data: [string, string] } | null }>(
      "getAccountInfo",
      [at, { encoding: "base64", commitment: "confirmed" }],
      signal,
    );
    return r.value === null ? null : decodeAccountData(r.value.data);
  }

  /** Lamports held at `at`. */
  async balance(at: Address, signal?: AbortSignal): Promise<bigint> {
    const r = await this.call<{ value: number | bigint }>("getBalance", [at], signal);
    return BigInt(r.value);
  }

  /** The rent-exempt minimum for `bytes` of account data. */
  async rentExemption(bytes: number, signal?: AbortSignal): Promise<bigint> {
    return BigInt(await this.call<number>("getMinimumBalanceForRentExemption", [bytes], signal));
  }

  /** Submits a signed transaction (with preflight); returns its signature. */
  sendTransaction(tx: Transaction, signal?: AbortSignal): Promise<string> {
    return this.call<string>("sendTransaction", [
      getBase64EncodedWireTransaction(tx),
      { encoding: "base64", preflightCommitment: "confirmed" },
    ], signal);
  }

  /** The statuses of `signatures` (null where unknown). */
  async signatureStatuses(
    signatures: string[],
    signal?: AbortSignal,
  ): Promise<(SignatureStatus | null)[]> {
    const r = await this.call<{ value: (SignatureStatus | null)[] }>(
      "getSignatureStatuses",
      [signatures],
      signal,
    );
    return r.value;
  }

  /**
   * Signatures of the newest confirmed transactions that named `at`, newest first (at most
   * `limit`, at most 1000), with whether each failed.
   */
  async signaturesForAddress(
    at: Address,
    opts: { limit: number },
    signal?: AbortSignal,
  ): Promise<{ signature: string; failed: boolean }[]> {
    const r = await this.call<{ signature: string; err: unknown }[]>(
      "getSignaturesForAddress",
      [at, { limit: opts.limit, commitment: "confirmed" }],
      signal,
    );
    return r.map((s) => ({ signature: s.signature, failed: s.err !== null }));
  }

  /** The wire bytes of a confirmed transaction, or null when the node does not know it. */
  async transactionBytes(signature: string, signal?: AbortSignal): Promise<Uint8Array | null> {
    const r = await this.call<{ transaction: [string, string] } | null>(
      "getTransaction",
      [signature, {
        encoding: "base64",
        commitment: "confirmed",
        maxSupportedTransactionVersion: 0,
      }],
      signal,
    );
    return r === null ? null : decodeAccountData(r.transaction);
  }

  /**
   * One `accountSubscribe` on this node's WebSocket: `onData` gets the account's bytes on
   * every change notification, `onOpen` runs when the node confirmed the subscription.
   * Resolves when `signal` aborts; rejects with RpcTransportError when the socket drops
   * or the node refuses. {@linkcode followAccount} reconnects around it.
   */
  subscribeAccountOnce(
    at: Address,
    onData: (data: Uint8Array) => void,
    signal: AbortSignal,
    onOpen?: () => void,
  ): Promise<void> {
    return this.#subscribeOnce(at, onData, signal, onOpen);
  }

  #subscribeOnce(
    at: Address,
    onData: (data: Uint8Array) => void,
    signal: AbortSignal,
    onOpen?: () => void,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.wsUrl);
      const stop = () => ws.close();
      signal.addEventListener("abort", stop, { once: true });
      ws.onopen = () => {
        ws.send(JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "accountSubscribe",
          params: [at, { encoding: "base64", commitment: "confirmed" }],
        }));
      };
      ws.onmessage = (event) => {
        let msg: {
          id?: number;
          result?: unknown;
          method?: string;
          error?: { message: string };
          params?: { result: { value: { data: [string, string] } } };
        };
        try {
          msg = JSON.parse(String(event.data));
        } catch {
          ws.close();
          reject(new RpcTransportError(`accountSubscribe at ${this.wsUrl}: a message is not JSON`));
          return;
        }
        if (msg.error !== undefined) {
          ws.close();
          reject(new RpcTransportError(`accountSubscribe at ${this.wsUrl}: ${msg.error.message}`));
          return;
        }
        if (msg.id === 1 && msg.result !== undefined) onOpen?.();
        if (msg.method === "accountNotification" && msg.params !== undefined) {
          onData(decodeAccountData(msg.params.result.value.data));
        }
      };
      ws.onerror = () => {};
      ws.onclose = () => {
        signal.removeEventListener("abort", stop);
        if (signal.aborted) resolve();
        else reject(new RpcTransportError(`accountSubscribe at ${this.wsUrl}: the socket closed`));
      };
    });
  }
}

/** Bytes of an RPC `[data, "base64"]` pair. */
export function decodeAccountData(data: [string, string]): Uint8Array {
  if (!Array.isArray(data) || data[1] !== "base64") {
    throw new RpcTransportError(`account data is not ["…", "base64"]: ${JSON.stringify(data)}`);
  }
  const buf = Buffer.from(data[0], "base64");
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** Options of {@linkcode followAccount}. */
export interface FollowAccountOptions {
  signal: AbortSignal;
  /** Each time a node confirmed the subscription (refetch then: earlier changes were not notified). */
  onOpen?: (wsUrl: string) => void;
  /** Each time a subscription dropped. */
  onError?: (wsUrl: string, e: Error) => void;
  /** Pause before the next attempt in ms (default 500). */
  retryMs?: number;
}

/**
 * Follows an account through the nodes' WebSockets: subscribes on the first node and, each
 * time the subscription drops, on the next one (`--ws-rpc`, then `--ws-rpc-2`, round and
 * round) after `retryMs`. Resolves when `signal` aborts.
 */
export async function followAccount(
  rpcs: readonly SolanaRpcClient[],
  at: Address,
  onData: (data: Uint8Array) => void,
  opts: FollowAccountOptions,
): Promise<void> {
  if (rpcs.length === 0) throw new TypeError("followAccount needs at least one RPC");
  const retryMs = opts.retryMs ?? 500;
  for (let i = 0; !opts.signal.aborted; i = (i + 1) % rpcs.length) {
    const rpc = rpcs[i];
    try {
      await rpc.subscribeAccountOnce(at, onData, opts.signal, () => opts.onOpen?.(rpc.wsUrl));
    } catch (e) {
      if (opts.signal.aborted) return;
      opts.onError?.(rpc.wsUrl, e as Error);
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, retryMs);
      function done() {
        opts.signal.removeEventListener("abort", done);
        clearTimeout(t);
        resolve();
      }
      opts.signal.addEventListener("abort", done, { once: true });
    });
  }
}
