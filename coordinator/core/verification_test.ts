import assert from "node:assert/strict";
import {
  identities,
  identity,
  RunDriver,
  testState,
  witnessIndices,
  witnessReport,
} from "../../tests/support/coordinator_fixtures.ts";
import { witness } from "./machine_witness.ts";
import { CoordinatorError } from "./errors.ts";
import { roundByHeight } from "./machine_queries.ts";
import { withdraw } from "./machine_membership.ts";
import {
  barEpoch,
  barredUntil,
  pickDistinct,
  stageSeats,
  verificationDraw,
  verificationMajority,
  verificationReport,
  verificationSampleCount,
} from "./verification.ts";
import type {
  CoordinatorConfig,
  CoordinatorState,
  EjectionRecord,
  VerificationReport,
  VerificationTask,
} from "./types.ts";
import { MAX_SAMPLES_PER_ROUND, NUM_EJECTION_RECORDS } from "./types.ts";
import { encodeCoordinatorState } from "../encoding/mod.ts";

/**
 * A run of `n` clients in round 1, whose start sampled round 0 (`verificationPercent` 10: one
 * task). Later rounds sample nothing (the percentage is set to 0), so a test follows one task.
 */
function verifyingRun(n: number, config: Partial<CoordinatorConfig> = {}): RunDriver {
  const d = new RunDriver(
    testState({
      verificationPercent: 10,
      initMinClients: n,
      minClients: 2,
      epochTime: 1000,
      maxRoundTrainTime: 1, // stages last 2 s: the two 2-second rounds of `fullRound`
      ...config,
    }),
  );
  d.startEpoch(identities(n));
  d.warmupTimeout();
  d.fullRound();
  d.state.config.verificationPercent = 0;
  return d;
}

function onlyTask(state: CoordinatorState): VerificationTask {
  assert.equal(state.epochState.verificationTasks.length, 1);
  return state.epochState.verificationTasks[0];
}

function clientOf(state: CoordinatorState, epochIndex: number) {
  const c = state.epochState.clients.find((c) => c.epochIndex === epochIndex) ??
    state.epochState.exitedClients.find((c) => c.epochIndex === epochIndex);
  assert.ok(c, `client ${epochIndex}`);
  return c;
}

/** Seat `seat` of the task's current stage reports. */
function report(
  state: CoordinatorState,
  task: VerificationTask,
  seat: number,
  verdict: "Pass" | "Fail",
) {
  const verifier = stageSeats(task)[seat].verifier;
  const r: VerificationReport = {
    height: task.height,
    trainer: task.trainer,
    verdict,
    evidence: verdict === "Pass" ? "None" : "ResultMismatch",
    detail: verdict === "Pass" ? 0 : 812_000,
  };
  return verificationReport(state, clientOf(state, verifier).id, r);
}

Deno.test("sample counts: 0 at 0%, at least one above it, a share, capped", () => {
  assert.equal(verificationSampleCount(0, 50), 0);
  assert.equal(verificationSampleCount(10, 0), 0);
  assert.equal(verificationSampleCount(1, 3), 1);
  assert.equal(verificationSampleCount(25, 12), 3);
  assert.equal(verificationSampleCount(100, 2), 2);
  assert.equal(verificationSampleCount(100, 200), MAX_SAMPLES_PER_ROUND);
  assert.deepEqual([1, 2, 3, 4, 5].map(verificationMajority), [1, 2, 2, 3, 3]);
});

Deno.test("draws are deterministic, in range, and tell tasks apart", () => {
  const a = Array.from({ length: 50 }, (_, k) => verificationDraw(77n, "verifier", [3, 1], k, 9));
  assert.deepEqual(
    a,
    Array.from({ length: 50 }, (_, k) => verificationDraw(77n, "verifier", [3, 1], k, 9)),
  );
  assert.ok(a.every((i) => Number.isInteger(i) && i >= 0 && i < 9));
  assert.ok(new Set(a).size > 5, "draws spread over the range");
  const b = Array.from({ length: 50 }, (_, k) => verificationDraw(77n, "verifier", [3, 2], k, 9));
  assert.notDeepEqual(a, b);
});

