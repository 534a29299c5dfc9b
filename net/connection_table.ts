/**
 * The coordinator server's open connections, and who may have one. Pure: it holds the
 * server's handles (sockets, in the server) without touching them, and takes time in
 * milliseconds and membership as a predicate, so every rule is tested without sockets.
 *
 * Rules (docs/server.md, "Hostile clients"):
 * - at most `maxPerAddress` connections from one IP address, handshaking ones included,
 *   and new connections from it at `connectsPerSecond` on average (bursts of
 *   `maxPerAddress`), so an address cannot make the server verify a handshake per
 *   connection as fast as it can reconnect. IPv6 addresses count per /64 prefix (what one
 *   host is usually given), IPv4-mapped ones as their IPv4 address;
 * - at most `maxConnections` in all; at the cap, a new connection takes the place of the
 *   quietest connection that is not a member of the run (still handshaking, or
 *   authenticated but neither pending nor a client of the epoch). Members are never
 *   evicted, so idle connections cannot lock a real joiner out;
 * - an authenticated non-member that sent nothing for `idleMs` is closed. A member's idle
 *   clock is kept at zero, so a client that stops being a member gets the whole timeout.
 *
 * @module
 */

import { TokenBucket } from "./token_bucket.ts";

/**
 * The address connection limits apply to: an IPv4 address as is (also when IPv4-mapped),
 * an IPv6 address as its /64 prefix.
 *
 * @example
 * ```ts
 * import { addressKey } from "./connection_table.ts";
 * if (addressKey("2001:db8::7") !== "2001:db8:0:0::/64") throw new Error("a /64");
 * if (addressKey("::ffff:10.0.0.1") !== "10.0.0.1") throw new Error("IPv4-mapped");
 * ```
 */
export function addressKey(hostname: string): string {
  const host = hostname.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!host.includes(":")) return host;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(host);
  if (mapped !== null) return mapped[1];
  const [head, tail] = host.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined
    ? left
    : [...left, ...new Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  const prefix = groups.slice(0, 4).map((g) => (parseInt(g, 16) || 0).toString(16));
  return `${prefix.join(":")}::/64`;
}

/** One open connection. */
export interface ConnectionEntry<T> {
  /** The server's handle (its socket). */
  readonly handle: T;
  /** The peer's IP address (no port). */
  readonly address: string;
  /** The client's key (hex) once the handshake bound it, else null. */
  key: string | null;
  /** When it last sent a frame (or connected, or was last a member), in ms. */
  lastActiveMs: number;
}

/** Limits of a {@linkcode ConnectionTable}. */
export interface ConnectionLimits {
  /** Most open connections in all (>= 1). */
  maxConnections: number;
  /** Most open connections from one IP address (>= 1). */
  maxPerAddress: number;
  /** New connections per second from one address, on average (default maxPerAddress / 10). */
  connectsPerSecond?: number;
}

/** What to do with a new connection. */
export type Admission<T> =
  | { kind: "Admit" }
  /** Admit it once `victim` (removed from the table already) is closed. */
  | { kind: "Evict"; victim: ConnectionEntry<T> }
  | { kind: "Refuse"; reason: string };

/** The open connections, by address, with the cap and eviction rules. */
export class ConnectionTable<T> {
  readonly #limits: Required<ConnectionLimits>;
  readonly #entries = new Set<ConnectionEntry<T>>();
  readonly #perAddress = new Map<string, number>();
  /** Each address's budget of new connections (dropped once full and unused). */
  readonly #connects = new Map<string, TokenBucket>();

  /** RangeError unless both caps are whole numbers >= 1 and the rate is > 0. */
  constructor(limits: ConnectionLimits) {
    for (const name of ["maxConnections", "maxPerAddress"] as const) {
      const value = limits[name];
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`${name} must be a whole number >= 1, found ${value}`);
      }
    }
    const connectsPerSecond = limits.connectsPerSecond ?? limits.maxPerAddress / 10;
    if (!(connectsPerSecond > 0) || !Number.isFinite(connectsPerSecond)) {
      throw new RangeError(`connectsPerSecond must be > 0, found ${connectsPerSecond}`);
    }
    this.#limits = { ...limits, connectsPerSecond };
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
   * Whether a new connection from `address` (an {@linkcode addressKey}) may open at
   * `nowMs`. At the global cap the quietest non-member is removed from the table and
   * returned as the victim to close.
   */
  admit(address: string, nowMs: number, isMember: (key: string) => boolean): Admission<T> {
    const { maxConnections, maxPerAddress, connectsPerSecond } = this.#limits;
    if (this.countFrom(address) >= maxPerAddress) {
      return {
        kind: "Refuse",
        reason: `${address} already has ${maxPerAddress} connections (the most per address)`,
      };
    }
    let connects = this.#connects.get(address);
    if (connects === undefined) {
      connects = new TokenBucket({ ratePerSecond: connectsPerSecond, burst: maxPerAddress }, nowMs);
      this.#connects.set(address, connects);
    }
    if (connects.available(nowMs) < 1) {
      return {
        kind: "Refuse",
        reason: `${address} opens connections too fast (at most ${connectsPerSecond} a second)`,
      };
    }
    connects.take(1, nowMs);
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
  takeIdle(nowMs: number, idleMs: number, isMember: (key: string) => boolean) {
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
    // Forget the connection budgets of addresses that are gone and whose budget is full.
    const { maxPerAddress } = this.#limits;
    for (const [address, bucket] of this.#connects) {
      if (!this.#perAddress.has(address) && bucket.available(nowMs) >= maxPerAddress) {
        this.#connects.delete(address);
      }
    }
    return idle;
  }

  /** Addresses whose connection budget is still remembered (for tests). */
  get trackedAddresses(): number {
    return this.#connects.size;
  }
}
