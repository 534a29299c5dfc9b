/**
 * Which announcement pulls may start: at most `maxAttempts` per peer and step, `spacingMs`
 * apart, one at a time. A pull costs a stream and a few hundred bytes, but the triggers fire
 * on every tick and every Finished, and a peer that is gone must not be asked forever.
 *
 * Pure: the caller passes the time.
 *
 * @module
 */

/** Default most pulls of one step from one peer. */
export const DEFAULT_PULL_ATTEMPTS = 3;
/** Default milliseconds between two pulls of one step from one peer. */
export const DEFAULT_PULL_SPACING_MS = 1_500;

interface Attempts {
  count: number;
  lastMs: number;
  inFlight: boolean;
  /** Whether the last pull that ended failed (unreachable, a connection closed under it). */
  failed: boolean;
}

/** Pull attempts per (peer, step). */
export class PullLedger {
  readonly #attempts = new Map<number, Map<string, Attempts>>();
  readonly #maxAttempts: number;
  readonly #spacingMs: number;

  constructor(options: { maxAttempts?: number; spacingMs?: number } = {}) {
    this.#maxAttempts = options.maxAttempts ?? DEFAULT_PULL_ATTEMPTS;
    this.#spacingMs = options.spacingMs ?? DEFAULT_PULL_SPACING_MS;
  }

  /**
   * Starts a pull of `step` from `peer` (any stable key) at `nowMs` when allowed, and says
   * whether it did. Call {@link end} when it settles.
   */
  begin(peer: string, step: number, nowMs: number): boolean {
    let byPeer = this.#attempts.get(step);
    if (byPeer === undefined) this.#attempts.set(step, byPeer = new Map());
    const seen = byPeer.get(peer);
    if (seen === undefined) {
      byPeer.set(peer, { count: 1, lastMs: nowMs, inFlight: true, failed: false });
      return true;
    }
    if (seen.inFlight || seen.count >= this.#maxAttempts) return false;
    if (nowMs - seen.lastMs < this.#spacingMs) return false;
    seen.count++;
    seen.lastMs = nowMs;
    seen.inFlight = true;
    return true;
  }

  /**
   * Whether pulling `step` from `peer` is not over: a pull is under way, or the last one failed
   * and another is allowed.
   */
  pending(peer: string, step: number): boolean {
    return this.#attempts.get(step)?.get(peer)?.inFlight === true ||
      this.retryAt(peer, step) !== null;
  }

  /**
   * When the next pull of `step` from `peer` may start after the last one failed, or null when
   * none failed last, one is under way, or no attempt is left.
   */
  retryAt(peer: string, step: number): number | null {
    const seen = this.#attempts.get(step)?.get(peer);
    if (seen === undefined || seen.inFlight || !seen.failed) return null;
    return seen.count < this.#maxAttempts ? seen.lastMs + this.#spacingMs : null;
  }

  /** Marks the pull of `step` from `peer` settled, `failed` or not. */
  end(peer: string, step: number, failed = false): void {
    const seen = this.#attempts.get(step)?.get(peer);
    if (seen === undefined) return;
    seen.inFlight = false;
    seen.failed = failed;
  }

  /** Forgets the steps below `step`. */
  forgetBefore(step: number): void {
    for (const s of this.#attempts.keys()) if (s < step) this.#attempts.delete(s);
  }
}
