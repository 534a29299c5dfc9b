/**
 * Verification of sampled results (docs/protocol.md, "Verification"): which results of a round
 * are sampled, who verifies each, how their reports decide, and what a decision does (ejection,
 * the bar on rejoining, results left out of the apply). Upstream Psyche defines a verifier and a
 * tie-breaker committee but leaves both `todo!()`; this is the design it never shipped.
 *
 * A task's life, driven by the machine:
 * 1. {@linkcode openVerificationTasks}, when round `h` starts: with `verificationPercent > 0` it
 *    samples `max(1, ⌊n·p/100⌋)` (at most MAX_SAMPLES_PER_ROUND) of round `h − 1`'s `n` batches,
 *    drawn from round `h`'s seed, which nobody knew when those results were committed. A sampled
 *    trainer still in the epoch gets a task whose stage seats VERIFIERS_PER_TASK of the other
 *    Healthy clients; one that already left has its result rejected instead (leaving does not
 *    dodge a sample).
 * 2. {@linkcode verificationReport}: a seated verifier says Pass or Fail. As soon as a majority of
 *    the stage's seats agree the task is decided: on Fail the trainer is ejected, on Pass the
 *    accusers are; either way every seat on the losing side is, including one that reports
 *    against the decision later. A decided task stays open until its stage closes, so a seat that
 *    leaves its report to the others is still found idle.
 * 3. {@linkcode closeVerificationStages}, when a RoundWitness ends at or after the stage's deadline
 *    round and the stage has lasted {@linkcode verificationStageSeconds} (twice the run's
 *    `max_round_train_time`: a replay costs about a training step, so fast rounds never leave a
 *    verifier less time than that): seats that never reported are ejected as idle; a decided task
 *    closes; an undecided stage with a fail but no majority goes to a tie-break stage of fresh
 *    seats; passes alone decide Pass; nothing at all drops the task.
 * 4. {@linkcode dropVerificationTasks} at the epoch's end.
 *
 * An ejected client is marked `Ejected` (it leaves at the end of the round), its results of the
 * rounds whose apply is not yet due are rejected (`Round.rejected`), and it is recorded in
 * `ejections`, which also bars its signer for `verificationBarEpochs` epochs.
 *
 * Draws are sha256 of the round seed, a salt and small integers: cheap enough for the Solana
 * program, which mirrors this file (coordinator/solana/program/verification.c).
 *
 * Pure, and with the machine's contract: mutate in place or throw before mutating.
 *
 * @module
 */

import { CoordinatorError } from "./errors.ts";
import { sha256, u32le, u64le } from "./hash.ts";
import { assertNotHalted, CHANGED, type Outcome } from "./machine_core.ts";
import {
  isTrainingRound,
  roundAssignments,
  roundByHeight,
  roundClients,
  roundSelection,
} from "./machine_queries.ts";
import { roundWitnessQuorum } from "./witness_quorum.ts";
import {
  type Client,
  type CoordinatorState,
  type EjectionCause,
  type EjectionRecord,
  MAX_SAMPLES_PER_ROUND,
  MAX_VERIFICATION_TASKS,
  MIN_VERIFIERS_PER_TASK,
  type NodeIdentity,
  NUM_EJECTION_RECORDS,
  type Round,
  VERIFICATION_EVIDENCE,
  VERIFICATION_STAGE_ROUNDS,
  type VerificationEvidence,
  type VerificationReport,
  type VerificationSeat,
  type VerificationTask,
  type VerificationVerdict,
  VERIFIERS_PER_TASK,
} from "./types.ts";
import { addTime, equalBytes, timeReached, toMillis } from "../../common/mod.ts";

/** Salt of the draw that samples a round's results. */
export const SAMPLE_SALT = "verification sample";
/** Salt of the draw that seats a task's verifiers. */
export const VERIFIER_SALT = "verifier";
/** Salt of the draw that seats a task's tie-breakers. */
export const TIE_BREAKER_SALT = "tie-breaker";
/** Draws tried before a committee is completed by a scan in index order. */
export const MAX_COMMITTEE_DRAWS = 64;

const encoder = new TextEncoder();

/**
 * Draw `k` of a sequence in `[0, n)`: `u64le(sha256(sha256(u64le(seed)) ‖ salt ‖ u32le(a) ‖
 * u32le(b) ‖ u32le(k))[0..8]) mod n`. `a` and `b` tell apart the draws of different tasks.
 */
