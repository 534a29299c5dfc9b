/**
 * Attacks a client can be told to commit (`PSYCHE_FAULT_ATTACK`), so tests and benchmarks watch
 * verification catch them (docs/protocol.md, "Threat model"). Each is what a dishonest member
 * could do with well-formed messages; none breaks a signature, a commitment or the wire format.
 *
 * - `negate`: folds the negated gradient into its state (a self-consistent chain of lies);
 * - `scale`: folds ten times its gradient;
 * - `random-signs`: publishes its coefficients with random signs;
 * - `replay-old`: publishes the coefficients of its result of an earlier round again;
 * - `other-data`: trains on other sequences than its assignment (a data-poisoning stand-in): the
 *   ones it was assigned before, which a data server still serves it;
 * - `free-ride`: trains nothing and republishes another member's result of the round as its own;
 * - `false-accuse`: as a verifier, reports every result it is seated for as failed, unchecked;
 * - `idle-verifier`: as a verifier, never reports;
 * - `idle-witness`: as an elected witness, never reports.
 *
 * The pure transformations of published results live here; the client applies them where it
 * trains, publishes and verifies.
 *
 * @module
 */
import type { BatchId } from "../common/mod.ts";
import type { DistroResult, SparseParam } from "../optimizer/mod.ts";

/** The attacks on a trainer's result: what it trains or what it publishes. */
export const RESULT_ATTACKS = [
  "negate",
  "scale",
  "random-signs",
  "replay-old",
  "other-data",
  "free-ride",
] as const;

/** Every attack, by its `PSYCHE_FAULT_ATTACK` name: the result attacks, then the duties'. */
export const ATTACKS = [
  ...RESULT_ATTACKS,
  "false-accuse",
  "idle-verifier",
  "idle-witness",
] as const;
/** One of {@link ATTACKS}. */
export type Attack = typeof ATTACKS[number];

/** Parses a `PSYCHE_FAULT_ATTACK` value: TypeError naming the choices for anything else. */
export function parseAttack(value: string): Attack {
  if (!(ATTACKS as readonly string[]).includes(value)) {
    throw new TypeError(
      `PSYCHE_FAULT_ATTACK must be one of ${ATTACKS.join(", ")}, found ${JSON.stringify(value)}`,
    );
  }
  return value as Attack;
}

/** The factor a trainer folds its gradient into δ with: −1 negates, 10 scales, else 1. */
export function gradientFactor(attack: Attack | null): number {
  return attack === "negate" ? -1 : attack === "scale" ? 10 : 1;
}

/**
 * The sequences an `other-data` attacker trains on instead of `batch`: its previous batch (a run's
 * data server serves a client its assignment of the round before too), or `batch` itself in its
 * first round, which it trains honestly.
 */
export function otherBatch(batch: BatchId, previous: BatchId | null): BatchId {
  return previous ?? batch;
}

/** `params` with every sign drawn from `randomBit` (true: negative). */
export function randomSigns(params: readonly SparseParam[], randomBit: () => boolean) {
  return params.map((p) => ({
    indices: p.indices.slice(),
    values: Float32Array.from(p.values, () => (randomBit() ? -1 : 1)),
  }));
}

/**
 * The result a `replay-old` or `free-ride` attacker publishes: `source`'s coefficients under its
 * own step, batch, nonce and state digests.
 */
export function republish(own: DistroResult, source: readonly SparseParam[]): DistroResult {
  return {
    ...own,
    params: source.map((p) => ({ indices: p.indices.slice(), values: p.values.slice() })),
  };
}
