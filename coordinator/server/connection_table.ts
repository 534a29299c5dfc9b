/**
 * The coordinator server's open connections, and who may have one. Pure: it holds the
 * server's handles (sockets, in the server) without touching them, and takes time in
 * milliseconds and membership as a predicate, so every rule is tested without sockets.
 *
 * Rules (docs/server.md, "Hostile clients"):
 * - at most `maxPerAddress` connections from one IP address, handshaking ones included;
 * - at most `maxConnections` in all; at the cap, a new connection takes the place of the
 *   quietest connection that is not a member of the run (still handshaking, or
 *   authenticated but neither pending nor a client of the epoch). Members are never
 *   evicted, so idle connections cannot lock a real joiner out;
 * - an authenticated non-member that sent nothing for `idleMs` is closed. A member's idle
 *   clock is kept at zero, so a client that stops being a member gets the whole timeout.
 *
 * @module
 */

/** One open connection. */
export interface ConnectionEntry<T> {
  /** The server's handle (its socket). */
  readonly handle: T;
  /** The peer's IP address (no port). */
  readonly address: string;
  /** The client's key once the handshake bound it, else null. */
  key: Uint8Array | null;
  /** When it last sent a frame (or connected, or was last a member), in ms. */
  lastActiveMs: number;
}

/** Limits of a {@linkcode ConnectionTable}. */
export interface ConnectionLimits {
  /** Most open connections in all (>= 1). */
  maxConnections: number;
  /** Most open connections from one IP address (>= 1). */
  maxPerAddress: number;
}

/** What to do with a new connection. */
export type Admission<T> =
  | { kind: "Admit" }
  /** Admit it once `victim` (removed from the table already) is closed. */
  | { kind: "Evict"; victim: ConnectionEntry<T> }
  | { kind: "Refuse"; reason: string };

/** The open connections, by address, with the cap and eviction rules. */
export class ConnectionTable<T> {
  readonly #limits: ConnectionLimits;
  readonly #entries = new Set<ConnectionEntry<T>>();
  readonly #perAddress = new Map<string, number>();

  /** RangeError unless both limits are whole numbers >= 1. */
  constructor(limits: ConnectionLimits) {
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`${name} must be a whole number >= 1, found ${value}`);
      }
    }
    this.#limits = { ...limits };
  }

  /** Open connections. */
  get size(): number {
    return this.#entries.size;
  }

  /** Every open connection (a copy: the caller may remove while iterating). */
  entries(): ConnectionEntry<T>[] {
    return [...this.#entries];
  }

  /** Open connections from `address`. */
  countFrom(address: string): number {
    return this.#perAddress.get(address) ?? 0;
  }

  /**
   * Whether a new connection from `address` may open. At the global cap the quietest
   * non-member is removed from the table and returned as the victim to close.
   */
  admit(address: string, isMember: (key: Uint8Array) => boolean): Admission<T> {
    const { maxConnections, maxPerAddress } = this.#limits;
    if (this.countFrom(address) >= maxPerAddress) {
      return {
        kind: "Refuse",
        reason: `${address} already has ${maxPerAddress} connections (the most per address)`,
      };
    }
    if (this.#entries.size < maxConnections) return { kind: "Admit" };
    let victim: ConnectionEntry<T> | null = null;
    for (const e of this.#entries) {
      if (e.key !== null && isMember(e.key)) continue;
      if (victim === null || e.lastActiveMs < victim.lastActiveMs) victim = e;
    }
    if (victim === null) {
      return {
        kind: "Refuse",
        reason: `the server already has ${maxConnections} connections, all of members`,
      };
    }
    this.remove(victim);
    return { kind: "Evict", victim };
  }

  /** Records a connection admitted at `nowMs`. */
  add(handle: T, address: string, nowMs: number): ConnectionEntry<T> {
    const entry: ConnectionEntry<T> = { handle, address, key: null, lastActiveMs: nowMs };
    this.#entries.add(entry);
    this.#perAddress.set(address, this.countFrom(address) + 1);
    return entry;
  }

  /** Forgets a connection; false if it was not there (already evicted). */
  remove(entry: ConnectionEntry<T>): boolean {
    if (!this.#entries.delete(entry)) return false;
    const left = this.countFrom(entry.address) - 1;
    if (left > 0) this.#perAddress.set(entry.address, left);
    else this.#perAddress.delete(entry.address);
    return true;
  }

  /**
   * Removes and returns the authenticated non-members quiet for `idleMs` or more at
   * `nowMs`. Members' clocks are reset; handshaking connections are left to the
   * handshake timeout.
   */
  takeIdle(nowMs: number, idleMs: number, isMember: (key: Uint8Array) => boolean) {
    const idle: ConnectionEntry<T>[] = [];
    for (const e of this.#entries) {
      if (e.key === null) continue;
      if (isMember(e.key)) {
        e.lastActiveMs = nowMs;
      } else if (nowMs - e.lastActiveMs >= idleMs) {
        idle.push(e);
      }
    }
    for (const e of idle) this.remove(e);
    return idle;
  }
}