Deno.test("pickDistinct: distinct eligible picks, and a scan when draws never hit", () => {
  const picked = pickDistinct(10, 3, (i) => i % 2 === 0, (k) => (k * 7) % 10);
  assert.equal(picked.length, 3);
  assert.equal(new Set(picked).size, 3);
  assert.ok(picked.every((i) => i % 2 === 0));
  // Every draw lands on an ineligible index: the scan completes the committee in index order.
  assert.deepEqual(pickDistinct(10, 2, (i) => i >= 7, () => 0), [7, 8]);
  assert.deepEqual(pickDistinct(3, 5, () => true, () => 1), [1, 0, 2]);
});

Deno.test("round 1's start samples round 0: seats are distinct Healthy others", () => {
  const d = verifyingRun(5, { verificationPercent: 100 });
  const tasks = d.state.epochState.verificationTasks;
  // 8 sequences over 5 trainers: 5 batches, 100% sampled, capped at MAX_SAMPLES_PER_ROUND.
  assert.equal(tasks.length, MAX_SAMPLES_PER_ROUND);
  assert.equal(new Set(tasks.map((t) => t.trainer)).size, tasks.length);
  for (const t of tasks) {
    assert.equal(t.height, 0);
    assert.equal(t.stage, "Verify");
    assert.equal(t.deadline, 2, "opened in round 1, closes when round 2 ends");
    const seats = t.seats.map((s) => s.verifier);
    assert.equal(seats.length, 3);
    assert.equal(new Set(seats).size, 3);
    assert.ok(!seats.includes(t.trainer));
    assert.ok(t.seats.every((s) => s.verdict === null && s.stage === "Verify"));
  }
  // The same seeds sample the same results.
  assert.deepEqual(
    verifyingRun(5, { verificationPercent: 100 }).state.epochState.verificationTasks,
    tasks,
  );
});

Deno.test("nothing is sampled at 0%, in round 0, or with fewer than two possible verifiers", () => {
  assert.equal(
    verifyingRun(5, { verificationPercent: 0 }).state.epochState.verificationTasks.length,
    0,
  );
  const d = new RunDriver(testState({ verificationPercent: 100, initMinClients: 3 }));
  d.startEpoch(identities(3));
  d.warmupTimeout();
  assert.equal(d.state.epochState.verificationTasks.length, 0, "round 0 has no results round");
  // Two clients: the trainer's only peer cannot judge alone.
  assert.equal(verifyingRun(2).state.epochState.verificationTasks.length, 0);
  // Three: two verifiers, a majority of two.
  assert.equal(onlyTask(verifyingRun(3).state).seats.length, 2);
});

Deno.test("a majority of fails ejects the trainer, rejects its unapplied results, bars it", () => {
  const d = verifyingRun(5, { verificationBarEpochs: 3 });
  const { state } = d;
  const task = onlyTask(state);
  report(state, task, 0, "Fail");
  assert.equal(clientOf(state, task.trainer).state, "Healthy", "one fail is not a majority");
  report(state, task, 1, "Fail");
  assert.equal(clientOf(state, task.trainer).state, "Ejected");
  assert.equal(task.decided, "Fail");
  assert.equal(state.epochState.verificationTasks.length, 1, "open until its stage closes");
  // Round 0's results apply when round 2 starts, round 1's when round 3 does: both rejected.
  assert.deepEqual(roundByHeight(state, 0)!.rejected, [task.trainer]);
  assert.deepEqual(roundByHeight(state, 1)!.rejected, [task.trainer]);
  const record = state.ejections.at(-1)!;
  assert.deepEqual(record, {
    signer: clientOf(state, task.trainer).id.signer,
    epoch: 0,
    step: state.epochState.startStep,
    cause: "FailedVerification",
    evidence: "ResultMismatch",
    barredUntil: 4,
  });
  assert.equal(state.ejections.length, 1, "the agreeing verifiers are not ejected");
  // The third seat still owes its report; agreeing late changes nothing.
  report(state, task, 2, "Fail");
  assert.equal(state.ejections.length, 1);
  // The ejected client leaves with the round.
  d.fullRound();
  assert.ok(!state.epochState.clients.some((c) => c.epochIndex === task.trainer));
});

Deno.test("a seat that vouched for a failed result is ejected too", () => {
  const { state } = verifyingRun(5);
  const task = onlyTask(state);
  report(state, task, 0, "Pass");
  report(state, task, 1, "Fail");
  report(state, task, 2, "Fail");
  const voucher = clientOf(state, task.seats[0].verifier);
  assert.equal(voucher.state, "Ejected");
  assert.deepEqual(
    state.ejections.map((r) => r.cause),
    ["FailedVerification", "FalseVouch"],
  );
});

