/**
 * Read-only questions about a coordinator state that clients, servers and the state
 * machine itself ask: which round is current, who was in an earlier round, what a round's
 * committee and data assignment are, whether a round trains, which results to apply.
 *
 * Nothing here mutates the state. {@linkcode roundSelection} memoizes the last few
 * committee selections (a pure function of the round's seed and sizes) because every
 * witness check of a round needs the same one.
 *
 * @module
 */

import { CommitteeSelection } from "./committee_selection.ts";
import { assignDataForRound, batchSizeForTokens, type DataAssignment } from "./data_selection.ts";
import { digestConsensus } from "./params_digest.ts";
import { expectedWitnesses, roundWitnessQuorum } from "./witness_quorum.ts";
import type { BatchId } from "../../common/mod.ts";
import {
  type Client,
  type CoordinatorConfig,
  type CoordinatorState,
  NUM_STORED_ROUNDS,
  type Round,
} from "./types.ts";

/** The round at the head of the ring buffer (the live one during RoundTrain/RoundWitness). */
export function currentRound(state: CoordinatorState): Round {
  return state.epochState.rounds[state.epochState.roundsHead];
}

/**
 * The current phase's parameter-digest vote (the Cooldown's, when checkpointers may report): the
 * digest a quorum of the current round's witnesses agree on, or null while none has one; with
 * the votes cast and the quorum, for messages.
 */
export function phaseDigestVote(
  state: CoordinatorState,
): { consensus: Uint8Array | null; votes: number; quorum: number } {
  const quorum = roundWitnessQuorum(state.config, currentRound(state));
  const votes = state.epochState.digestVotes;
  return {
    consensus: digestConsensus(votes.map((v) => v.digest), quorum),
    votes: votes.length,
    quorum,
  };
}

/**
 * The round before the current one in this epoch, or null in an epoch's first round
 * (and before it, in Warmup).
 */
export function previousRound(state: CoordinatorState): Round | null {
  return roundByHeight(state, currentRound(state).height - 1);
}

/**
 * The round of this epoch with `height`, or null if it is not (or no longer) in the ring
 * buffer of NUM_STORED_ROUNDS rounds.
 */
export function roundByHeight(state: CoordinatorState, height: number): Round | null {
  const { rounds, roundsHead } = state.epochState;
  const back = rounds[roundsHead].height - height;
  if (!Number.isInteger(back) || back < 0 || back >= NUM_STORED_ROUNDS || height < 0) return null;
  const round = rounds[(roundsHead + NUM_STORED_ROUNDS - back) % NUM_STORED_ROUNDS];
  return round.height === height ? round : null;
}

/** Global batch size (sequences) of `round`: the ramp at `round.dataIndex * maxSeqLen` tokens. */
export function roundBatchSize(state: CoordinatorState, round: Round): number {
  return batchSizeForTokens(state.config, round.dataIndex * state.model.maxSeqLen);
}

const SELECTION_CACHE_SIZE = 8;
const selectionCache = new Map<string, CommitteeSelection>();

/**
 * How long RoundWitness lasts: `roundWitnessTime`, which is there for the witnesses still to
 * report, or nothing once every expected witness has (Psyche always waits it out; with one 1.4 s
 * training step, a 2 s window was most of the demo's round). A verifying run keeps the window:
 * its verifiers replay sampled results while rounds go on, and what they replay from is kept for
 * a number of rounds, so rounds paced by the witnesses alone outran them on a busy machine (the
 * end-to-end verification test saw honest verifiers ejected as idle).
 */
export function roundWitnessWindow(state: CoordinatorState, round: Round): number {
  const { config } = state;
  const expected = expectedWitnesses(config, round.clientsLen);
  const allIn = round.witnesses.length >= expected && config.verificationPercent === 0;
  return allIn ? 0 : config.roundWitnessTime;
}

/**
 * The committee selection of `round` under `config` (memoized: the result depends only
 * on the seed, the client count and the config's selection settings). Every client is a
 * Trainer: `verificationPercent` samples results for verification (verification.ts) instead of
 * taking Psyche's Verifier committee out of training, so the selection's share is 0.
 */
export function roundSelection(config: CoordinatorConfig, round: Round): CommitteeSelection {
  const key =
    `${round.randomSeed}:${round.clientsLen}:${round.tieBreakerTasks}:${config.witnessNodes}`;
  const hit = selectionCache.get(key);
  if (hit !== undefined) return hit;
  const selection = CommitteeSelection.create({
    tieBreakerNodes: round.tieBreakerTasks,
    verificationPercent: 0,
    witnessNodes: config.witnessNodes,
    totalNodes: round.clientsLen,
    randomSeed: round.randomSeed,
  });
  if (selectionCache.size >= SELECTION_CACHE_SIZE) {
    selectionCache.delete(selectionCache.keys().next().value as string);
  }
  selectionCache.set(key, selection);
  return selection;
}

/**
 * Every trainer's batch in `round`, sorted by batch start (Psyche's
 * shared/coordinator/src/data_selection.rs).
 */
