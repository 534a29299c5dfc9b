/**
 * A set that remembers only its most recent `capacity` keys, for deduplicating a stream of
 * messages in bounded memory. Pure.
 *
 * @module
 */

/** Insertion-ordered set that evicts its oldest key once it holds `capacity` keys. */
export class RecentSet {
  readonly #keys = new Set<string>();
  readonly #capacity: number;

  /** `capacity`: how many keys to remember (a positive integer). */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, found ${capacity}`);
    }
    this.#capacity = capacity;
  }

  /** Adds `key`; returns false if it was already present (then nothing changes). */
  add(key: string): boolean {
    if (this.#keys.has(key)) return false;
    if (this.#keys.size >= this.#capacity) {
      const oldest = this.#keys.values().next().value as string;
      this.#keys.delete(oldest);
    }
    this.#keys.add(key);
    return true;
  }

  /** Whether `key` is remembered. */
  has(key: string): boolean {
    return this.#keys.has(key);
  }

  /** Number of keys remembered. */
  get size(): number {
    return this.#keys.size;
  }
}
