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
      byPeer.set(peer, { count: 1, lastMs: nowMs, inFlight: true });
      return true;
    }
    if (seen.inFlight || seen.count >= this.#maxAttempts) return false;
    if (nowMs - seen.lastMs < this.#spacingMs) return false;
    seen.count++;
    seen.lastMs = nowMs;
    seen.inFlight = true;
    return true;
  }

  /** Whether a pull of `step` from `peer` is under way. */
  inFlight(peer: string, step: number): boolean {
    return this.#attempts.get(step)?.get(peer)?.inFlight ?? false;
  }

  /** Marks the pull of `step` from `peer` settled. */
  end(peer: string, step: number): void {
    const seen = this.#attempts.get(step)?.get(peer);
    if (seen !== undefined) seen.inFlight = false;
  }

  /** Forgets the steps below `step`. */
  forgetBefore(step: number): void {
    for (const s of this.#attempts.keys()) if (s < step) this.#attempts.delete(s);
  }
}
