/**
 * How many witnesses a round expects, how many form a quorum, and how clients pick the commitment a
 * quorum of witnesses vouched for (Psyche's `witness_quorum` and
 * `select_consensus_commitment_by_witnesses`, shared/coordinator/src/coordinator.rs).
 *
 * Deliberate change from Psyche (§10.1 quirk 9): with `witnessNodes = 0` Psyche takes the
 * quorum of the witnesses that actually reported, so a round never lacks a quorum unless
 * nobody reported. Here the quorum is always of the witnesses the round *expects*
 * (`witnessNodes`, or `min(clientsLen, MAX_WITNESSES)` when it is 0), the same rule as
 * with an explicit `witnessNodes`. A round where too few witnesses report ends the epoch.
 *
 * @module
 */

import { bloomContains } from "./bloom.ts";
import { type CoordinatorConfig, MAX_WITNESSES, type Round, type Witness } from "./types.ts";

/**
 * Witnesses a round of `clientsLen` clients expects: `witnessNodes`, or
 * `min(clientsLen, MAX_WITNESSES)` when `witnessNodes` is 0.
 */
export function expectedWitnesses(config: CoordinatorConfig, clientsLen: number): number {
  return config.witnessNodes > 0 ? config.witnessNodes : Math.min(clientsLen, MAX_WITNESSES);
}

/**
 * The quorum of `expected` witnesses: 1 → 1, 2 → 2, 3 → 2, `W >= 4` → `floor(2W/3)`
 * (never below 1, so an empty round has no quorum).
 *
 * @example
 * ```ts
 * import { witnessQuorum } from "./witness_quorum.ts";
 * if (witnessQuorum(32) !== 21) throw new Error("2/3 of 32, rounded down");
 * ```
 */
export function witnessQuorum(expected: number): number {
  if (!Number.isSafeInteger(expected) || expected < 0) {
    throw new RangeError(`Witness count must be a non-negative integer, found ${expected}`);
  }
  switch (expected) {
    case 1:
      return 1;
    case 2:
      return 2;
    case 3:
      return 2;
    default:
      return Math.max(1, Math.floor((expected * 2) / 3));
  }
}

/** The quorum of `round`: {@linkcode witnessQuorum} of its expected witnesses. */
export function roundWitnessQuorum(config: CoordinatorConfig, round: Round): number {
  return witnessQuorum(expectedWitnesses(config, round.clientsLen));
}

/**
 * The index of the commitment a quorum of `witnesses` received, or null if none did.
 *
 * Each witness votes once, for the **first** of `commitmentHashes` its broadcast bloom
 * contains (Psyche's rule). The commitment with the most votes wins if it has at least
 * `quorum`; on a tie the lowest index wins, so every client picks the same one.
 *
 * @example
 * ```ts
 * import { selectConsensusCommitmentByWitnesses } from "./witness_quorum.ts";
 * if (selectConsensusCommitmentByWitnesses([new Uint8Array(32)], [], 1) !== null) {
 *   throw new Error("no witnesses, no consensus");
 * }
 * ```
 */
export function selectConsensusCommitmentByWitnesses(
  commitmentHashes: readonly Uint8Array[],
  witnesses: readonly Witness[],
  quorum: number,
): number | null {
  const votes = new Array<number>(commitmentHashes.length).fill(0);
  for (const witness of witnesses) {
    for (let i = 0; i < commitmentHashes.length; i++) {
      if (bloomContains(witness.broadcastBloom, commitmentHashes[i])) {
        votes[i]++;
        break;
      }
    }
  }
  let best = -1;
  for (let i = 0; i < votes.length; i++) {
    if (votes[i] >= quorum && (best < 0 || votes[i] > votes[best])) best = i;
  }
  return best < 0 ? null : best;
}