export function verificationDraw(
  seed: bigint,
  salt: string,
  ids: readonly [number, number],
  k: number,
  n: number,
): number {
  const digest = sha256(
    sha256(u64le(seed)),
    encoder.encode(salt),
    u32le(ids[0]),
    u32le(ids[1]),
    u32le(k),
  );
  const value = new DataView(digest.buffer, digest.byteOffset, 8).getBigUint64(0, true);
  return Number(value % BigInt(n));
}

/**
 * Up to `count` distinct indices of `[0, n)` for which `eligible` holds: the first eligible ones
 * among `draw(0)`, `draw(1)`, ... (at most MAX_COMMITTEE_DRAWS draws), then, if still short, the
 * remaining eligible ones in index order. Deterministic, and bounded in cost whatever `n`.
 */
export function pickDistinct(
  n: number,
  count: number,
  eligible: (i: number) => boolean,
  draw: (k: number) => number,
): number[] {
  const picked: number[] = [];
  for (let k = 0; k < MAX_COMMITTEE_DRAWS && picked.length < count; k++) {
    const i = draw(k);
    if (eligible(i) && !picked.includes(i)) picked.push(i);
  }
  for (let i = 0; i < n && picked.length < count; i++) {
    if (eligible(i) && !picked.includes(i)) picked.push(i);
  }
  return picked;
}

/**
 * Results sampled from a round of `batches` batches: 0 when `percent` is 0, else
 * `max(1, ⌊batches·percent/100⌋)`, at most MAX_SAMPLES_PER_ROUND and never more than `batches`.
 *
 * @example
 * ```ts
 * import { verificationSampleCount } from "./verification.ts";
 * if (verificationSampleCount(10, 4) !== 1) throw new Error("at least one when above 0");
 * if (verificationSampleCount(25, 12) !== 3) throw new Error("a quarter of 12");
 * ```
 */
export function verificationSampleCount(percent: number, batches: number): number {
  if (percent === 0 || batches === 0) return 0;
  const share = Math.floor(batches * percent / 100);
  return Math.min(MAX_SAMPLES_PER_ROUND, batches, Math.max(1, share));
}

/**
 * Seconds a stage lasts at least: twice the run's `max_round_train_time` (a verifier fetches two
 * states and replays a step, about a training step's work, whatever the pace of the rounds).
 */
export function verificationStageSeconds(config: { maxRoundTrainTime: number }): number {
  return addTime(config.maxRoundTrainTime, config.maxRoundTrainTime);
}

/** Seats a decision needs in a stage of `seats` seats: a strict majority. */
export function verificationMajority(seats: number): number {
  return Math.floor(seats / 2) + 1;
}

/** The seats of the task's current stage. */
export function stageSeats(task: VerificationTask): VerificationSeat[] {
  return task.seats.filter((s) => s.stage === task.stage);
}

/** The open task for round `height`'s result of trainer `trainer` (an epoch index), if any. */
export function findVerificationTask(
  state: CoordinatorState,
  height: number,
  trainer: number,
): VerificationTask | undefined {
  return state.epochState.verificationTasks.find((t) =>
    t.height === height && t.trainer === trainer
  );
}

/**
 * The epoch bars are measured against at `now`: the epoch about to start, plus one for each whole
 * `epochTime` the run has waited in WaitingForMembers. A bar is served in the epochs the run
 * holds, or in their time while it holds none, so a run whose unbarred members are too few to
 * start never waits forever on a bar that only a later epoch could lift.
 */
export function barEpoch(state: CoordinatorState, now: number): number {
  const epoch = state.progress.epoch;
  if (state.runState !== "WaitingForMembers") return epoch;
  const waitedMs = toMillis(now) - toMillis(state.runStateStartUnixTimestamp);
  const epochMs = toMillis(state.config.epochTime);
  return waitedMs <= 0 || epochMs <= 0 ? epoch : epoch + Math.floor(waitedMs / epochMs);
}

/**
 * The first epoch `signer` may join, when an ejection record still bars it from epoch `epoch`
 * (by default the one about to start; see {@linkcode barEpoch}); null when it is free to join.
 */
export function barredUntil(
  state: CoordinatorState,
  signer: Uint8Array,
  epoch: number = state.progress.epoch,
): number | null {
  let until: number | null = null;
  for (const r of state.ejections) {
    if (r.barredUntil > epoch && equalBytes(r.signer, signer)) {
      until = Math.max(until ?? 0, r.barredUntil);
    }
  }
  return until;
}

/** Whether trainer `epochIndex`'s results of `round` are left out of the apply. */
export function isRejected(round: { rejected: readonly number[] }, epochIndex: number): boolean {
  return round.rejected.includes(epochIndex);
}

