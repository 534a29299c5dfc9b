/**
 * How many batches of a round went untrained, as the coordinator can tell: a round's results
 * are attested by the next round's witnesses, and a batch whose trainer is not in a quorum of
 * their participant blooms (`sha256(signer)`: the witness verified a payload from it) has no
 * result a client may apply. The same test as `trainerHealthy` and the client's
 * `attestedButMissing`, applied to the witness round being judged.
 *
 * The coordinator knows who was seen, not which commitment each witness voted for, so this
 * is the count a run summary can check the clients' own (`apply.untrained_batches`, by
 * commitment) against; an honest run gives the same number.
 *
 * Pure.
 *
 * @module
 */

import { bloomContains } from "./bloom.ts";
import { sha256 } from "./hash.ts";
import {
  isTrainingRound,
  roundAssignments,
  roundByHeight,
  roundClients,
} from "./machine_queries.ts";
import type { CoordinatorState, Round } from "./types.ts";
import { roundWitnessQuorum } from "./witness_quorum.ts";

/** The batches of the round a witness round attested. */
export interface UntrainedCount {
  /** Height of the attested round (the witness round's height − 1); null for round 0. */
  readonly attestedHeight: number | null;
  /** Batches assigned in the attested round (0 when it did not train). */
  readonly batches: number;
  /** Of those, batches whose trainer a quorum of the witness round's witnesses did not see. */
  readonly untrained: number;
}

/**
 * Counts the untrained batches of the round `witnessRound` attests (this epoch's round
 * `witnessRound.height - 1`), judged by `witnessRound`'s witnesses against its quorum.
 * Round 0 attests nothing; an apply-only round (after the epoch timer) assigned no training.
 * Call it before the machine moves past `witnessRound` (the attested round must still be in
 * the ring buffer, and its clients resolvable: `roundClients` keeps those who left).
 *
 * @example
 * ```ts
 * import { untrainedBatchCount } from "./untrained_batches.ts";
 * import { currentRound } from "./machine_queries.ts";
 * import { testState } from "../../tests/support/coordinator_fixtures.ts";
 * const state = testState();
 * const count = untrainedBatchCount(state, currentRound(state));
 * if (count.attestedHeight !== null) throw new Error("round 0 attests nothing");
 * ```
 */
export function untrainedBatchCount(state: CoordinatorState, witnessRound: Round): UntrainedCount {
  const attested = witnessRound.height === 0 ? null : roundByHeight(state, witnessRound.height - 1);
  if (attested === null) return { attestedHeight: null, batches: 0, untrained: 0 };
  if (!isTrainingRound(state, attested)) {
    return { attestedHeight: attested.height, batches: 0, untrained: 0 };
  }
  const quorum = roundWitnessQuorum(state.config, witnessRound);
  const clients = roundClients(state, attested.height);
  const assignments = roundAssignments(state, attested);
  let untrained = 0;
  for (const { clientIndex } of assignments) {
    const trainer = clients[clientIndex];
    if (trainer === undefined || seenBy(witnessRound, trainer.id.signer) < quorum) untrained++;
  }
  return { attestedHeight: attested.height, batches: assignments.length, untrained };
}

/** How many of `round`'s witnesses have `signer` in their participant bloom. */
function seenBy(round: Round, signer: Uint8Array): number {
  const item = sha256(signer);
  let seen = 0;
  for (const w of round.witnesses) if (bloomContains(w.participantBloom, item)) seen++;
  return seen;
}
