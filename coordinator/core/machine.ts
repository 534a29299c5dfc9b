/**
 * The coordinator state machine: a run's epochs and rounds as a pure function of (state, event,
 * time, seed) (Psyche's `Coordinator::tick`, shared/coordinator/src/coordinator.rs). No clock,
 * randomness or I/O: the host (TCP server, Solana program, simulation) passes `now` in seconds and
 * a u64 `seed`. Times and durations are whole seconds on Solana (as in Psyche) and may carry whole
 * milliseconds on the TCP server (common/time.ts); timeouts compare them exactly either way.
 *
 * ```mermaid
 * stateDiagram-v2
 *   WaitingForMembers --> Warmup: enough pending, extra time passed
 *   Warmup --> RoundTrain: warmup time, or all warmup witnesses
 *   Warmup --> WaitingForMembers: below minClients (EpochEnd false)
 *   RoundTrain --> RoundWitness: train timeout, or all witnesses
 *   RoundWitness --> RoundTrain: witness time passed
 *   RoundWitness --> Cooldown: no witnesses, too few clients/witnesses, total steps, pause, epoch time (WindDown)
 *   Cooldown --> WaitingForMembers: cooldown time, or the first checkpointer's report (EpochEnd true)
 *   Cooldown --> Paused: pending pause
 *   Paused --> WaitingForMembers: resume
 * ```
 *
 * Contract: every entry point mutates `state` in place and returns an {@linkcode Outcome},
 * or throws a {@linkcode CoordinatorError} (peer input and protocol rules) or a RangeError
 * (the host's own arguments: time, seed, pending list) **before** changing anything.
 *
 * @module
 */

import { CoordinatorError } from "./errors.ts";
import {
  CHANGED,
  changeState,
  checkEpochTimeout,
  checkNow,
  checkSeed,
  checkTimeout,
  emptyEpochState,
  leaveWarmup,
  moveClientsToExited,
  type Outcome,
  startRoundTrain,
  stateAfterEpoch,
  UNCHANGED,
  type WindDownCause,
  withdrawHealthyClients,
} from "./machine_core.ts";
import { checkpointWithoutReturningPeers } from "./checkpoint_lifecycle.ts";
import { endCooldown } from "./machine_cooldown.ts";
import { roundWitnessQuorum } from "./witness_quorum.ts";
import { tallyDigestVotes } from "./params_digest.ts";
import { currentRound, roundWitnessWindow } from "./machine_queries.ts";
import { validateCoordinatorInputs } from "./machine_validate.ts";
import {
  barEpoch,
  barredUntil,
  closeVerificationStages,
  ejectIdleWitnesses,
  openVerificationTasks,
} from "./verification.ts";
import {
  type CoordinatorConfig,
  type CoordinatorProgress,
  type CoordinatorState,
  type DigestRecord,
  EJECTION_CAUSES,
  type EjectionRecord,
  type LlmModel,
  type NodeIdentity,
  NUM_DIGEST_RECORDS,
  NUM_EJECTION_RECORDS,
  NUM_STORED_ROUNDS,
  PARAMS_DIGEST_BYTES,
  type Round,
  VERIFICATION_EVIDENCE,
} from "./types.ts";
import { addTime, fromMillis, toHex } from "../../common/mod.ts";

/** Options of {@linkcode createCoordinator}. */
export interface CreateCoordinatorOptions {
  /** The run's id (at most MAX_RUN_ID_BYTES UTF-8 bytes, not empty). */
  runId: string;
  config: CoordinatorConfig;
  model: LlmModel;
  /** Where the run stands; defaults to epoch 0, step 1, data index 0 (a fresh run). */
  progress?: CoordinatorProgress;
  /** Seconds (whole milliseconds at most); the WaitingForMembers timer starts here. */
  now: number;
  /** Start Paused (an operator resumes it) instead of WaitingForMembers. */
  paused?: boolean;
  /** Parameter digests the run recorded before (a resumed run's); default none. */
  paramsDigests?: DigestRecord[];
  /** Ejections the run recorded before (a resumed run's, still barring); default none. */
  ejections?: EjectionRecord[];
}