Deno.test("a majority of passes clears the trainer and ejects its accuser", () => {
  const { state } = verifyingRun(5);
  const task = onlyTask(state);
  report(state, task, 0, "Fail");
  report(state, task, 1, "Pass");
  report(state, task, 2, "Pass");
  assert.equal(clientOf(state, task.trainer).state, "Healthy");
  assert.equal(clientOf(state, task.seats[0].verifier).state, "Ejected");
  assert.deepEqual(state.ejections.map((r) => [r.cause, r.evidence]), [[
    "FalseAccusation",
    "None",
  ]]);
  assert.deepEqual(roundByHeight(state, 0)!.rejected, [task.seats[0].verifier]);
});

Deno.test("a decided task stays open: a late contrary report is ejected, a silent seat is idle", () => {
  for (const decided of ["Pass", "Fail"] as const) {
    const other = decided === "Pass" ? "Fail" : "Pass";
    const late = verifyingRun(5);
    const task = onlyTask(late.state);
    report(late.state, task, 0, decided);
    report(late.state, task, 1, decided);
    assert.equal(task.decided, decided);
    report(late.state, task, 2, other);
    assert.equal(clientOf(late.state, task.seats[2].verifier).state, "Ejected");
    assert.equal(
      late.state.ejections.at(-1)!.cause,
      decided === "Pass" ? "FalseAccusation" : "FalseVouch",
    );

    const silent = verifyingRun(5);
    const quiet = onlyTask(silent.state);
    report(silent.state, quiet, 0, decided);
    report(silent.state, quiet, 1, decided);
    silent.fullRound();
    silent.fullRound(); // round 2 ends: the stage closes
    assert.equal(silent.state.epochState.verificationTasks.length, 0);
    assert.deepEqual(
      silent.state.ejections.filter((r) => r.cause === "IdleVerifier").map((r) => r.signer),
      [clientOf(silent.state, quiet.seats[2].verifier).id.signer],
    );
  }
});

/**
 * Round 1 of `verifyingRun(5)` (5 witnesses, quorum 3) with only `reporting` of its witnesses
 * reporting, run to its end by the timers; returns the silent ones' signers.
 */
function roundWithSilentWitnesses(d: RunDriver, reporting: number): Uint8Array[] {
  const indices = witnessIndices(d.state);
  const everyone = d.state.epochState.clients.map((c) => c.id);
  for (const index of indices.slice(0, reporting)) {
    const from = d.state.epochState.clients[index].id;
    witness(d.state, from, witnessReport(d.state, index, everyone), d.now);
  }
  d.tick(d.state.config.maxRoundTrainTime); // the silent witnesses hold RoundTrain to its limit
  assert.equal(d.state.runState, "RoundWitness");
  d.witnessTimeout();
  return indices.slice(reporting).map((i) => clientOf(d.state, i).id.signer);
}

Deno.test("an elected witness silent in a round that reached its quorum is ejected as idle", () => {
  const d = verifyingRun(5);
  d.state.config.verificationPercent = 10;
  const silent = roundWithSilentWitnesses(d, 4);
  assert.deepEqual(d.state.ejections.map((r) => [r.cause, r.signer, r.step]), [
    ["IdleWitness", silent[0], d.state.epochState.startStep + 1],
  ]);
  assert.equal(d.state.epochState.clients.length, 4, "it left with the round");

  // Not without verification, and not in a round short of its quorum (the network may be down).
  const off = verifyingRun(5);
  roundWithSilentWitnesses(off, 4);
  const short = verifyingRun(5);
  short.state.config.verificationPercent = 10;
  roundWithSilentWitnesses(short, 2);
  assert.deepEqual([...off.state.ejections, ...short.state.ejections], []);
});

