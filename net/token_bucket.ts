/**
 * A token bucket: a budget that refills at a steady rate up to a burst, spent by what a
 * connection does (one token per message, or one per byte). Pure: time is passed in, in
 * milliseconds, so tests step it by hand.
 *
 * A cost the bucket cannot cover is still taken, leaving a debt; {@linkcode TokenBucket.take}
 * says how long the debt takes to repay. The server stops reading that connection for that
 * long: its frames wait in the kernel's buffers and TCP flow control slows the sender, so a
 * flood costs the server nothing beyond the rate it allows.
 *
 * @module
 */

/** Rate and burst of a {@linkcode TokenBucket}. */
export interface TokenBucketOptions {
  /** Tokens added per second (> 0). */
  ratePerSecond: number;
  /** Most tokens the bucket holds, and what it starts with (> 0). */
  burst: number;
}

/** A token bucket on an injected millisecond clock. */
export class TokenBucket {
  readonly #ratePerMs: number;
  readonly #burst: number;
  #tokens: number;
  #atMs: number;

  /** A full bucket at time `nowMs`. RangeError on a rate or burst that is not > 0. */
  constructor(options: TokenBucketOptions, nowMs: number) {
    const { ratePerSecond, burst } = options;
    if (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond)) {
      throw new RangeError(`ratePerSecond must be a finite number > 0, found ${ratePerSecond}`);
    }
    if (!(burst > 0) || !Number.isFinite(burst)) {
      throw new RangeError(`burst must be a finite number > 0, found ${burst}`);
    }
    this.#ratePerMs = ratePerSecond / 1000;
    this.#burst = burst;
    this.#tokens = burst;
    this.#atMs = nowMs;
  }

  /** Tokens available at `nowMs` (negative while in debt). */
  available(nowMs: number): number {
    this.#refill(nowMs);
    return this.#tokens;
  }

  /**
   * Spends `cost` tokens at `nowMs`. Returns 0 when the bucket covered it, else the
   * milliseconds until the debt is repaid (the caller waits that long before more).
   *
   * @example
   * ```ts
   * import { TokenBucket } from "./token_bucket.ts";
   * const bucket = new TokenBucket({ ratePerSecond: 10, burst: 2 }, 0);
   * if (bucket.take(1, 0) !== 0 || bucket.take(1, 0) !== 0) throw new Error("burst of 2");
   * if (bucket.take(1, 0) !== 100) throw new Error("the third waits 1/10 s");
   * ```
   */
  take(cost: number, nowMs: number): number {
    this.#refill(nowMs);
    this.#tokens -= cost;
    return this.#tokens >= 0 ? 0 : Math.ceil(-this.#tokens / this.#ratePerMs);
  }

  #refill(nowMs: number): void {
    const elapsed = Math.max(0, nowMs - this.#atMs);
    this.#atMs = Math.max(this.#atMs, nowMs);
    this.#tokens = Math.min(this.#burst, this.#tokens + elapsed * this.#ratePerMs);
  }
}