/**
 * A fresh coordinator in WaitingForMembers (or Paused). Validates the config, model and
 * progress (RangeError naming the field) so the machine never runs on values it cannot
 * handle. The objects passed in are copied.
 *
 * @example
 * ```ts
 * import { createCoordinator, tick } from "./machine.ts";
 * import { identities, testConfig, testModel } from "../../tests/support/coordinator_fixtures.ts";
 * const state = createCoordinator({ runId: "demo", config: testConfig(), model: testModel(), now: 0 });
 * tick(state, identities(2), 1, 1234n); // 2 pending >= initMinClients, extra time passed
 * if (state.runState !== "Warmup") throw new Error("the epoch starts");
 * ```
 */
export function createCoordinator(opts: CreateCoordinatorOptions): CoordinatorState {
  const progress = opts.progress ?? { epoch: 0, step: 1, epochStartDataIndex: 0 };
  checkNow(opts.now);
  validateCoordinatorInputs(opts.runId, opts.config, opts.model, progress);
  return {
    runId: opts.runId,
    runState: opts.paused === true ? "Paused" : "WaitingForMembers",
    model: structuredClone(opts.model),
    config: { ...opts.config },
    progress: { ...progress },
    epochState: emptyEpochState(false),
    runStateStartUnixTimestamp: opts.now,
    pendingPause: false,
    paramsDigests: checkDigestRecords(opts.paramsDigests ?? []),
    ejections: checkEjectionRecords(opts.ejections ?? []),
  };
}

/** Copies `records` after checking them (RangeError naming the record otherwise). */
export function checkEjectionRecords(records: readonly EjectionRecord[]): EjectionRecord[] {
  if (records.length > NUM_EJECTION_RECORDS) {
    throw new RangeError(`ejections holds at most ${NUM_EJECTION_RECORDS} records`);
  }
  return records.map((r, i) => {
    const where = `ejections[${i}]`;
    if (!(r.signer instanceof Uint8Array) || r.signer.length !== 32) {
      throw new RangeError(`${where}.signer must be 32 bytes`);
    }
    for (
      const [field, value, max] of [
        ["epoch", r.epoch, 0xffff],
        ["step", r.step, 0xffff_ffff],
        ["barredUntil", r.barredUntil, 0xffff],
      ] as const
    ) {
      if (!Number.isSafeInteger(value) || value < 0 || value > max) {
        throw new RangeError(`${where}.${field} must be an integer in [0, ${max}]`);
      }
    }
    if (!EJECTION_CAUSES.includes(r.cause)) {
      throw new RangeError(`${where}.cause must be one of ${EJECTION_CAUSES.join(", ")}`);
    }
    if (!VERIFICATION_EVIDENCE.includes(r.evidence)) {
      throw new RangeError(`${where}.evidence must be one of ${VERIFICATION_EVIDENCE.join(", ")}`);
    }
    return { ...r, signer: r.signer.slice() };
  });
}

/** Copies `records` after checking them (RangeError naming the record otherwise). */
function checkDigestRecords(records: readonly DigestRecord[]): DigestRecord[] {
  if (records.length > NUM_DIGEST_RECORDS) {
    throw new RangeError(`paramsDigests holds at most ${NUM_DIGEST_RECORDS} records`);
  }
  let previous = 0;
  return records.map((r, i) => {
    if (!Number.isSafeInteger(r.step) || r.step <= previous) {
      throw new RangeError(`paramsDigests[${i}].step must be an integer above ${previous}`);
    }
    previous = r.step;
    if (!(r.digest instanceof Uint8Array) || r.digest.length !== PARAMS_DIGEST_BYTES) {
      throw new RangeError(`paramsDigests[${i}].digest must be ${PARAMS_DIGEST_BYTES} bytes`);
    }
    if (r.digest.every((b) => b === 0)) {
      throw new RangeError(`paramsDigests[${i}].digest must not be all zero`);
    }
    return { step: r.step, digest: r.digest.slice() };
  });
}

/**
 * Advances the run by time alone (Psyche's `Coordinator::tick`). `pending` is the host's list of
 * clients waiting to join, in join order (null when it has none to offer: Solana ticks
 * outside WaitingForMembers); it is only read in WaitingForMembers, where the first
 * `config.maxClients` of them that no ejection bars (verification.ts `barredUntil`) become the
 * epoch's clients in that order. `seed` seeds the round that may start.
 *
 * Throws `Halted` when Uninitialized, Paused or Finished; RangeError on a bad `now` or
 * `seed`, or a pending list with a repeated signer or a key that is not 32 bytes.
 */
