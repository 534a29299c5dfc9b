/**
 * Caps how many tasks run at once (the payload service's `maxConcurrentDownloads`). Waiters are
 * served first come, first served; a waiter whose signal aborts leaves the queue.
 *
 * @module
 */

/** A counting semaphore with a FIFO queue and a record of the highest concurrency reached. */
export class Limiter {
  readonly #capacity: number;
  #active = 0;
  #peak = 0;
  readonly #waiting: Array<() => void> = [];

  /** `capacity`: how many tasks may run at once (a positive integer). */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, found ${capacity}`);
    }
    this.#capacity = capacity;
  }

  /** Tasks running now. */
  get active(): number {
    return this.#active;
  }

  /** Tasks waiting for a slot. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** The most tasks that ever ran at once. */
  get peak(): number {
    return this.#peak;
  }

  /** Runs `task` once a slot is free; rejects with the signal's reason if aborted while waiting. */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.#acquire(signal);
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  #acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.#active < this.#capacity) {
      this.#take();
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.#waiting.indexOf(grant);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal!.reason);
      };
      const grant = () => {
        signal?.removeEventListener("abort", onAbort);
        this.#take();
        resolve();
      };
      this.#waiting.push(grant);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #take(): void {
    this.#active++;
    this.#peak = Math.max(this.#peak, this.#active);
  }

  #release(): void {
    this.#active--;
    this.#waiting.shift()?.();
  }
}
