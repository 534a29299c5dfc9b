/**
 * Which results a client applies (Psyche's `apply_results`, shared/client/src/state/train.rs): for
 * every batch of the results round, the commitment a quorum of the next round's witnesses received
 * (`selectConsensusCommitmentByWitnesses`), or nothing. Batches without consensus are the round's
 * *untrained batches*: logged and counted, never guessed.
 *
 * The candidates of a batch are ordered by hash before the vote, so two clients that heard
 * the same commitments pick the same one whatever order they arrived in. The chosen results
 * are listed by batch start, the canonical order the optimizer aggregates in.
 *
 * Pure: no I/O.
 *
 * @module
 */
import type { BatchId } from "../../common/mod.ts";
import {
  type ApplyPlan,
  bloomContains,
  selectConsensusCommitmentByWitnesses,
  sha256,
} from "../../coordinator/core/mod.ts";

/** One batch's chosen result. */
export interface ChosenResult {
  readonly batch: BatchId;
  /** The consensus commitment hash. */
  readonly commitment: Uint8Array;
}

/** What to apply for one results round. */
export interface ApplyDecision {
  /** Height of the results round. */
  readonly resultsHeight: number;
  /** Batches with a consensus commitment, by batch start. */
  readonly chosen: readonly ChosenResult[];
  /** Batches no commitment reached quorum for, by batch start. */
  readonly untrained: readonly BatchId[];
}

/**
 * Decides, for each of `batches` (the results round's assignments), which commitment to
 * apply. `candidates(batch)` lists the commitments this client accepted for the batch.
 */
export function decideApply(
  plan: ApplyPlan,
  batches: readonly BatchId[],
  candidates: (batch: BatchId) => readonly Uint8Array[],
): ApplyDecision {
  const chosen: ChosenResult[] = [];
  const untrained: BatchId[] = [];
  const sorted = [...batches].sort((a, b) => a.start - b.start);
  for (const batch of sorted) {
    const hashes = candidates(batch);
    const pick = selectConsensusCommitmentByWitnesses(
      hashes,
      plan.witnessRound.witnesses,
      plan.quorum,
    );
    if (pick === null) untrained.push({ ...batch });
    else chosen.push({ batch: { ...batch }, commitment: hashes[pick] });
  }
  return { resultsHeight: plan.resultsRound.height, chosen, untrained };
}

/**
 * The untrained batches a quorum of the witnesses nonetheless saw trained: their trainer's
 * `sha256(signer)` is in at least `plan.quorum` of the witness round's participant blooms.
 * A client with such a batch lacks results the others apply (it missed the announcement or
 * the payload), so applying without them would leave the run's parameters; it must not.
 * `trainerOf(batch)` is the signer key of the batch's trainer (null when unknown).
 */
export function attestedButMissing(
  plan: ApplyPlan,
  untrained: readonly BatchId[],
  trainerOf: (batch: BatchId) => Uint8Array | null,
): BatchId[] {
  return untrained.filter((batch) => {
    const signer = trainerOf(batch);
    if (signer === null) return false;
    const item = sha256(signer);
    const seen = plan.witnessRound.witnesses
      .filter((w) => bloomContains(w.participantBloom, item)).length;
    return seen >= plan.quorum;
  });
}