export function tick(
  state: CoordinatorState,
  pending: readonly NodeIdentity[] | null,
  now: number,
  seed: bigint,
): Outcome {
  checkNow(now);
  checkSeed(seed);
  const runState = state.runState;
  switch (runState) {
    case "Uninitialized":
    case "Finished":
    case "Paused":
      throw new CoordinatorError("Halted", `cannot tick: the run is ${runState}`);
    case "WaitingForMembers":
      return tickWaitingForMembers(state, pending, now);
    case "Warmup":
      return tickWarmup(state, now, seed);
    case "RoundTrain":
      if (!checkTimeout(state, now, state.config.maxRoundTrainTime)) return UNCHANGED;
      changeState(state, "RoundWitness", now);
      return CHANGED;
    case "RoundWitness":
      return tickRoundWitness(state, now, seed);
    case "Cooldown":
      return tickCooldown(state, now);
    default: {
      const unreachable: never = runState;
      throw new Error(`Coordinator bug: unknown run state ${String(unreachable)}`);
    }
  }
}

/**
 * The earliest time (seconds) at which {@linkcode tick} can change the run by time alone, or
 * null when only an event can (a join, a witness, an operator's resume). `pendingCount` is the
 * size of the host's pending list (WaitingForMembers waits for `initMinClients` of them).
 * A host ticks at this moment instead of polling, so a state ends when its timer says, not at
 * the next poll; events still tick at once. A zero duration (`warmupTime = 0`) gives the
 * millisecond after the state began (no two transitions at the same instant).
 *
 * Contract, checked by machine_test.ts: a tick before the deadline leaves the state's timer
 * unfired, a tick at the deadline fires it.
 */
export function nextTickDeadline(state: CoordinatorState, pendingCount: number): number | null {
  const { config } = state;
  const runState = state.runState;
  switch (runState) {
    case "Uninitialized":
    case "Finished":
    case "Paused":
      return null;
    case "WaitingForMembers":
      if (pendingCount < config.initMinClients) return null;
      return deadlineAfter(state, config.waitingForMembersExtraTime);
    case "Warmup":
      return deadlineAfter(state, config.warmupTime);
    case "RoundTrain":
      return deadlineAfter(state, config.maxRoundTrainTime);
    case "RoundWitness":
      return deadlineAfter(state, roundWitnessWindow(state, currentRound(state)));
    case "Cooldown":
      return deadlineAfter(state, config.cooldownTime);
    default: {
      const unreachable: never = runState;
      throw new Error(`Coordinator bug: unknown run state ${String(unreachable)}`);
    }
  }
}

/** The first millisecond at which `checkTimeout(state, t, duration)` holds. */
function deadlineAfter(state: CoordinatorState, duration: number): number {
  return addTime(state.runStateStartUnixTimestamp, duration > 0 ? duration : fromMillis(1));
}

function checkPending(chosen: readonly NodeIdentity[]): void {
  const seen = new Set<string>();
  for (let i = 0; i < chosen.length; i++) {
    const { signer, p2pIdentity } = chosen[i];
    if (!(signer instanceof Uint8Array) || signer.length !== 32) {
      throw new RangeError(`pending[${i}].signer must be 32 bytes`);
    }
    if (!(p2pIdentity instanceof Uint8Array) || p2pIdentity.length !== 32) {
      throw new RangeError(`pending[${i}].p2pIdentity must be 32 bytes`);
    }
    const key = toHex(signer);
    if (seen.has(key)) throw new RangeError(`pending[${i}] repeats an earlier signer`);
    seen.add(key);
  }
}

