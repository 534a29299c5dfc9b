/**
 * A client's view of one round of the current epoch: its step, client list, committee,
 * data assignment, and where this client stands in it (index, proofs, batch, witness seat).
 * Every other decision of the client starts from here.
 *
 * Pure: a function of the coordinator state and the client's key, no I/O.
 *
 * @module
 */
import { type BatchId, equalBytes, learningRate, type PublicKeyBytes } from "../common/mod.ts";
import {
  type Client,
  coldStartWarmupBounds,
  type CommitteeProof,
  CommitteeSelection,
  type CoordinatorState,
  currentRound,
  type DataAssignment,
  isTrainingRound,
  type Round,
  roundAssignments,
  roundByHeight,
  roundClients,
  roundSelection,
  type WitnessProof,
} from "../coordinator/core/mod.ts";

/** Where this client stands in a round. */
export interface SelfInRound {
  /** Index in the round's client list (what proofs name). */
  readonly index: number;
  readonly committeeProof: CommitteeProof;
  readonly witnessProof: WitnessProof;
  /** Whether this client holds a witness seat this round. */
  readonly isWitness: boolean;
  /** The batch this client trains this round, or null (not a trainer, or no sequences left). */
  readonly batch: BatchId | null;
}

/** One round of the current epoch as the client sees it. */
export interface RoundView {
  /** Height within the epoch (0 = first round). */
  readonly height: number;
  /** Coordinator step of the round: `epochState.startStep + height`. */
  readonly step: number;
  readonly round: Round;
  /** The round's clients in index order (including those that left since). */
  readonly clients: readonly Client[];
  readonly selection: CommitteeSelection;
  /** Every trainer's batch, sorted by batch start. */
  readonly assignments: readonly DataAssignment[];
  /** False for the apply-only rounds at the end of an epoch. */
  readonly training: boolean;
  /** This client's place, or null when it is not in the round. */
  readonly self: SelfInRound | null;
}

/**
 * The height of the coordinator's current round (the head of its ring buffer). Meaningful in
 * RoundTrain, RoundWitness and Cooldown; 0 before the epoch's first round.
 */
export function currentHeight(state: CoordinatorState): number {
  return currentRound(state).height;
}

/** The coordinator step of round `height` of the current epoch. */
export function stepOfHeight(state: CoordinatorState, height: number): number {
  return state.epochState.startStep + height;
}

/**
 * The view of round `height` of the current epoch for the client whose signer key is
 * `signer`, or null when that round is not (or no longer) in the coordinator's ring buffer.
 */
export function roundView(
  state: CoordinatorState,
  height: number,
  signer: PublicKeyBytes,
): RoundView | null {
  const round = roundByHeight(state, height);
  if (round === null) return null;
  const clients = roundClients(state, height);
  const selection = roundSelection(state.config, round);
  const assignments = roundAssignments(state, round);
  const index = clients.findIndex((c) => equalBytes(c.id.signer, signer));
  let self: SelfInRound | null = null;
  if (index >= 0 && index < round.clientsLen) {
    const mine = assignments.find((a) => a.clientIndex === index);
    self = {
      index,
      committeeProof: selection.committeeProof(index),
      witnessProof: selection.witnessProof(index),
      isWitness: selection.isWitness(index),
      batch: mine === undefined ? null : mine.batch,
    };
  }
  return {
    height,
    step: stepOfHeight(state, height),
    round,
    clients,
    selection,
    assignments,
    training: isTrainingRound(state, round),
    self,
  };
}

/** The index of the client with p2p key `p2pKey` in the round, or -1. */
export function indexOfPeer(view: RoundView, p2pKey: PublicKeyBytes): number {
  return view.clients.findIndex((c) => equalBytes(c.id.p2pIdentity, p2pKey));
}

/**
 * The learning rate of `step` in the current epoch: the run's schedule, scaled by
 * `(step − start) / (end − start)` inside a cold-start epoch's warmup window.
 */
export function stepLearningRate(state: CoordinatorState, step: number): number {
  const lr = learningRate(state.model.lrSchedule, step);
  const bounds = coldStartWarmupBounds(state);
  if (bounds === null) return lr;
  const [start, end] = bounds;
  if (end <= start || step >= end) return lr;
  return lr * Math.max(0, step - start) / (end - start);
}

/** Run states inside an epoch: the state's client list is the current epoch's. */
const IN_EPOCH: ReadonlySet<string> = new Set(["Warmup", "RoundTrain", "RoundWitness", "Cooldown"]);

/** Whether the run is inside an epoch (Warmup to Cooldown). */
export function isInEpoch(state: CoordinatorState): boolean {
  return IN_EPOCH.has(state.runState);
}

/** This client's index in the epoch's current client list, or -1 when it is not in it. */
export function epochIndexOf(state: CoordinatorState, signer: PublicKeyBytes): number {
  return state.epochState.clients.findIndex((c) => equalBytes(c.id.signer, signer));
}

/**
 * This client's `Client.epochIndex` (its place in the epoch's starting list, which verification
 * tasks name), or -1 when it is not among the epoch's current clients. Not its index in the
 * current list ({@link epochIndexOf}): those shift as clients leave.
 */
export function memberIndexOf(state: CoordinatorState, signer: PublicKeyBytes): number {
  return state.epochState.clients.find((c) => equalBytes(c.id.signer, signer))?.epochIndex ?? -1;
}

/** Whether `p2pKey` belongs to one of the epoch's current clients. */
export function isEpochPeer(state: CoordinatorState, p2pKey: PublicKeyBytes): boolean {
  return state.epochState.clients.some((c) => equalBytes(c.id.p2pIdentity, p2pKey));
}

/** The p2p keys of the epoch's current clients (the allowlist of the libp2p node). */
export function epochPeerKeys(state: CoordinatorState): PublicKeyBytes[] {
  return state.epochState.clients.map((c) => c.id.p2pIdentity);
}
