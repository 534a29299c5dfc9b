/**
 * Which of our own announcements to send again, and when to forget them.
 *
 * Gossip does not guarantee delivery, so Psyche re-sends one of its broadcasts from the last two
 * steps every 10 s, round-robin, with a fresh nonce so the network treats it as a new message.
 * `RebroadcastQueue` is that choice as a pure data structure; the caller owns the timer.
 *
 * @module
 */
import type { RoundAnnouncement } from "./announcement.ts";

/** How many steps back our announcements stay eligible for a resend (Psyche: 2). */
export const DEFAULT_REBROADCAST_STEPS = 2;

/** Our recent announcements, resent round-robin. */
export class RebroadcastQueue {
  #entries: RoundAnnouncement[] = [];
  #cursor = 0;
  readonly #keepSteps: number;

  /** `keepSteps`: announcements for steps `> currentStep - keepSteps` stay eligible. */
  constructor(keepSteps = DEFAULT_REBROADCAST_STEPS) {
    if (!Number.isInteger(keepSteps) || keepSteps < 1) {
      throw new RangeError(`keepSteps must be a positive integer, found ${keepSteps}`);
    }
    this.#keepSteps = keepSteps;
  }

  /** Remembers an announcement we sent. */
  record(message: RoundAnnouncement): void {
    this.#entries.push(message);
  }

  /** Number of announcements currently remembered. */
  get size(): number {
    return this.#entries.length;
  }

  /**
   * Drops announcements too old for `currentStep` and returns the next one to resend
   * (round-robin), or `undefined` when none is eligible.
   */
  next(currentStep: number): RoundAnnouncement | undefined {
    const oldest = currentStep - this.#keepSteps;
    const kept = this.#entries.filter((entry) => entry.step > oldest);
    if (kept.length !== this.#entries.length) {
      // Keep the cursor on the same logical position among the survivors.
      const removedBefore = this.#entries.slice(0, this.#cursor).filter((e) => e.step <= oldest);
      this.#cursor -= removedBefore.length;
      this.#entries = kept;
    }
    if (this.#entries.length === 0) return undefined;
    if (this.#cursor >= this.#entries.length) this.#cursor = 0;
    const chosen = this.#entries[this.#cursor];
    this.#cursor = (this.#cursor + 1) % this.#entries.length;
    return chosen;
  }
}
