/**
 * How many payload bytes each peer made this node download in each round, so one peer cannot
 * make it download without end: every attempt at a provider charges the length it declared
 * to that provider's budget for the round before a content byte is read, and a provider whose
 * budget cannot cover the next payload is not asked again that round.
 *
 * Charges are kept per round (a training step) and dropped with `forgetBefore`, so memory
 * stays bounded by the peers of the last few rounds.
 *
 * Pure: no clock, no I/O.
 *
 * @example
 * ```ts
 * import { RoundByteBudget } from "./byte_budget.ts";
 * const budget = new RoundByteBudget();
 * console.assert(budget.charge("peer", { round: 7, bytes: 600, limit: 1000 }));
 * console.assert(!budget.charge("peer", { round: 7, bytes: 600, limit: 1000 })); // over
 * console.assert(budget.charge("peer", { round: 8, bytes: 600, limit: 1000 })); // next round
 * ```
 *
 * @module
 */

/** One charge: `bytes` against `round`'s `limit`. */
export interface ByteCharge {
  /** The round (training step) the bytes count against. */
  readonly round: number;
  /** Bytes about to be downloaded. */
  readonly bytes: number;
  /** Most bytes one peer may make us download in this round. */
  readonly limit: number;
}

/** Bytes charged per peer per round. */
export class RoundByteBudget {
  /** round -> peer -> bytes charged. */
  readonly #spent = new Map<number, Map<string, number>>();

  /** Bytes charged to `peer` in `round` so far. */
  spent(peer: string, round: number): number {
    return this.#spent.get(round)?.get(peer) ?? 0;
  }

  /**
   * Charges `bytes` to `peer` in `round` and returns true, unless that would take it past
   * `limit`: then nothing is charged and it returns false. `RangeError` for a negative or
   * fractional amount.
   */
  charge(peer: string, { round, bytes, limit }: ByteCharge): boolean {
    for (const [what, value] of [["round", round], ["bytes", bytes], ["limit", limit]] as const) {
      if (!Number.isSafeInteger(value) || value < 0) {
        throw new RangeError(`${what} must be a non-negative integer, found ${value}`);
      }
    }
    const spent = this.spent(peer, round);
    if (spent + bytes > limit) return false;
    let peers = this.#spent.get(round);
    if (peers === undefined) this.#spent.set(round, peers = new Map());
    peers.set(peer, spent + bytes);
    return true;
  }

  /** Forgets the charges of rounds below `round`. */
  forgetBefore(round: number): void {
    for (const r of this.#spent.keys()) if (r < round) this.#spent.delete(r);
  }
}