function tickWaitingForMembers(
  state: CoordinatorState,
  pending: readonly NodeIdentity[] | null,
  now: number,
): Outcome {
  const { config } = state;
  if (pending === null) return UNCHANGED;
  // A client ejected by verification sits out its bar; it never counts towards initMinClients.
  const bars = barEpoch(state, now);
  const free = state.ejections.length === 0
    ? pending
    : pending.filter((id) =>
      !(id?.signer instanceof Uint8Array) || barredUntil(state, id.signer, bars) === null
    );
  if (free.length < config.initMinClients) return UNCHANGED;
  if (!checkTimeout(state, now, config.waitingForMembersExtraTime)) return UNCHANGED;
  const chosen = free.slice(0, config.maxClients);
  checkPending(chosen);
  // A bar the wait served (barEpoch) is served for good, not again in the next epochs.
  for (const r of state.ejections) {
    if (r.barredUntil > state.progress.epoch && r.barredUntil <= bars) {
      r.barredUntil = state.progress.epoch;
    }
  }

  // Did any of the previous epoch's remaining clients come back? They can serve the model.
  const previous = new Set<string>();
  for (const c of state.epochState.clients) {
    if (c.state === "Healthy") previous.add(toHex(c.id.signer));
  }
  const returning = chosen.some((id) => previous.has(toHex(id.signer)));
  if (!returning) state.model.checkpoint = checkpointWithoutReturningPeers(state.model.checkpoint);

  const es = emptyEpochState(state.epochState.coldStartEpoch);
  es.firstRound = true;
  es.startStep = state.progress.step;
  es.startTimestamp = now;
  es.clients = chosen.map((id, i) => ({
    id: { signer: id.signer.slice(), p2pIdentity: id.p2pIdentity.slice() },
    state: "Healthy",
    exitedHeight: 0,
    epochIndex: i,
  }));
  state.epochState = es;
  changeState(state, "Warmup", now);
  return CHANGED;
}

function tickWarmup(state: CoordinatorState, now: number, seed: bigint): Outcome {
  if (checkTimeout(state, now, state.config.warmupTime)) return leaveWarmup(state, now, seed);
  const moved = moveClientsToExited(state, 0);
  if (state.epochState.clients.length < state.config.minClients) {
    changeState(state, stateAfterEpoch(state), now);
    return { kind: "EpochEnd", success: false };
  }
  return moved > 0 ? CHANGED : UNCHANGED;
}

/** Rounds an epoch runs at least before the epoch timer may wind it down. */
export const MIN_ROUNDS_PER_EPOCH = NUM_STORED_ROUNDS;

function tickRoundWitness(state: CoordinatorState, now: number, seed: bigint): Outcome {
  const { config, epochState: es, progress } = state;
  const round = currentRound(state);
  if (!checkTimeout(state, now, roundWitnessWindow(state, round))) return UNCHANGED;
  // Verification stages due now close first, and idle witnesses are found: whom they eject
  // leaves with this round.
  closeVerificationStages(state, round.height, now, seed);
  ejectIdleWitnesses(state, round);
  // The round's witnesses voted for the parameters of its step (before the step moves on).
  tallyDigestVotes(state, roundWitnessQuorum(config, round));
  es.firstRound = false;
  progress.step += 1;
  moveClientsToExited(state, round.height + 1);

  if (round.witnesses.length > 0 && es.lastStep === 0 && checkEpochTimeout(state, now)) {
    const lastStep = progress.step + 2;
    if (lastStep - es.startStep >= MIN_ROUNDS_PER_EPOCH) es.lastStep = lastStep;
  }
  const cause = windDownCause(state, round);
  if (cause === null) {
    startRoundTrain(state, now, seed);
    openVerificationTasks(state, now);
    return CHANGED;
  }
  // Nobody proved they are alive: everyone must rejoin.
  if (cause === "no_witnesses") withdrawHealthyClients(es.clients);
  changeState(state, "Cooldown", now);
  return { kind: "WindDown", cause };
}

/**
 * Why the epoch stops after `round` (its witness window just closed, the step already moved
 * on), or null when another round trains.
 */
function windDownCause(state: CoordinatorState, round: Round): WindDownCause | null {
  const { config, epochState: es, progress } = state;
  const numWitnesses = round.witnesses.length;
  if (numWitnesses === 0) return "no_witnesses";
  if (es.clients.length < config.minClients) return "too_few_clients";
  if (numWitnesses < roundWitnessQuorum(config, round)) return "witness_quorum_lost";
  if (progress.step >= config.totalSteps) return "total_steps";
  if (state.pendingPause) return "pause";
  if (es.lastStep !== 0 && progress.step === es.lastStep) return "epoch_time";
  return null;
}

function tickCooldown(state: CoordinatorState, now: number): Outcome {
  if (!checkTimeout(state, now, state.config.cooldownTime)) return UNCHANGED;
  return endCooldown(state, now);
}
