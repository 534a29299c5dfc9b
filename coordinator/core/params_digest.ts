/**
 * Parameter digests: how the coordinator learns which model the run holds at each step.
 *
 * Clients report the digest of their parameters (shaders/digest.ts) with their warmup witness
 * (the model the epoch starts from), their round witness (the parameters the round trains on:
 * after the apply of the results of two rounds back) and, for the last round's witnesses, a
 * Cooldown witness (the parameters after the epoch's last apply, which the next epoch starts
 * from). A report is a vote for the parameters of `progress.step`, whatever the phase, so one
 * rule labels them all. When the phase ends, the digest with the most votes is recorded for
 * that step if it has at least the phase's witness quorum and no other digest has as many:
 * the same trust the run already gives its witnesses for which results to apply.
 *
 * The records outlive epochs (a ring of the newest NUM_DIGEST_RECORDS steps), so a joiner or a
 * restarted client checks what it loads against the run's record, and every client compares
 * its own digest at each recorded step (client/model_ledger.ts).
 *
 * Pure; mutates the state it is given (the machine's contract).
 *
 * @module
 */
import { CoordinatorError } from "./errors.ts";
import {
  type CoordinatorState,
  type DigestRecord,
  MAX_WITNESSES,
  NUM_DIGEST_RECORDS,
  PARAMS_DIGEST_BYTES,
} from "./types.ts";

/** A digest of all zero bytes: the report carries no vote (the client has no digest yet). */
export const NO_DIGEST: Uint8Array = new Uint8Array(PARAMS_DIGEST_BYTES);

/** Whether `digest` is all zero (no vote). */
export function isNoDigest(digest: Uint8Array): boolean {
  return digest.every((b) => b === 0);
}

/** Throws `InvalidWitness` unless `digest` is a Uint8Array of PARAMS_DIGEST_BYTES bytes. */
export function checkDigestShape(digest: unknown): asserts digest is Uint8Array {
  if (!(digest instanceof Uint8Array) || digest.length !== PARAMS_DIGEST_BYTES) {
    throw new CoordinatorError(
      "InvalidWitness",
      `paramsDigest must be ${PARAMS_DIGEST_BYTES} bytes`,
    );
  }
}

/**
 * Whether client `index` may still vote this phase: throws `DuplicateWitness` when it already
 * did and `WitnessesFull` when MAX_WITNESSES votes are in. Call before mutating anything.
 */
export function checkVoteRoom(state: CoordinatorState, index: number): void {
  const votes = state.epochState.digestVotes;
  if (votes.some((v) => v.index === index)) {
    throw new CoordinatorError("DuplicateWitness", `client ${index} already reported a digest`);
  }
  if (votes.length >= MAX_WITNESSES) {
    throw new CoordinatorError("WitnessesFull", `the phase already has ${MAX_WITNESSES} digests`);
  }
}

/** Records client `index`'s vote (nothing for an all-zero digest). Validate first. */
export function addDigestVote(state: CoordinatorState, index: number, digest: Uint8Array): void {
  if (isNoDigest(digest)) return;
  state.epochState.digestVotes.push({ index, digest: digest.slice() });
}

/**
 * The digest with the most votes among `digests`, if it has at least `quorum` and strictly
 * more than any other; null otherwise (no quorum, or a tie).
 *
 * @example
 * ```ts
 * import { digestConsensus } from "./params_digest.ts";
 * const a = new Uint8Array(32).fill(1), b = new Uint8Array(32).fill(2);
 * if (digestConsensus([a, b, a], 2) !== a) throw new Error("a has 2 of 3 votes");
 * if (digestConsensus([a, b], 1) !== null) throw new Error("a tie records nothing");
 * ```
 */
export function digestConsensus(
  digests: readonly Uint8Array[],
  quorum: number,
): Uint8Array | null {
  const counts: { digest: Uint8Array; votes: number }[] = [];
  for (const digest of digests) {
    const entry = counts.find((c) => sameBytes(c.digest, digest));
    if (entry === undefined) counts.push({ digest, votes: 1 });
    else entry.votes++;
  }
  let best: { digest: Uint8Array; votes: number } | null = null;
  let tied = false;
  for (const c of counts) {
    if (best === null || c.votes > best.votes) {
      best = c;
      tied = false;
    } else if (c.votes === best.votes) {
      tied = true;
    }
  }
  if (best === null || tied || best.votes < quorum) return null;
  return best.digest;
}

/**
 * Ends the phase's vote: records the consensus digest (if any) for `progress.step` and clears
 * the votes. A step that already has a record keeps it (the first quorum is final).
 */
export function tallyDigestVotes(state: CoordinatorState, quorum: number): void {
  const votes = state.epochState.digestVotes;
  const winner = digestConsensus(votes.map((v) => v.digest), quorum);
  if (winner !== null) recordDigest(state, state.progress.step, winner);
  state.epochState.digestVotes = [];
}

/**
 * Appends `{ step, digest }` to the records (dropping the oldest past NUM_DIGEST_RECORDS),
 * unless `step` is not newer than the newest record: steps only grow, and a recorded step
 * keeps its first digest.
 */
export function recordDigest(state: CoordinatorState, step: number, digest: Uint8Array): void {
  const records = state.paramsDigests;
  const newest = records.at(-1);
  if (newest !== undefined && newest.step >= step) return;
  records.push({ step, digest: digest.slice() });
  if (records.length > NUM_DIGEST_RECORDS) records.splice(0, records.length - NUM_DIGEST_RECORDS);
}

/** The recorded digest of `step`, or null when the run has none (never recorded, or too old). */
export function recordedDigest(
  records: readonly DigestRecord[],
  step: number,
): Uint8Array | null {
  return records.find((r) => r.step === step)?.digest ?? null;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