Deno.test("refused reports change nothing", () => {
  const { state } = verifyingRun(5);
  const task = onlyTask(state);
  const before = encodeCoordinatorState(state);
  const seated = clientOf(state, task.seats[0].verifier).id;
  const stranger = state.epochState.clients.find((c) =>
    c.epochIndex !== task.trainer && !task.seats.some((s) => s.verifier === c.epochIndex)
  )!;
  const ok: VerificationReport = {
    height: 0,
    trainer: task.trainer,
    verdict: "Pass",
    evidence: "None",
    detail: 0,
  };
  const refused = (from: typeof seated, r: VerificationReport, pattern: RegExp) =>
    assert.throws(
      () => verificationReport(state, from, r),
      (e: unknown) => e instanceof CoordinatorError && pattern.test(e.message),
    );
  refused(stranger.id, ok, /holds no Verify seat/);
  refused(identity(99), ok, /not a healthy client/);
  refused(seated, { ...ok, height: 1 }, /no open task/);
  refused(seated, { ...ok, evidence: "ChainBreak" }, /a pass carries no evidence/);
  refused(seated, { ...ok, verdict: "Fail" }, /a fail names its evidence/);
  refused(seated, { ...ok, verdict: "Maybe" as never }, /unknown verdict/);
  refused(seated, { ...ok, detail: 2 ** 32 }, /detail must be a u32/);
  refused(seated, null as never, /not an object/);
  assert.deepEqual(encodeCoordinatorState(state), before);
  verificationReport(state, seated, ok);
  refused(seated, ok, /already reported/);
});

Deno.test("reports are refused outside rounds and Cooldown", () => {
  const state = testState({ verificationPercent: 10 });
  assert.throws(
    () =>
      verificationReport(state, identity(0), {
        height: 0,
        trainer: 0,
        verdict: "Pass",
        evidence: "None",
        detail: 0,
      }),
    /WrongRunState/,
  );
});

Deno.test("at the deadline: silent seats are ejected as idle, passes alone clear", () => {
  const d = verifyingRun(5);
  const task = onlyTask(d.state);
  report(d.state, task, 0, "Pass");
  d.fullRound(); // round 1 ends: the stage runs until round 2 ends
  assert.equal(d.state.epochState.verificationTasks.length, 1);
  d.fullRound(); // round 2 ends
  assert.equal(d.state.epochState.verificationTasks.length, 0);
  assert.deepEqual(d.state.ejections.map((r) => r.cause), ["IdleVerifier", "IdleVerifier"]);
  const idle = new Set(d.state.ejections.map((r) => r.signer.join()));
  assert.ok(!idle.has(clientOf(d.state, task.trainer).id.signer.join()));
  assert.ok(!idle.has(clientOf(d.state, task.seats[0].verifier).id.signer.join()));
});

Deno.test("a contested stage goes to fresh tie-breakers, whose majority decides both sides", () => {
  for (const breakers of ["Fail", "Pass"] as const) {
    const d = verifyingRun(7);
    const task = onlyTask(d.state);
    const [accuser, voucher, silent] = task.seats.map((s) => s.verifier);
    report(d.state, task, 0, "Fail");
    report(d.state, task, 1, "Pass");
    d.fullRound();
    d.fullRound(); // the Verify stage closes undecided
    assert.equal(task.stage, "TieBreak");
    assert.equal(task.deadline, 4);
    const tie = stageSeats(task);
    assert.equal(tie.length, 3);
    assert.ok(tie.every((s) => ![task.trainer, accuser, voucher, silent].includes(s.verifier)));
    assert.equal(clientOf(d.state, silent).state, "Ejected", "the silent seat was idle");
    report(d.state, task, 0, breakers);
    report(d.state, task, 1, breakers);
    const trainer = clientOf(d.state, task.trainer);
    if (breakers === "Fail") {
      assert.equal(trainer.state, "Ejected");
      assert.equal(clientOf(d.state, voucher).state, "Ejected");
      assert.equal(clientOf(d.state, accuser).state, "Healthy");
      assert.deepEqual(d.state.ejections.map((r) => r.cause), [
        "IdleVerifier",
        "FailedVerification",
        "FalseVouch",
      ]);
    } else {
      assert.equal(trainer.state, "Healthy");
      assert.equal(clientOf(d.state, accuser).state, "Ejected");
      assert.equal(clientOf(d.state, voucher).state, "Healthy");
      assert.deepEqual(d.state.ejections.map((r) => r.cause), [
        "IdleVerifier",
        "FalseAccusation",
      ]);
    }
  }
});

