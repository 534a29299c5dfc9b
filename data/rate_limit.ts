/**
 * How many sequences each client of the data server may fetch over time: a token bucket per
 * client key that holds at most `burstSequences` and refills at `sequencesPerSecond`. A client's
 * connections share its bucket, so reconnecting does not refill it.
 *
 * Buckets of clients that went quiet refill to full, which is the same as having none: when more
 * than `maxClients` are kept, full ones are dropped first, then the longest-unused.
 *
 * Pure: the caller passes the time.
 *
 * @example
 * ```ts
 * import { SequenceRateLimiter } from "./rate_limit.ts";
 * const limiter = new SequenceRateLimiter({ sequencesPerSecond: 8, burstSequences: 16 });
 * console.assert(limiter.take("alice", 16, 0).ok);
 * const early = limiter.take("alice", 8, 500); // 4 refilled in 0.5 s
 * console.assert(!early.ok && early.retryInMs === 500);
 * console.assert(limiter.take("alice", 8, 1000).ok);
 * ```
 *
 * @module
 */

/** A rate: the steady refill and the most a client may take at once. */
export interface RateLimit {
  /** Sequences a client's bucket refills per second. */
  readonly sequencesPerSecond: number;
  /** Sequences a full bucket holds: the largest burst (at least the largest request). */
  readonly burstSequences: number;
}

/** The verdict on one request. */
export type RateVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly available: number; readonly retryInMs: number };

/** Default bound on the clients whose buckets are kept. */
export const DEFAULT_MAX_RATE_CLIENTS = 4096;

interface Bucket {
  tokens: number;
  atMs: number;
}

/** Token buckets of sequences, one per client key. */
export class SequenceRateLimiter {
  readonly limit: RateLimit;
  readonly #maxClients: number;
  readonly #buckets = new Map<string, Bucket>();

  /** `RangeError` for a non-positive rate or burst. */
  constructor(limit: RateLimit, options: { maxClients?: number } = {}) {
    const { sequencesPerSecond, burstSequences } = limit;
    if (!(sequencesPerSecond > 0) || !Number.isFinite(sequencesPerSecond)) {
      throw new RangeError(`sequencesPerSecond must be > 0, found ${sequencesPerSecond}`);
    }
    if (!Number.isSafeInteger(burstSequences) || burstSequences < 1) {
      throw new RangeError(`burstSequences must be a positive integer, found ${burstSequences}`);
    }
    this.limit = { sequencesPerSecond, burstSequences };
    this.#maxClients = options.maxClients ?? DEFAULT_MAX_RATE_CLIENTS;
  }

  /**
   * Takes `count` sequences from `client`'s bucket at `nowMs`, or takes nothing and says how
   * many are available and how long until `count` would be (`Infinity` above the burst).
   */
  take(client: string, count: number, nowMs: number): RateVerdict {
    const { sequencesPerSecond, burstSequences } = this.limit;
    const bucket = this.#buckets.get(client) ?? { tokens: burstSequences, atMs: nowMs };
    const tokens = Math.min(
      burstSequences,
      bucket.tokens + Math.max(0, nowMs - bucket.atMs) * sequencesPerSecond / 1000,
    );
    // Re-insert, so the map's order is least recently used first.
    this.#buckets.delete(client);
    if (count > tokens) {
      this.#buckets.set(client, { tokens, atMs: nowMs });
      const retryInMs = count > burstSequences
        ? Infinity
        : Math.ceil((count - tokens) * 1000 / sequencesPerSecond);
      return { ok: false, available: Math.floor(tokens), retryInMs };
    }
    this.#buckets.set(client, { tokens: tokens - count, atMs: nowMs });
    this.#prune(nowMs);
    return { ok: true };
  }

  /** Clients whose buckets are kept (for tests). */
  get clients(): number {
    return this.#buckets.size;
  }

  #prune(nowMs: number): void {
    if (this.#buckets.size <= this.#maxClients) return;
    const { sequencesPerSecond, burstSequences } = this.limit;
    for (const [client, b] of this.#buckets) {
      const full = b.tokens + (nowMs - b.atMs) * sequencesPerSecond / 1000 >= burstSequences;
      if (full) this.#buckets.delete(client);
    }
    for (const client of this.#buckets.keys()) {
      if (this.#buckets.size <= this.#maxClients) break;
      this.#buckets.delete(client);
    }
  }
}
