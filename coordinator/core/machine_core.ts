/**
 * The state machine's shared building blocks: outcomes, the table of legal run-state
 * transitions, timeouts, starting a round, ending an epoch, moving clients out.
 *
 * Contract of every function that takes a `CoordinatorState` and is not a query: it
 * **mutates the state in place** (the state is the run's single source of truth and can
 * hold 65,535 clients, so copying it per call would dominate the cost) and either
 * returns an outcome or throws before touching anything. Helpers here assume their caller
 * already validated the call.
 *
 * @module
 */

import { CoordinatorError } from "./errors.ts";
import { batchSizeForTokens } from "./data_selection.ts";
import type { Client, CoordinatorState, EpochState, Round, RunState } from "./types.ts";
import { NUM_STORED_ROUNDS } from "./types.ts";
import { tallyDigestVotes } from "./params_digest.ts";
import { expectedWitnesses, witnessQuorum } from "./witness_quorum.ts";
import { isMillisecondTime, timeReached } from "../../common/mod.ts";

/**
 * Why an epoch's rounds stopped and it went to Cooldown; the first that holds, in this order:
 * - `no_witnesses`: the last round had no witness report at all, so nobody attested it (its
 *   clients must join again);
 * - `too_few_clients`: fewer than `min_clients` remain;
 * - `witness_quorum_lost`: fewer witnesses reported than the round's quorum;
 * - `total_steps`: the run reached `total_steps`;
 * - `pause`: the run's authority asked for a pause;
 * - `epoch_time`: the epoch's time was up and its last rounds have run.
 */
export type WindDownCause =
  | "no_witnesses"
  | "epoch_time"
  | "too_few_clients"
  | "witness_quorum_lost"
  | "total_steps"
  | "pause";

/** What a call did to the state. */
export type Outcome =
  | { kind: "Unchanged" }
  | { kind: "Changed" }
  /** The epoch's rounds stopped and it is in Cooldown, for `cause`. */
  | { kind: "WindDown"; cause: WindDownCause }
  /** The epoch ended: `success` false when it ended in Warmup (no training happened). */
  | { kind: "EpochEnd"; success: boolean };

/** The outcome of a call that left the state as it was. */
export const UNCHANGED: Outcome = Object.freeze({ kind: "Unchanged" });
/** The outcome of a call that changed the state without ending an epoch. */
export const CHANGED: Outcome = Object.freeze({ kind: "Changed" });

/** Every run-state change the machine may make, by source state. */
export const LEGAL_TRANSITIONS: Readonly<Record<RunState, readonly RunState[]>> = Object.freeze({
  Uninitialized: ["WaitingForMembers", "Finished"],
  WaitingForMembers: ["Warmup", "Paused"],
  Warmup: ["RoundTrain", "WaitingForMembers", "Finished", "Paused"],
  RoundTrain: ["RoundWitness"],
  RoundWitness: ["RoundTrain", "Cooldown"],
  Cooldown: ["WaitingForMembers", "Finished", "Paused"],
  Finished: [],
  Paused: ["WaitingForMembers", "Finished"],
});

/** Whether the machine may go from `from` to `to` in one step. */
export function isLegalTransition(from: RunState, to: RunState): boolean {
  return LEGAL_TRANSITIONS[from].includes(to);
}

/** Uninitialized, Paused and Finished runs accept no ticks, witnesses or health checks. */
export function isHalted(state: CoordinatorState): boolean {
  return state.runState === "Uninitialized" || state.runState === "Paused" ||
    state.runState === "Finished";
}

/** Throws `Halted` when the run is halted. */
export function assertNotHalted(state: CoordinatorState, what: string): void {
  if (isHalted(state)) {
    throw new CoordinatorError("Halted", `cannot ${what}: the run is ${state.runState}`);
  }
}

/**
 * Checks that `now` is a valid time in seconds (the host's clock, not peer input): whole
 * seconds, or whole milliseconds for hosts with a millisecond clock (common/time.ts).
 */
export function checkNow(now: number): void {
  if (!isMillisecondTime(now)) {
    throw new RangeError(
      `now must be non-negative seconds with at most millisecond precision, found ${String(now)}`,
    );
  }
}

const U64_LIMIT = 1n << 64n;

/** Checks that `seed` is a u64 (the host's randomness, not peer input). */
export function checkSeed(seed: bigint): void {
  if (typeof seed !== "bigint" || seed < 0n || seed >= U64_LIMIT) {
    throw new RangeError(`seed must be a u64 bigint, found ${String(seed)}`);
  }
}

/**
 * Whether `duration` seconds have passed since the current run state began, and not at the
 * same instant it began (Psyche's guard against two transitions in one second; with a
 * millisecond clock, in one millisecond). Exact for fractional seconds (common/time.ts).
 */
export function checkTimeout(state: CoordinatorState, now: number, duration: number): boolean {
  const start = state.runStateStartUnixTimestamp;
  return start !== now && timeReached(now, start, duration);
}