/** Adds `epochIndex` to a round's rejected list, keeping it sorted and free of repeats. */
function reject(round: { rejected: number[] }, epochIndex: number): void {
  if (round.rejected.includes(epochIndex)) return;
  round.rejected.push(epochIndex);
  round.rejected.sort((a, b) => a - b);
}

/** Up to VERIFIERS_PER_TASK Healthy clients (epoch indices) not in `exclude`, drawn with `salt`. */
function drawSeats(
  clients: readonly Client[],
  exclude: ReadonlySet<number>,
  seed: bigint,
  salt: string,
  ids: readonly [number, number],
): number[] {
  const eligible = (i: number) =>
    clients[i].state === "Healthy" && !exclude.has(clients[i].epochIndex);
  let available = 0;
  for (let i = 0; i < clients.length; i++) if (eligible(i)) available++;
  const count = Math.min(VERIFIERS_PER_TASK, available);
  if (count < MIN_VERIFIERS_PER_TASK) return [];
  return pickDistinct(
    clients.length,
    count,
    eligible,
    (k) => verificationDraw(seed, salt, ids, k, clients.length),
  ).map((i) => clients[i].epochIndex);
}

function newSeat(verifier: number, stage: VerificationSeat["stage"]): VerificationSeat {
  return { verifier, stage, verdict: null, evidence: "None", detail: 0 };
}

/**
 * Samples the results of the round before the one that just started (its height − 1) and opens
 * their tasks, drawing from the new round's seed. Nothing happens in an epoch's first round, for
 * a results round that did not train, or with `verificationPercent` 0. The machine calls this
 * right after `startRoundTrain`, with the tick's `now`.
 */
export function openVerificationTasks(state: CoordinatorState, now: number): void {
  const percent = state.config.verificationPercent;
  const es = state.epochState;
  const current = es.rounds[es.roundsHead];
  if (percent === 0 || current.height === 0) return;
  const resultsRound = roundByHeight(state, current.height - 1);
  if (resultsRound === null || !isTrainingRound(state, resultsRound)) return;
  const assignments = roundAssignments(state, resultsRound);
  const free = MAX_VERIFICATION_TASKS - es.verificationTasks.length;
  const count = Math.min(free, verificationSampleCount(percent, assignments.length));
  if (count <= 0) return;
  const seed = current.randomSeed;
  const height = resultsRound.height;
  const sampled = pickDistinct(
    assignments.length,
    count,
    () => true,
    (k) => verificationDraw(seed, SAMPLE_SALT, [height, 0], k, assignments.length),
  ).sort((a, b) => a - b);
  const clientsThen = roundClients(state, height);
  for (const a of sampled) {
    const trainer = clientsThen[assignments[a].clientIndex];
    if (trainer === undefined) continue;
    const present = es.clients.find((c) => c.epochIndex === trainer.epochIndex);
    if (present === undefined || present.state !== "Healthy") {
      // Gone before the sample: its result is not applied, so leaving dodges nothing.
      reject(resultsRound, trainer.epochIndex);
      continue;
    }
    const seats = drawSeats(es.clients, new Set([trainer.epochIndex]), seed, VERIFIER_SALT, [
      height,
      trainer.epochIndex,
    ]);
    if (seats.length === 0) continue; // fewer than MIN_VERIFIERS_PER_TASK others: none can judge
    es.verificationTasks.push({
      height,
      trainer: trainer.epochIndex,
      stage: "Verify",
      deadline: current.height + VERIFICATION_STAGE_ROUNDS - 1,
      openedAt: now,
      decided: null,
      seats: seats.map((v) => newSeat(v, "Verify")),
    });
  }
}

function isIndex(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
}

/** Throws `InvalidVerification` unless `report` is well formed. */
function checkReportShape(report: VerificationReport): void {
  if (typeof report !== "object" || report === null) {
    throw new CoordinatorError("InvalidVerification", "the report is not an object");
  }
  if (!isIndex(report.height) || report.height > 0xffff_ffff || !isIndex(report.trainer)) {
    throw new CoordinatorError("InvalidVerification", "height and trainer must be integers");
  }
  if (report.verdict !== "Pass" && report.verdict !== "Fail") {
    throw new CoordinatorError("InvalidVerification", `unknown verdict ${String(report.verdict)}`);
  }
  if (!VERIFICATION_EVIDENCE.includes(report.evidence)) {
    throw new CoordinatorError(
      "InvalidVerification",
      `unknown evidence ${String(report.evidence)}`,
    );
  }
  if ((report.verdict === "Pass") !== (report.evidence === "None")) {
    throw new CoordinatorError(
      "InvalidVerification",
      "a pass carries no evidence and a fail names its evidence",
    );
  }
  if (!isIndex(report.detail) || report.detail > 0xffff_ffff) {
    throw new CoordinatorError("InvalidVerification", "detail must be a u32");
  }
}

