/**
 * Announcements that arrived before this client reached their step (a peer is ahead of the
 * coordinator state this client has seen): kept by step, bounded, and handed back once the
 * step is live. Gossip delivers a message once (resends are deduplicated), so dropping an
 * early one would lose it for good.
 *
 * Pure.
 *
 * @module
 */

/** Default bound on kept items, across steps. */
export const DEFAULT_EARLY_CAPACITY = 1024;

/** A bounded, step-keyed holding area. */
export class EarlyBuffer<T> {
  readonly #capacity: number;
  readonly #byStep = new Map<number, T[]>();
  #size = 0;

  constructor(capacity = DEFAULT_EARLY_CAPACITY) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, found ${capacity}`);
    }
    this.#capacity = capacity;
  }

  /** Items held, across steps. */
  get size(): number {
    return this.#size;
  }

  /** Keeps `item` for `step`; false (nothing kept) when the buffer is full. */
  keep(step: number, item: T): boolean {
    if (this.#size >= this.#capacity) return false;
    const list = this.#byStep.get(step) ?? [];
    list.push(item);
    this.#byStep.set(step, list);
    this.#size++;
    return true;
  }

  /** Removes and returns the items kept for `step`, in arrival order. */
  take(step: number): T[] {
    const list = this.#byStep.get(step) ?? [];
    this.#byStep.delete(step);
    this.#size -= list.length;
    return list;
  }

  /** Forgets every item for steps below `step`. */
  dropBefore(step: number): void {
    for (const s of [...this.#byStep.keys()]) if (s < step) this.take(s);
  }
}