Deno.test("a tie-break without a majority, or without anyone left to break it, decides nothing", () => {
  const d = verifyingRun(6);
  const task = onlyTask(d.state);
  report(d.state, task, 0, "Fail");
  report(d.state, task, 1, "Pass");
  report(d.state, task, 2, "Pass"); // decided: Pass
  assert.equal(task.decided, "Pass");

  const e = verifyingRun(6);
  const t = onlyTask(e.state);
  report(e.state, t, 0, "Fail");
  report(e.state, t, 1, "Pass");
  e.fullRound();
  e.fullRound();
  assert.equal(t.stage, "TieBreak");
  assert.equal(stageSeats(t).length, 2, "6 clients: the trainer, 3 seats, 2 tie-breakers");
  report(e.state, t, 0, "Fail");
  report(e.state, t, 1, "Pass");
  e.fullRound();
  e.fullRound(); // round 4 ends: the tie-break closes split
  assert.equal(e.state.epochState.verificationTasks.length, 0);
  assert.equal(clientOf(e.state, t.trainer).state, "Healthy");
  assert.deepEqual(e.state.ejections.map((r) => r.cause), ["IdleVerifier"]);

  // Four clients: the trainer and its three seats are everyone.
  const f = verifyingRun(4);
  const u = onlyTask(f.state);
  report(f.state, u, 0, "Fail");
  report(f.state, u, 1, "Pass");
  f.fullRound();
  f.fullRound();
  assert.equal(f.state.epochState.verificationTasks.length, 0);
  assert.equal(clientOf(f.state, u.trainer).state, "Healthy");
});

Deno.test("a sampled trainer that left before the sample has its result rejected", () => {
  // Same seeds, same sample: find whom round 1 samples, then have it leave during round 0.
  const sampled = onlyTask(verifyingRun(5).state).trainer;
  const d = new RunDriver(
    testState({ verificationPercent: 10, initMinClients: 5, minClients: 2, epochTime: 1000 }),
  );
  d.startEpoch(identities(5));
  d.warmupTimeout();
  withdraw(d.state, d.state.epochState.clients.findIndex((c) => c.epochIndex === sampled));
  d.fullRound();
  assert.equal(d.state.epochState.verificationTasks.length, 0);
  assert.deepEqual(roundByHeight(d.state, 0)!.rejected, [sampled]);
  assert.equal(d.state.ejections.length, 0, "leaving is not an offence");
});

Deno.test("an ejection in Cooldown rejects nothing: every apply is already due", () => {
  const d = verifyingRun(5, { totalSteps: 3 });
  const task = onlyTask(d.state);
  d.fullRound(); // round 1 ends at step 3: Cooldown
  assert.equal(d.state.runState, "Cooldown");
  report(d.state, task, 0, "Fail");
  report(d.state, task, 1, "Fail");
  assert.equal(clientOf(d.state, task.trainer).state, "Ejected");
  for (const h of [0, 1]) assert.deepEqual(roundByHeight(d.state, h)!.rejected, []);
  d.tick(d.state.config.cooldownTime);
  assert.equal(d.state.epochState.verificationTasks.length, 0);
});

function record(i: number, overrides: Partial<EjectionRecord> = {}): EjectionRecord {
  return {
    signer: identity(i).signer,
    epoch: 0,
    step: 1,
    cause: "FailedVerification",
    evidence: "StateMismatch",
    barredUntil: 2,
    ...overrides,
  };
}

Deno.test("a barred signer does not count towards initMinClients and is not chosen", () => {
  const state = testState({ initMinClients: 3, minClients: 1 });
  state.ejections = [record(0)];
  state.progress.epoch = 1;
  assert.equal(barredUntil(state, identity(0).signer), 2);
  assert.equal(barredUntil(state, identity(1).signer), null);
  const d = new RunDriver(state);
  d.startEpoch(identities(3));
  assert.equal(state.runState, "WaitingForMembers", "two free clients of three");
  state.config.initMinClients = 2;
  d.startEpoch(identities(3));
  assert.equal(state.runState, "Warmup");
  assert.deepEqual(
    state.epochState.clients.map((c) => c.id.signer),
    [identity(1).signer, identity(2).signer],
  );
  // From epoch 2 the bar is over.
  const later = testState({ initMinClients: 3, minClients: 1 });
  later.ejections = [record(0)];
  later.progress.epoch = 2;
  assert.equal(barredUntil(later, identity(0).signer), null);
  new RunDriver(later).startEpoch(identities(3));
  assert.equal(later.epochState.clients.length, 3);
});

