/**
 * Solana's WebSocket subscriptions over a {@linkcode Ledger}: `accountSubscribe` (a
 * notification whenever the account's lamports or data change: the coordinator account
 * changes on every tick) and `signatureSubscribe` (one notification when the transaction
 * has executed), with their `*Unsubscribe` twins. Transport-free: `send` is given the
 * JSON text of each notification.
 *
 * @module
 */

import { type Address, address } from "@solana/kit";
import type { Ledger, LedgerAccount } from "./ledger.ts";
import { accountJson, RPC_ERRORS, RpcError, rpcJson } from "./rpc.ts";

interface AccountSub {
  kind: "account";
  address: Address;
  encoding: unknown;
  last: LedgerAccount | null;
}
interface SignatureSub {
  kind: "signature";
  signature: string;
}
type Sub = (AccountSub | SignatureSub) & { id: number; send: (text: string) => void };

const DELETED: LedgerAccount = {
  lamports: 0n,
  data: new Uint8Array(0),
  owner: address("11111111111111111111111111111111"),
  executable: false,
};

function sameAccount(a: LedgerAccount | null, b: LedgerAccount | null): boolean {
  if (a === null || b === null) return a === b;
  if (a.lamports !== b.lamports || a.owner !== b.owner || a.data.length !== b.data.length) {
    return false;
  }
  for (let i = 0; i < a.data.length; i++) if (a.data[i] !== b.data[i]) return false;
  return true;
}

/** The subscriptions of every connected socket. */
export class Subscriptions {
  readonly #ledger: Ledger;
  readonly #subs = new Map<number, Sub>();
  #nextId = 1;
  readonly #stop: () => void;

  constructor(ledger: Ledger) {
    this.#ledger = ledger;
    this.#stop = ledger.onChange(() => this.#publish());
  }

  /** Stops listening to the ledger. */
  close(): void {
    this.#stop();
    this.#subs.clear();
  }

  /** Handles a subscription method; returns the JSON-RPC result. */
  call(method: string, params: unknown[], send: (text: string) => void): unknown {
    switch (method) {
      case "accountSubscribe": {
        const text = params[0];
        let at: Address;
        try {
          at = address(String(text));
        } catch {
          throw new RpcError(RPC_ERRORS.InvalidParams, `Invalid public key "${String(text)}"`);
        }
        const cfg = (params[1] ?? {}) as { encoding?: unknown };
        const id = this.#nextId++;
        this.#subs.set(id, {
          id,
          send,
          kind: "account",
          address: at,
          encoding: cfg.encoding ?? "base64",
          last: this.#ledger.account(at),
        });
        return id;
      }
      case "signatureSubscribe": {
        const signature = params[0];
        if (typeof signature !== "string") {
          throw new RpcError(RPC_ERRORS.InvalidParams, "Invalid params: expected a signature");
        }
        const id = this.#nextId++;
        const sub: Sub = { id, send, kind: "signature", signature };
        this.#subs.set(id, sub);
        queueMicrotask(() => this.#checkSignature(sub));
        return id;
      }
      case "accountUnsubscribe":
      case "signatureUnsubscribe": {
        const id = Number(params[0]);
        const sub = this.#subs.get(id);
        if (sub === undefined || !method.startsWith(sub.kind)) {
          throw new RpcError(RPC_ERRORS.InvalidParams, `Invalid subscription id ${params[0]}`);
        }
        this.#subs.delete(id);
        return true;
      }
      default:
        throw new RpcError(RPC_ERRORS.MethodNotFound, `Method not found: ${method}`);
    }
  }

  /** Drops every subscription of one socket. */
  dropSocket(send: (text: string) => void): void {
    for (const [id, sub] of this.#subs) if (sub.send === send) this.#subs.delete(id);
  }

  /** How many subscriptions are open (tests). */
  get size(): number {
    return this.#subs.size;
  }

  #notify(sub: Sub, method: string, value: unknown): void {
    const slot = this.#ledger.slot();
    try {
      sub.send(rpcJson({
        jsonrpc: "2.0",
        method,
        params: { result: { context: { slot }, value }, subscription: sub.id },
      }));
    } catch {
      this.#subs.delete(sub.id); // the socket is gone
    }
  }

  #checkSignature(sub: Sub & SignatureSub): void {
    if (!this.#subs.has(sub.id)) return;
    const status = this.#ledger.status(sub.signature);
    if (status === null) return;
    this.#subs.delete(sub.id);
    this.#notify(sub, "signatureNotification", { err: status.err });
  }

  #publish(): void {
    const current = new Map<Address, LedgerAccount | null>();
    for (const sub of [...this.#subs.values()]) {
      if (sub.kind === "signature") {
        this.#checkSignature(sub);
        continue;
      }
      if (!current.has(sub.address)) current.set(sub.address, this.#ledger.account(sub.address));
      const now = current.get(sub.address) ?? null;
      if (sameAccount(sub.last, now)) continue;
      sub.last = now;
      this.#notify(sub, "accountNotification", accountJson(now ?? DELETED, sub.encoding));
    }
  }
}
