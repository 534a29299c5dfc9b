/**
 * What a client knows about its own parameters, step by step, and whether they still are the
 * run's: the digest it computed at each labelled point (the model it loaded, after each
 * apply), compared with the digests the coordinator recorded (coordinator/core/params_digest.ts).
 *
 * Labels follow the coordinator's: "the parameters of step n" are those the round of step n
 * trains on, i.e. after the apply of step n − 2's results, or the parameters an epoch starting
 * at step n loads. A client knows them exactly at those points; training (weight decay) moves
 * θ away from the label until the next apply.
 *
 * Pure: no I/O.
 *
 * @module
 */
import { toHex } from "../common/mod.ts";
import type { DigestRecord } from "../coordinator/core/mod.ts";

/** Own digests kept (the coordinator keeps NUM_DIGEST_RECORDS; a margin for late records). */
export const LEDGER_STEPS = 32;

/** Why a client stopped contributing. */
export interface Divergence {
  /** The step whose parameters differ (or whose results this client could not apply). */
  readonly step: number;
  /** This client's digest of that step, hex (null when it could not apply). */
  readonly digest: string | null;
  /** The digest the run recorded, hex (null when the run has none yet). */
  readonly consensus: string | null;
  /** What was found, for a person. */
  readonly reason: string;
}

/** A client's record of its own parameters. */
export class ModelLedger {
  readonly #own = new Map<number, string>();
  /** The step whose parameters θ holds exactly now, or null once θ moved past it. */
  #current: number | null = null;
  #divergence: Divergence | null = null;

  /** The divergence found, if any (cleared by {@link ModelLedger.reset}). */
  get divergence(): Divergence | null {
    return this.#divergence;
  }

  /** The step whose parameters θ holds exactly now, or null. */
  get currentStep(): number | null {
    return this.#current;
  }

  /** This client's digest (hex) of the parameters of `step`, if it computed one. */
  digest(step: number): string | null {
    return this.#own.get(step) ?? null;
  }

  /** θ now holds the parameters of `step`, whose digest is `digest` (hex). */
  note(step: number, digest: string): void {
    this.#own.set(step, digest);
    this.#current = step;
    for (const s of this.#own.keys()) if (s <= step - LEDGER_STEPS) this.#own.delete(s);
  }

  /** θ changed without reaching a labelled point (weight decay of a training step). */
  moved(): void {
    this.#current = null;
  }

  /**
   * The first recorded step whose digest differs from this client's, as a divergence (it is
   * also kept), or null. Steps this client has no digest for are skipped: it was not there.
   */
  check(records: readonly DigestRecord[]): Divergence | null {
    if (this.#divergence !== null) return this.#divergence;
    for (const record of records) {
      const own = this.#own.get(record.step);
      const consensus = toHex(record.digest);
      if (own === undefined || own === consensus) continue;
      return this.diverge({
        step: record.step,
        digest: own,
        consensus,
        reason: "its parameters differ from the digest a quorum reported",
      });
    }
    return null;
  }

  /** Marks the parameters as no longer the run's (kept until {@link ModelLedger.reset}). */
  diverge(divergence: Divergence): Divergence {
    this.#divergence ??= divergence;
    return this.#divergence;
  }

  /** Forgets everything: the parameters are about to be replaced. */
  reset(): void {
    this.#own.clear();
    this.#current = null;
    this.#divergence = null;
  }
}
