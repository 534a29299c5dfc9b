/**
 * The tickets a provider hands out for its bulk listener: each is 32 random bytes, issued to one
 * peer (over the noise-authenticated payload stream) for one content hash from one offset (0:
 * the whole content; more: the rest of it, for a fetcher that holds the bytes before), valid for
 * a short lifetime and for one presentation only.
 *
 * Pure bookkeeping: the random bytes and the time come from the caller, so tests control both.
 * Spent and expired tickets are remembered for one more lifetime, so a late or replayed
 * presentation is refused as "expired" or "used" rather than "unknown". Outstanding tickets are
 * capped per peer and in total: a peer cannot make the provider remember unbounded state, and a
 * provider over its cap simply serves in-band.
 *
 * @module
 */
import { TICKET_BYTES } from "./payload_wire.ts";
import { toHex } from "../../common/mod.ts";

/** How long a ticket may wait for its bulk connection, by default. */
export const DEFAULT_TICKET_LIFETIME_MS = 10_000;
/** Unspent tickets one peer may hold at once, by default. */
export const DEFAULT_MAX_TICKETS_PER_PEER = 64;
/** Unspent tickets all peers together may hold at once, by default. */
export const DEFAULT_MAX_TICKETS = 1024;

/** Options for a `TicketBook`. */
export interface TicketBookOptions {
  /** Milliseconds from issue until the ticket can no longer be presented. */
  lifetimeMs?: number;
  /** Unspent, unexpired tickets one peer may hold. */
  maxPerPeer?: number;
  /** Unspent, unexpired tickets in total. */
  maxTotal?: number;
}

/** Why a presented ticket was refused. */
export type TicketRefusal = "unknown" | "expired" | "used" | "wrong-hash" | "wrong-offset";

/** The outcome of presenting a ticket. */
export type Redemption =
  | { ok: true; peer: string; hash: string }
  | { ok: false; reason: TicketRefusal };

interface Entry {
  peer: string;
  hash: string;
  offset: number;
  expiresAt: number;
  spent: boolean;
}

/** Issues and redeems single-use, short-lived bulk tickets. */
export class TicketBook {
  readonly #lifetimeMs: number;
  readonly #maxPerPeer: number;
  readonly #maxTotal: number;
  readonly #entries = new Map<string, Entry>();

  /** Builds an empty book. Throws `RangeError` for a limit that is not a positive integer. */
  constructor(options: TicketBookOptions = {}) {
    this.#lifetimeMs = positive("lifetimeMs", options.lifetimeMs ?? DEFAULT_TICKET_LIFETIME_MS);
    this.#maxPerPeer = positive("maxPerPeer", options.maxPerPeer ?? DEFAULT_MAX_TICKETS_PER_PEER);
    this.#maxTotal = positive("maxTotal", options.maxTotal ?? DEFAULT_MAX_TICKETS);
  }

  /** Tickets remembered (unspent, spent or expired but not yet forgotten). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Records `ticket` (32 random bytes from the caller) as issued to `peer` for the content
   * `hash` from byte `offset` (default 0) at time `now` (ms). Returns false, recording nothing,
   * when the peer or the book is at its cap of outstanding tickets (the caller then serves
   * in-band). Throws `RangeError` for a ticket of the wrong length, one already issued, or an
   * offset that is not a non-negative safe integer.
   */
  issue(
    options: { ticket: Uint8Array; peer: string; hash: string; offset?: number; now: number },
  ): boolean {
    const { ticket, peer, hash, now } = options;
    const offset = options.offset ?? 0;
    if (ticket.length !== TICKET_BYTES) {
      throw new RangeError(`ticket must be ${TICKET_BYTES} bytes, found ${ticket.length}`);
    }
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new RangeError(`ticket offset must be a non-negative safe integer, found ${offset}`);
    }
    const key = toHex(ticket);
    this.#forgetOld(now);
    if (this.#entries.has(key)) throw new RangeError(`ticket ${key.slice(0, 8)}… already issued`);
    let total = 0;
    let ofPeer = 0;
    for (const entry of this.#entries.values()) {
      if (entry.spent || entry.expiresAt <= now) continue;
      total++;
      if (entry.peer === peer) ofPeer++;
    }
    if (total >= this.#maxTotal || ofPeer >= this.#maxPerPeer) return false;
    this.#entries.set(key, {
      peer,
      hash,
      offset,
      expiresAt: now + this.#lifetimeMs,
      spent: false,
    });
    return true;
  }

  /**
   * Presents `ticket` for the content `hash` from byte `offset` (default 0) at time `now`. A
   * known ticket is spent by any presentation, so a refused one cannot be tried again. Refusals
   * say why: never issued (or long forgotten), expired, already used, issued for other content,
   * or issued for the content from another offset.
   */
  redeem(options: { ticket: Uint8Array; hash: string; offset?: number; now: number }): Redemption {
    const { ticket, hash, now } = options;
    this.#forgetOld(now);
    const entry = ticket.length === TICKET_BYTES ? this.#entries.get(toHex(ticket)) : undefined;
    if (entry === undefined) return { ok: false, reason: "unknown" };
    if (entry.spent) return { ok: false, reason: "used" };
    entry.spent = true;
    if (entry.expiresAt <= now) return { ok: false, reason: "expired" };
    if (entry.hash !== hash) return { ok: false, reason: "wrong-hash" };
    if (entry.offset !== (options.offset ?? 0)) return { ok: false, reason: "wrong-offset" };
    return { ok: true, peer: entry.peer, hash: entry.hash };
  }

  /**
   * Forgets tickets that expired more than one lifetime ago, and the oldest spent or expired
   * ones beyond `4 * maxTotal` remembered, so memory stays bounded however fast tickets turn over.
   */
  #forgetOld(now: number): void {
    let excess = this.#entries.size - 4 * this.#maxTotal;
    for (const [key, entry] of this.#entries) {
      const done = entry.spent || entry.expiresAt <= now;
      if (entry.expiresAt + this.#lifetimeMs <= now || (done && excess > 0)) {
        this.#entries.delete(key);
        excess--;
      }
    }
  }
}

function positive(what: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${what} must be a positive integer, found ${value}`);
  }
  return value;
}