/**
 * A seated verifier reports on a sampled result (the `verification_report` entry point). Allowed
 * in RoundTrain, RoundWitness and Cooldown, from a Healthy client of the epoch that holds a seat
 * of the task's current stage and has not reported yet. Decides the task as soon as a majority of
 * the stage's seats agree.
 *
 * Throws `Halted`, `WrongRunState` or `InvalidVerification` (malformed, no such open task, not
 * seated, already reported) before changing anything.
 */
export function verificationReport(
  state: CoordinatorState,
  from: NodeIdentity,
  report: VerificationReport,
): Outcome {
  assertNotHalted(state, "accept a verification report");
  const runState = state.runState;
  if (runState !== "RoundTrain" && runState !== "RoundWitness" && runState !== "Cooldown") {
    throw new CoordinatorError("WrongRunState", `verification report in ${runState}`);
  }
  checkReportShape(report);
  const reporter = state.epochState.clients.find((c) =>
    from?.signer instanceof Uint8Array && equalBytes(c.id.signer, from.signer)
  );
  if (reporter === undefined || reporter.state !== "Healthy") {
    throw new CoordinatorError(
      "InvalidVerification",
      "the sender is not a healthy client of this epoch",
    );
  }
  const task = findVerificationTask(state, report.height, report.trainer);
  if (task === undefined) {
    throw new CoordinatorError(
      "InvalidVerification",
      `no open task for trainer ${report.trainer}'s result of round ${report.height}`,
    );
  }
  const seat = task.seats.find((s) => s.stage === task.stage && s.verifier === reporter.epochIndex);
  if (seat === undefined) {
    throw new CoordinatorError(
      "InvalidVerification",
      `client ${reporter.epochIndex} holds no ${task.stage} seat of that task`,
    );
  }
  if (seat.verdict !== null) {
    throw new CoordinatorError(
      "InvalidVerification",
      `client ${reporter.epochIndex} already reported on that task`,
    );
  }
  seat.verdict = report.verdict;
  seat.evidence = report.evidence;
  seat.detail = report.detail;
  if (task.decided !== null) {
    // Late, after a majority decided: a report against the decision is a lie like any other.
    if (report.verdict !== task.decided) {
      const cause = task.decided === "Fail" ? "FalseVouch" : "FalseAccusation";
      eject(state, reporter.epochIndex, cause, "None", state.epochState.startStep + task.height);
    }
    return CHANGED;
  }
  const seats = stageSeats(task);
  const need = verificationMajority(seats.length);
  const count = (v: VerificationVerdict) => seats.filter((s) => s.verdict === v).length;
  if (count("Fail") >= need) decide(state, task, "Fail");
  else if (count("Pass") >= need) decide(state, task, "Pass");
  return CHANGED;
}

/**
 * Under verification, when round `round`'s RoundWitness ends with a quorum of its witnesses
 * reported: every elected witness of the round still Healthy that never reported is ejected as
 * IdleWitness. A witness reports as soon as RoundWitness starts, and the round waited for it until
 * all witnesses reported or `max_round_train_time` passed, so by now silence is a choice or a
 * crash; either way the seat did no work. A round short of its quorum is not judged here: nobody
 * proved the network was up (the TCP server withdraws and backs off its silent witnesses).
 */
export function ejectIdleWitnesses(state: CoordinatorState, round: Round): void {
  if (state.config.verificationPercent === 0) return;
  if (round.witnesses.length < roundWitnessQuorum(state.config, round)) return;
  const reported = new Set(round.witnesses.map((w) => w.proof.index));
  const then = roundClients(state, round.height);
  const step = state.epochState.startStep + round.height;
  for (const index of roundSelection(state.config, round).witnessIndices()) {
    if (reported.has(index) || then[index] === undefined) continue;
    const epochIndex = then[index].epochIndex;
    const live = state.epochState.clients.find((c) => c.epochIndex === epochIndex);
    if (live?.state === "Healthy") eject(state, epochIndex, "IdleWitness", "None", step);
  }
}

/**
 * Closes every stage whose deadline is `endedHeight` or earlier and which has lasted
 * {@linkcode verificationStageSeconds} by `now`; the machine calls this when that round's
 * RoundWitness ends, with the tick's time and seed (it seats tie-breakers).
 */