export function roundAssignments(state: CoordinatorState, round: Round): DataAssignment[] {
  return assignDataForRound({
    clientsLen: round.clientsLen,
    selection: roundSelection(state.config, round),
    dataIndex: round.dataIndex,
    batchSize: roundBatchSize(state, round),
    randomSeed: round.randomSeed,
  });
}

/**
 * The client list of this epoch's round `height`, in index order: the clients still in
 * the epoch plus those that left after that round, ordered by `epochIndex`. Index `i` of
 * the result is the client whose committee and witness proofs use index `i` in that round.
 */
export function roundClients(state: CoordinatorState, height: number): Client[] {
  const { clients, exitedClients } = state.epochState;
  const gone = exitedClients.filter((c) => c.exitedHeight > height);
  if (gone.length === 0) return clients.slice();
  return clients.concat(gone).sort((a, b) => a.epochIndex - b.epochIndex);
}

/**
 * The batch epoch client `epochIndex` was assigned in round `height`, or null when the round is
 * no longer in the state or the client had no batch in it.
 */
export function assignedBatch(
  state: CoordinatorState,
  height: number,
  epochIndex: number,
): BatchId | null {
  const round = roundByHeight(state, height);
  if (round === null) return null;
  const index = roundClients(state, height).findIndex((c) => c.epochIndex === epochIndex);
  if (index < 0) return null;
  return roundAssignments(state, round).find((a) => a.clientIndex === index)?.batch ?? null;
}

/**
 * The client that had `index` in this epoch's round `height`, or null if there was none.
 * Psyche's `get_client_at_historical_index`, made correct for clients leaving from the
 * middle of the list. Builds the round's list: callers with many lookups should use
 * {@linkcode roundClients} once.
 */
export function clientAtHistoricalIndex(
  state: CoordinatorState,
  height: number,
  index: number,
): Client | null {
  if (height === currentRound(state).height && index < state.epochState.clients.length) {
    const fast = state.epochState.exitedClients.every((c) => c.exitedHeight <= height);
    if (fast) return state.epochState.clients[index] ?? null;
  }
  return roundClients(state, height)[index] ?? null;
}

/**
 * The learning-rate warmup window `[start, end]` (steps) of a cold-start epoch (the first
 * epoch after a pause), or null in a normal epoch or when `coldStartWarmupSteps` is 0.
 * Clients scale the LR by `(step - start) / (end - start)` inside it and zero their
 * optimizer state at height 0.
 */
export function coldStartWarmupBounds(state: CoordinatorState): [number, number] | null {
  const { coldStartEpoch, startStep } = state.epochState;
  if (!coldStartEpoch || state.model.coldStartWarmupSteps === 0) return null;
  return [startStep, startStep + state.model.coldStartWarmupSteps];
}

/**
 * Whether clients train in `round` of this epoch. Every round trains except the two
 * apply-only rounds after the epoch timer fired (`lastStep` set at the end of round `k`
 * to `startStep + k + 3`, so rounds `k + 1` and `k + 2` only apply earlier results).
 */
export function isTrainingRound(state: CoordinatorState, round: Round): boolean {
  const { lastStep, startStep } = state.epochState;
  return lastStep === 0 || startStep + round.height + 3 <= lastStep;
}

/** Which results a client applies now, and which witnesses decide their consensus. */
export interface ApplyPlan {
  /** The round whose training results are applied. */
  resultsRound: Round;
  /** The round whose witnesses attest `resultsRound`'s payloads (the next one). */
  witnessRound: Round;
  /** Votes a commitment needs: the quorum of `witnessRound`. */
  quorum: number;
}

/**
 * The results a client must apply in the current state, or null when there are none.
 *
 * - RoundTrain/RoundWitness of height `h >= 2`: round `h - 2`, attested by round `h - 1`'s
 *   witnesses (Psyche's pipeline), if round `h - 2` trained.
 * - Cooldown after last round `H >= 1`: round `H - 1`, attested by round `H`'s witnesses,
 *   if round `H - 1` trained, applied **before** the checkpoint. This is the defined
 *   outcome of an epoch that ends early (min_clients, quorum, total_steps, pause): Psyche
 *   drops both last rounds; here only round `H` is dropped, since no witness ever attests
 *   it. Its sequence indices are skipped like those of the apply-only rounds, so the data
 *   index stays a function of the step. After the epoch timer, rounds `H - 1` and `H` are
 *   the apply-only rounds and nothing is left to apply.
 */
export function applyPlan(state: CoordinatorState): ApplyPlan | null {
  const current = currentRound(state);
  let resultsHeight: number;
  let witnessRound: Round | null;
  switch (state.runState) {
    case "RoundTrain":
    case "RoundWitness":
      resultsHeight = current.height - 2;
      witnessRound = roundByHeight(state, current.height - 1);
      break;
    case "Cooldown":
      resultsHeight = current.height - 1;
      witnessRound = current;
      break;
    default:
      return null;
  }
  const resultsRound = roundByHeight(state, resultsHeight);
  if (resultsRound === null || witnessRound === null) return null;
  if (!isTrainingRound(state, resultsRound)) return null;
  return { resultsRound, witnessRound, quorum: roundWitnessQuorum(state.config, witnessRound) };
}
