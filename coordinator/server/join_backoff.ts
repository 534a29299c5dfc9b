/**
 * Join back-off, in epochs: a key the coordinator removed for misbehaving in epoch `e` may
 * not join again until epoch `e + k`. Without it, a key dropped by a health check (or one
 * that took a witness seat and stayed silent) could join the very next epoch and do the
 * same again, every epoch. Pure: the host passes epoch numbers and key strings.
 *
 * Back-offs are forgotten once they expire, so the table holds at most the keys removed in
 * the last `k` epochs (each epoch removes at most its `maxClients` clients).
 *
 * @module
 */

/** Default `k`: a key dropped in epoch e sits out epoch e + 1 and may join from e + 2. */
export const DEFAULT_JOIN_BACKOFF_EPOCHS = 2;

/** Why a key was backed off. */
export type BackoffCause =
  /** A witness's health check showed its payload was not seen by a quorum. */
  | "HealthCheck"
  /** It was elected witness in a round that lacked a witness quorum, and did not report. */
  | "SilentWitness";

/** One key's back-off. */
export interface Backoff {
  /** The epoch in which it was removed. */
  epoch: number;
  /** The first epoch in which it may join again. */
  until: number;
  cause: BackoffCause;
}

/**
 * The refusal a backed-off key gets, naming when it may join again.
 *
 * @example
 * ```ts
 * import { backoffReason } from "./join_backoff.ts";
 * const reason = backoffReason({ epoch: 3, until: 5, cause: "HealthCheck" });
 * if (!reason.endsWith("it may join again from epoch 5")) throw new Error(reason);
 * ```
 */
export function backoffReason(backoff: Backoff): string {
  const what = backoff.cause === "HealthCheck"
    ? "was dropped by a health check"
    : "was elected witness and did not report in a round that lacked a witness quorum";
  return `this key ${what} in epoch ${backoff.epoch}; it may join again from epoch ${backoff.until}`;
}

/** The keys backed off, by key string (hex). */
export class JoinBackoff {
  readonly #epochs: number;
  readonly #entries = new Map<string, Backoff>();

  /** `epochs` is `k` (0 turns back-off off). RangeError unless a whole number >= 0. */
  constructor(epochs: number = DEFAULT_JOIN_BACKOFF_EPOCHS) {
    if (!Number.isSafeInteger(epochs) || epochs < 0) {
      throw new RangeError(`join back-off must be a whole number of epochs >= 0, found ${epochs}`);
    }
    this.#epochs = epochs;
  }

  /** How many keys are backed off now (expired entries are dropped by `check` and `prune`). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Backs `key` off from `epoch`: it may join again from `epoch + k`. A later back-off of
   * the same key replaces an earlier one. Null (nothing recorded) when `k` is 0.
   */
  record(key: string, epoch: number, cause: BackoffCause): Backoff | null {
    if (this.#epochs === 0) return null;
    const backoff = { epoch, until: epoch + this.#epochs, cause };
    const previous = this.#entries.get(key);
    if (previous === undefined || previous.until <= backoff.until) {
      this.#entries.set(key, backoff);
    }
    return this.#entries.get(key) ?? null;
  }

  /** `key`'s back-off if it may not join in `epoch`, else null (and an expired entry goes). */
  check(key: string, epoch: number): Backoff | null {
    const backoff = this.#entries.get(key);
    if (backoff === undefined) return null;
    if (epoch < backoff.until) return backoff;
    this.#entries.delete(key);
    return null;
  }

  /** `key`'s back-off if it may not join in `epoch`, else null; forgets nothing. */
  holds(key: string, epoch: number): Backoff | null {
    const backoff = this.#entries.get(key);
    return backoff !== undefined && epoch < backoff.until ? backoff : null;
  }

  /** The epochs at which the back-offs recorded end. */
  untils(): number[] {
    return [...this.#entries.values()].map((b) => b.until);
  }

  /** Forgets every back-off that no longer applies in `epoch`. */
  prune(epoch: number): void {
    for (const [key, backoff] of this.#entries) {
      if (epoch >= backoff.until) this.#entries.delete(key);
    }
  }
}
