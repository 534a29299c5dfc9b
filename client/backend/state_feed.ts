/**
 * The `states()` half of a backend: holds the newest coordinator state and lets any
 * number of iterators follow it, latest wins. Shared by every backend so they all behave
 * the same way: the newest state first, then each newer one; iterators end when the feed
 * closes or their signal aborts, and throw the feed's failure if it failed.
 *
 * @module
 */
import type { CoordinatorState } from "../../coordinator/core/mod.ts";

/** Latest-wins fan-out of coordinator states. */
export class StateFeed {
  #latest: CoordinatorState | null = null;
  #wake = new Set<() => void>();
  #closed = false;
  #failure: Error | null = null;

  /** The newest state, or null before the first. */
  latest(): CoordinatorState | null {
    return this.#latest;
  }

  /** The failure the feed ended with, or null. */
  get failure(): Error | null {
    return this.#failure;
  }

  /** Publishes a new state (a fresh object: iterators tell states apart by identity). */
  publish(state: CoordinatorState): void {
    if (this.#closed || this.#failure !== null) return;
    this.#latest = state;
    this.#notify();
  }

  /** Ends every iterator (normally). */
  close(): void {
    this.#closed = true;
    this.#notify();
  }

  /** Ends every iterator by throwing `error` (first failure wins). */
  fail(error: Error): void {
    this.#failure ??= error;
    this.#notify();
  }

  /** Follows the feed: the newest state first, then every newer one. */
  async *follow(signal?: AbortSignal): AsyncIterable<CoordinatorState> {
    let last: CoordinatorState | null = null;
    for (;;) {
      if (this.#failure !== null) throw this.#failure;
      if (this.#closed || signal?.aborted) return;
      const current = this.#latest;
      if (current !== null && current !== last) {
        last = current;
        yield current;
        continue;
      }
      await this.#changed(signal);
    }
  }

  #changed(signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#wake.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      this.#wake.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  #notify(): void {
    for (const wake of [...this.#wake]) wake();
  }
}