export function closeVerificationStages(
  state: CoordinatorState,
  endedHeight: number,
  now: number,
  seed: bigint,
): void {
  const es = state.epochState;
  const lasts = verificationStageSeconds(state.config);
  for (const task of [...es.verificationTasks]) {
    if (task.deadline > endedHeight || !timeReached(now, task.openedAt, lasts)) continue;
    const seats = stageSeats(task);
    const step = es.startStep + task.height;
    for (const s of seats) {
      if (s.verdict === null) eject(state, s.verifier, "IdleVerifier", "None", step);
    }
    if (task.decided !== null) {
      removeTask(state, task);
      continue;
    }
    const fails = seats.filter((s) => s.verdict === "Fail").length;
    const passes = seats.filter((s) => s.verdict === "Pass").length;
    if (task.stage === "TieBreak") {
      const need = verificationMajority(seats.length);
      if (fails >= need) decide(state, task, "Fail");
      else if (passes >= need) decide(state, task, "Pass");
      removeTask(state, task);
      continue;
    }
    if (fails === 0) {
      if (passes > 0) decide(state, task, "Pass");
      removeTask(state, task);
      continue;
    }
    // An accusation without a majority either way: fresh seats break the tie.
    const exclude = new Set([task.trainer, ...task.seats.map((s) => s.verifier)]);
    const breakers = drawSeats(es.clients, exclude, seed, TIE_BREAKER_SALT, [
      task.height,
      task.trainer,
    ]);
    if (breakers.length === 0) {
      removeTask(state, task);
      continue;
    }
    task.stage = "TieBreak";
    task.deadline = endedHeight + VERIFICATION_STAGE_ROUNDS;
    task.openedAt = now;
    task.seats.push(...breakers.map((v) => newSeat(v, "TieBreak")));
  }
}

/** Drops every open task (the epoch ended: its clients and rounds are gone). */
export function dropVerificationTasks(state: CoordinatorState): void {
  state.epochState.verificationTasks = [];
}

function removeTask(state: CoordinatorState, task: VerificationTask): void {
  const tasks = state.epochState.verificationTasks;
  const at = tasks.indexOf(task);
  if (at >= 0) tasks.splice(at, 1);
}

/**
 * Applies a decision, once: on Fail the trainer is ejected with the evidence of the first fail of
 * the deciding stage; every seat (of either stage) that already said the opposite is ejected as a
 * false voucher or accuser. The task stays open, decided, until its stage closes.
 */
function decide(state: CoordinatorState, task: VerificationTask, verdict: VerificationVerdict) {
  task.decided = verdict;
  const step = state.epochState.startStep + task.height;
  if (verdict === "Fail") {
    const first = stageSeats(task).find((s) => s.verdict === "Fail");
    eject(state, task.trainer, "FailedVerification", first?.evidence ?? "None", step);
  }
  for (const s of task.seats) {
    if (s.verdict === null || s.verdict === verdict) continue;
    eject(state, s.verifier, verdict === "Fail" ? "FalseVouch" : "FalseAccusation", "None", step);
  }
}

/**
 * Ejects client `epochIndex` of the epoch: marks it Ejected if it is still in the client list,
 * rejects its results of every round whose apply is not due yet (rounds `h − 1` and `h` during
 * round `h`; none in Cooldown, where every apply is due), and records it once per epoch, which
 * bars its signer until epoch `epoch + verificationBarEpochs + 1`.
 */
function eject(
  state: CoordinatorState,
  epochIndex: number,
  cause: EjectionCause,
  evidence: VerificationEvidence,
  step: number,
): void {
  const es = state.epochState;
  const client = es.clients.find((c) => c.epochIndex === epochIndex) ??
    es.exitedClients.find((c) => c.epochIndex === epochIndex);
  if (client === undefined) return;
  if (es.clients.includes(client)) client.state = "Ejected";
  if (state.runState === "RoundTrain" || state.runState === "RoundWitness") {
    const height = es.rounds[es.roundsHead].height;
    for (const h of [height - 1, height]) {
      const round = roundByHeight(state, h);
      if (round !== null) reject(round, epochIndex);
    }
  }
  const epoch = state.progress.epoch;
  const recorded = state.ejections.some((r) =>
    r.epoch === epoch && equalBytes(r.signer, client.id.signer)
  );
  if (recorded) return;
  const record: EjectionRecord = {
    signer: client.id.signer.slice(),
    epoch,
    step,
    cause,
    evidence,
    barredUntil: Math.min(0xffff, epoch + state.config.verificationBarEpochs + 1),
  };
  state.ejections.push(record);
  if (state.ejections.length > NUM_EJECTION_RECORDS) state.ejections.shift();
}