/** Whether the epoch timer (`epochTime` since the epoch began) has fired, same guard. */
export function checkEpochTimeout(state: CoordinatorState, now: number): boolean {
  const start = state.epochState.startTimestamp;
  return start !== now && timeReached(now, start, state.config.epochTime);
}

/**
 * Moves the run to `to` at `now`. Throws a plain Error on an illegal edge: that is a bug
 * in the machine, never a caller's mistake.
 */
export function changeState(state: CoordinatorState, to: RunState, now: number): void {
  if (!isLegalTransition(state.runState, to)) {
    throw new Error(`Coordinator bug: illegal transition ${state.runState} -> ${to}`);
  }
  state.runState = to;
  state.runStateStartUnixTimestamp = now;
}

/** A round with no witnesses, seed 0, height 0 and no clients. */
export function emptyRound(): Round {
  return {
    witnesses: [],
    dataIndex: 0,
    randomSeed: 0n,
    height: 0,
    clientsLen: 0,
    tieBreakerTasks: 0,
    rejected: [],
  };
}

/** A zeroed epoch state that only keeps `coldStartEpoch`. */
export function emptyEpochState(coldStartEpoch: boolean): EpochState {
  const rounds: Round[] = [];
  for (let i = 0; i < NUM_STORED_ROUNDS; i++) rounds.push(emptyRound());
  return {
    rounds,
    clients: [],
    exitedClients: [],
    roundsHead: 0,
    startStep: 0,
    lastStep: 0,
    startTimestamp: 0,
    firstRound: false,
    coldStartEpoch,
    digestVotes: [],
    verificationTasks: [],
  };
}

/**
 * Moves every client that is not Healthy to `exitedClients` with `exitedHeight = height`
 * (the first round height it is absent from), keeping both lists in order. Returns how
 * many moved.
 */
export function moveClientsToExited(state: CoordinatorState, height: number): number {
  const es = state.epochState;
  let kept = 0;
  let moved = 0;
  for (let i = 0; i < es.clients.length; i++) {
    const client = es.clients[i];
    if (client.state === "Healthy") {
      es.clients[kept++] = client;
    } else {
      client.exitedHeight = height;
      es.exitedClients.push(client);
      moved++;
    }
  }
  es.clients.length = kept;
  return moved;
}

/** Marks every still-Healthy client Withdrawn (Psyche's `withdraw_all`). Returns how many changed. */
export function withdrawHealthyClients(clients: Client[]): number {
  let n = 0;
  for (const client of clients) {
    if (client.state === "Healthy") {
      client.state = "Withdrawn";
      n++;
    }
  }
  return n;
}

/** Where a run goes when an epoch ends without pausing: Finished once `totalSteps` is reached. */
export function stateAfterEpoch(state: CoordinatorState): RunState {
  return state.progress.step >= state.config.totalSteps ? "Finished" : "WaitingForMembers";
}

/**
 * Starts the next round in RoundTrain (Psyche's `start_round_train`,
 * shared/coordinator/src/coordinator.rs): the epoch's first round takes slot 0, height 0 and the
 * epoch's start data index; later rounds take the next slot, height + 1 and the previous round's
 * data index plus its batch size.
 */
export function startRoundTrain(state: CoordinatorState, now: number, seed: bigint): void {
  const es = state.epochState;
  let head = 0;
  let height = 0;
  let dataIndex = state.progress.epochStartDataIndex;
  if (!es.firstRound) {
    const prev = es.rounds[es.roundsHead];
    head = (es.roundsHead + 1) % NUM_STORED_ROUNDS;
    height = prev.height + 1;
    dataIndex = prev.dataIndex +
      batchSizeForTokens(state.config, prev.dataIndex * state.model.maxSeqLen);
  }
  es.rounds[head] = {
    witnesses: [],
    dataIndex,
    randomSeed: seed,
    height,
    clientsLen: es.clients.length,
    tieBreakerTasks: 0,
    rejected: [],
  };
  es.roundsHead = head;
  changeState(state, "RoundTrain", now);
}

/**
 * Leaves Warmup (timer or enough warmup witnesses): drops clients that left, records the digest
 * of the model a quorum of the remaining clients loaded, then either ends the epoch
 * unsuccessfully when fewer than `minClients` remain, or starts round 0.
 */
export function leaveWarmup(state: CoordinatorState, now: number, seed: bigint): Outcome {
  moveClientsToExited(state, 0);
  const voters = expectedWitnesses(state.config, state.epochState.clients.length);
  tallyDigestVotes(state, witnessQuorum(voters));
  if (state.epochState.clients.length < state.config.minClients) {
    changeState(state, stateAfterEpoch(state), now);
    return { kind: "EpochEnd", success: false };
  }
  startRoundTrain(state, now, seed);
  return CHANGED;
}