Deno.test("a run held by a bar waits an epochTime per barred epoch, and the bar is then served", () => {
  // The only clients there are: one free is too few, the barred one is needed.
  const state = testState({ initMinClients: 2, minClients: 1 });
  state.ejections = [record(0, { barredUntil: 3 })];
  state.progress.epoch = 1;
  const { epochTime } = state.config;
  const d = new RunDriver(state);
  assert.equal(barEpoch(state, d.now), 1);
  d.tick(2 * epochTime - 1, identities(2));
  assert.equal(barEpoch(state, d.now), 2);
  assert.equal(state.runState, "WaitingForMembers", "one epoch waited of the two barred");
  d.tick(1, identities(2));
  assert.equal(state.runState, "Warmup");
  assert.equal(state.epochState.clients.length, 2);
  // Served for good: the record stays (for the incentives) and bars no later epoch.
  assert.equal(state.ejections.length, 1);
  assert.equal(state.ejections[0].barredUntil, 1);
  assert.equal(barredUntil(state, identity(0).signer, 2), null);
  // Outside WaitingForMembers, bars count epochs only.
  assert.equal(barEpoch(state, d.now + 10 * epochTime), 1);
});

Deno.test("a wait serves only the bars it outlasted", () => {
  const state = testState({ initMinClients: 2, minClients: 1 });
  state.ejections = [record(0, { barredUntil: 4 }), record(1, { barredUntil: 2 })];
  state.progress.epoch = 1;
  const d = new RunDriver(state);
  // One epochTime waited serves client 1's bar; clients 1 and 2 start the epoch without 0.
  d.tick(state.config.epochTime, identities(3));
  assert.equal(state.runState, "Warmup");
  assert.deepEqual(
    state.epochState.clients.map((c) => c.id.signer),
    [identity(1).signer, identity(2).signer],
  );
  assert.deepEqual(state.ejections.map((r) => r.barredUntil), [4, 1]);
});

Deno.test("ejection records are kept to the newest NUM_EJECTION_RECORDS", () => {
  const d = verifyingRun(5);
  d.state.ejections = Array.from({ length: NUM_EJECTION_RECORDS }, (_, i) => record(100 + i));
  const task = onlyTask(d.state);
  report(d.state, task, 0, "Fail");
  report(d.state, task, 1, "Fail");
  assert.equal(d.state.ejections.length, NUM_EJECTION_RECORDS);
  assert.deepEqual(d.state.ejections[0].signer, identity(101).signer);
  assert.equal(d.state.ejections.at(-1)!.cause, "FailedVerification");
});

Deno.test("the verification state round trips through the state encoding", async () => {
  const { decodeCoordinatorState } = await import("../encoding/mod.ts");
  const d = verifyingRun(5, { verificationPercent: 100 });
  const task = d.state.epochState.verificationTasks[0];
  report(d.state, task, 0, "Pass");
  const other = d.state.epochState.verificationTasks[1];
  report(d.state, other, 0, "Fail");
  report(d.state, other, 1, "Fail");
  assert.ok(d.state.ejections.length > 0);
  assert.deepEqual(decodeCoordinatorState(encodeCoordinatorState(d.state)), d.state);
  assert.throws(
    () => encodeCoordinatorState(d.state, { version: 4 }),
    /cannot be written in state encoding version 4 \(verification needs version 5\)/,
  );
});

Deno.test("a stage lasts at least twice max_round_train_time, however fast the rounds go", () => {
  const d = verifyingRun(5, { maxRoundTrainTime: 5 }); // 10 s; each fullRound takes 2 s
  const task = onlyTask(d.state);
  assert.equal(task.openedAt, d.now);
  d.fullRound();
  d.fullRound(); // the deadline round ended, 4 s in: not yet
  assert.equal(d.state.epochState.verificationTasks.length, 1);
  d.fullRound();
  d.fullRound(); // 8 s
  assert.equal(d.state.epochState.verificationTasks.length, 1);
  d.fullRound(); // 10 s: the silent seats are idle now
  assert.equal(d.state.epochState.verificationTasks.length, 0);
  assert.deepEqual(d.state.ejections.map((r) => r.cause), [
    "IdleVerifier",
    "IdleVerifier",
    "IdleVerifier",
  ]);
});
