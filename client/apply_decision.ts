/**
 * Which results a client applies (psyche.md §3.5, §4.4): for every batch of the results
 * round, the commitment a quorum of the next round's witnesses received
 * (`selectConsensusCommitmentByWitnesses`), or nothing. Batches without consensus are the
 * round's *untrained batches*: logged and counted, never guessed.
 *
 * The candidates of a batch are ordered by hash before the vote, so two clients that heard
 * the same commitments pick the same one whatever order they arrived in. The chosen results
 * are listed by batch start, the canonical order the optimizer aggregates in.
 *
 * Pure: no I/O.
 *
 * @module
 */
import type { ApplyPlan } from "../coordinator/machine_queries.ts";
import type { BatchId } from "../coordinator/types.ts";
import { selectConsensusCommitmentByWitnesses } from "../coordinator/witness_quorum.ts";

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
