/**
 * The signed round announcements a node delivered or sent, by step, kept so that a peer which
 * lost some on the way can pull them (`announcement_sync.ts`). Gossip delivers each announcement
 * once, so without this a lost copy is lost for good.
 *
 * Bounded per sender: an allowed peer that floods the topic with distinct announcements fills
 * only its own share, never another sender's.
 *
 * Pure.
 *
 * @module
 */

/** Default most envelopes kept per sender (a result and a Finished per step, 32 steps). */
export const DEFAULT_PER_SENDER = 64;

interface Entry {
  readonly sender: string;
  readonly envelope: Uint8Array;
}

/** Envelopes by step, at most `perSender` per sender across all steps. */
export class AnnouncementArchive {
  readonly #bySteps = new Map<number, Entry[]>();
  readonly #perSender = new Map<string, number>();
  readonly #limit: number;
  #refused = 0;

  /** `perSender`: most envelopes kept from one sender (a positive integer). */
  constructor(perSender = DEFAULT_PER_SENDER) {
    if (!Number.isInteger(perSender) || perSender < 1) {
      throw new RangeError(`perSender must be a positive integer, found ${perSender}`);
    }
    this.#limit = perSender;
  }

  /**
   * Keeps `envelope` (not copied: do not change it) of `sender` (any stable key, e.g. hex) for
   * `step`. Returns false, keeping nothing, once the sender has its share.
   */
  record(sender: string, step: number, envelope: Uint8Array): boolean {
    const held = this.#perSender.get(sender) ?? 0;
    if (held >= this.#limit) {
      this.#refused++;
      return false;
    }
    this.#perSender.set(sender, held + 1);
    const entries = this.#bySteps.get(step);
    if (entries === undefined) this.#bySteps.set(step, [{ sender, envelope }]);
    else entries.push({ sender, envelope });
    return true;
  }

  /** Every envelope kept for `step`, in the order recorded. */
  envelopes(step: number): Uint8Array[] {
    return (this.#bySteps.get(step) ?? []).map((e) => e.envelope);
  }

  /** Forgets the steps below `step`, giving their senders their share back. */
  forgetBefore(step: number): void {
    for (const [s, entries] of this.#bySteps) {
      if (s >= step) continue;
      for (const { sender } of entries) {
        const left = (this.#perSender.get(sender) ?? 1) - 1;
        if (left > 0) this.#perSender.set(sender, left);
        else this.#perSender.delete(sender);
      }
      this.#bySteps.delete(s);
    }
  }

  /** Envelopes kept now. */
  get size(): number {
    let n = 0;
    for (const entries of this.#bySteps.values()) n += entries.length;
    return n;
  }

  /** Envelopes refused so far because their sender had its share. */
  get refused(): number {
    return this.#refused;
  }
}
