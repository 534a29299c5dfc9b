import assert from "node:assert/strict";
import { CoordinatorError } from "./errors.ts";
import { createCoordinator, tick } from "./machine.ts";
import { currentRound, isTrainingRound, roundBatchSize } from "./machine_queries.ts";
import { pause, withdraw } from "./machine_membership.ts";
import {
  identities,
  identity,
  RunDriver,
  testConfig,
  testModel,
  testState,
  witnessIndices,
  witnessReport,
} from "../../tests/support/coordinator_fixtures.ts";
import { witness } from "./machine_witness.ts";

function assertCode(fn: () => unknown, code: string): void {
  assert.throws(fn, (e: unknown) => e instanceof CoordinatorError && e.code === code);
}

/** A run in RoundTrain of round 0 with `n` clients. */
function inRoundTrain(n = 4, config = {}): RunDriver {
  const d = new RunDriver(testState(config));
  d.startEpoch(identities(n));
  d.warmupTimeout();
  assert.equal(d.state.runState, "RoundTrain");
  return d;
}

Deno.test("createCoordinator: fresh run waits for members; rejects bad config fields by name", () => {
  const s = testState({}, 100);
  assert.equal(s.runState, "WaitingForMembers");
  assert.equal(s.runStateStartUnixTimestamp, 100);
  assert.deepEqual(s.progress, { epoch: 0, step: 1, epochStartDataIndex: 0 });
  assert.throws(
    () =>
      createCoordinator({
        runId: "x",
        config: testConfig({ warmupTime: 30 }),
        model: testModel(),
        now: 0,
      }),
    /config\.warmupTime must be < epochTime \(30\), found 30/,
  );
  assert.throws(
    () =>
      createCoordinator({
        runId: "x",
        config: testConfig({ witnessNodes: 3 }),
        model: testModel(),
        now: 0,
      }),
    /config\.witnessNodes/,
  );
  assert.throws(
    () => createCoordinator({ runId: "", config: testConfig(), model: testModel(), now: 0 }),
    /runId/,
  );
  assert.throws(
    () =>
      createCoordinator({
        runId: "x",
        config: testConfig(),
        model: testModel({ snapshotDtype: "f16" as "f32" }),
        now: 0,
      }),
    /^RangeError: model\.snapshotDtype must be one of "f32", "bf16", found "f16"$/,
  );
  const bf16 = testState({}, 0, { snapshotDtype: "bf16" });
  assert.equal(bf16.model.snapshotDtype, "bf16");
});

Deno.test("halted states reject ticks with Halted", () => {
  const s = testState();
  s.runState = "Paused";
  assertCode(() => tick(s, null, 10, 1n), "Halted");
  s.runState = "Finished";
  assertCode(() => tick(s, null, 10, 1n), "Halted");
  s.runState = "Uninitialized";
  assertCode(() => tick(s, null, 10, 1n), "Halted");
});

Deno.test("tick rejects a bad clock or seed with RangeError before changing anything", () => {
  const s = testState();
  assert.throws(() => tick(s, identities(2), 1.0005, 1n), /millisecond precision, found 1.0005/);
  assert.throws(() => tick(s, identities(2), -1, 1n), RangeError);
  assert.throws(() => tick(s, identities(2), 5, -1n), RangeError);
  assert.throws(() => tick(s, identities(2), 5, 1n << 64n), RangeError);
  assert.equal(s.runState, "WaitingForMembers");
});

Deno.test("WaitingForMembers: no pending list or too few pending clients changes nothing", () => {
  const s = testState({ initMinClients: 3, minClients: 2 });
  assert.deepEqual(tick(s, null, 50, 1n), { kind: "Unchanged" });
  assert.deepEqual(tick(s, identities(2), 50, 1n), { kind: "Unchanged" });
  assert.equal(s.runState, "WaitingForMembers");
});

Deno.test("WaitingForMembers: waits the extra time and never moves in the second it began", () => {
  const s = testState({ waitingForMembersExtraTime: 5 }, 10);
  assert.deepEqual(tick(s, identities(2), 10, 1n), { kind: "Unchanged" });
  assert.deepEqual(tick(s, identities(2), 14, 1n), { kind: "Unchanged" });
  assert.deepEqual(tick(s, identities(2), 15, 1n), { kind: "Changed" });
  assert.equal(s.runState, "Warmup");
});

Deno.test("WaitingForMembers -> Warmup: clients in join order, capped at maxClients", () => {
  const s = testState({ maxClients: 3, initMinClients: 2 }, 0);
  const pending = [identity(9), identity(2), identity(5), identity(7)];
  assert.deepEqual(tick(s, pending, 1, 1n), { kind: "Changed" });
  assert.equal(s.runState, "Warmup");
  const es = s.epochState;
  assert.deepEqual(es.clients.map((c) => c.id.signer), pending.slice(0, 3).map((p) => p.signer));
  assert.deepEqual(es.clients.map((c) => c.epochIndex), [0, 1, 2]);
  assert.ok(es.clients.every((c) => c.state === "Healthy"));
  assert.equal(es.firstRound, true);
  assert.equal(es.startStep, 1);
  assert.equal(es.startTimestamp, 1);
  // Stored identities are copies: the host may reuse its buffers.
  pending[0].signer[0] ^= 0xff;
  assert.notEqual(es.clients[0].id.signer[0], pending[0].signer[0]);
});

Deno.test("WaitingForMembers: a repeated pending signer is a RangeError and changes nothing", () => {
  const s = testState();
  const before = structuredClone(s);
  assert.throws(() => tick(s, [identity(1), identity(1)], 5, 1n), /repeats an earlier signer/);
  assert.deepEqual(s, before);
});

Deno.test("WaitingForMembers -> Warmup: P2P falls back to Hub unless a previous client returns", () => {
  const s = testState();
  s.model.checkpoint = { kind: "P2P", repo: { repoId: "org/m", revision: "abc" } };
  s.epochState.clients = [{
    id: identity(1),
    state: "Healthy",
    exitedHeight: 0,
    epochIndex: 0,
  }];
  const back = structuredClone(s);
  tick(back, [identity(5), identity(1)], 5, 1n);
  assert.equal(back.model.checkpoint.kind, "P2P");
  tick(s, [identity(5), identity(6)], 5, 1n);
  assert.deepEqual(s.model.checkpoint, { kind: "Hub", repo: { repoId: "org/m", revision: "abc" } });
});

Deno.test("Warmup -> RoundTrain by timer: round 0 at the epoch's data index with the tick's seed", () => {
  const d = new RunDriver(testState());
  d.state.progress.epochStartDataIndex = 40;
  d.startEpoch(identities(3));
  assert.deepEqual(d.tick(d.state.config.warmupTime - 1), { kind: "Unchanged" });
  assert.deepEqual(tick(d.state, null, d.now + 1, 77n), { kind: "Changed" });
  assert.equal(d.state.runState, "RoundTrain");
  const r = currentRound(d.state);
  assert.deepEqual(
    { head: d.state.epochState.roundsHead, h: r.height, di: r.dataIndex, n: r.clientsLen },
    { head: 0, h: 0, di: 40, n: 3 },
  );
  assert.equal(r.randomSeed, 77n);
});

Deno.test("Warmup: a withdrawn client leaves at the next tick with exitedHeight 0", () => {
  const d = new RunDriver(testState());
  d.startEpoch(identities(3));
  withdraw(d.state, 1);
  assert.deepEqual(d.tick(1), { kind: "Changed" });
  assert.deepEqual(d.state.epochState.clients.map((c) => c.epochIndex), [0, 2]);
  assert.deepEqual(
    d.state.epochState.exitedClients.map((c) => [c.epochIndex, c.state, c.exitedHeight]),
    [[1, "Withdrawn", 0]],
  );
  assert.equal(d.state.runState, "Warmup");
});

Deno.test("Warmup -> WaitingForMembers below minClients: EpochEnd(false), epoch not counted", () => {
  const d = new RunDriver(testState({ minClients: 2 }));
  d.startEpoch(identities(2));
  withdraw(d.state, 0);
  assert.deepEqual(d.tick(1), { kind: "EpochEnd", success: false });
  assert.equal(d.state.runState, "WaitingForMembers");
  assert.equal(d.state.progress.epoch, 0);
});

Deno.test("Warmup -> Finished below minClients when totalSteps is already reached", () => {
  const d = new RunDriver(testState({ totalSteps: 1 }));
  d.startEpoch(identities(2));
  withdraw(d.state, 0);
  assert.deepEqual(d.tick(1), { kind: "EpochEnd", success: false });
  assert.equal(d.state.runState, "Finished");
});

Deno.test("RoundTrain -> RoundWitness by timer, not in the second the round began", () => {
  const d = inRoundTrain();
  assert.deepEqual(d.tick(0), { kind: "Unchanged" });
  assert.deepEqual(d.tick(d.state.config.maxRoundTrainTime - 1), { kind: "Unchanged" });
  assert.deepEqual(d.tick(1), { kind: "Changed" });
  assert.equal(d.state.runState, "RoundWitness");
});

Deno.test("RoundTrain -> RoundWitness once a quorum of the expected witnesses reported", () => {
  // 6 clients, all witnesses: 6 expected, quorum 4.
  const d = inRoundTrain(6, { witnessNodes: 0 });
  const seats = witnessIndices(d.state);
  assert.equal(seats.length, 6);
  const clients = d.state.epochState.clients;
  const report = (i: number) => witness(d.state, clients[i].id, witnessReport(d.state, i), d.now);
  for (const i of seats.slice(0, 3)) report(i);
  assert.equal(d.state.runState, "RoundTrain");
  report(seats[3]);
  assert.equal(d.state.runState, "RoundWitness");
  assert.equal(d.state.runStateStartUnixTimestamp, d.now);
  // The rest still report, in RoundWitness, and count.
  for (const i of seats.slice(4)) report(i);
  assert.equal(currentRound(d.state).witnesses.length, 6);
  assert.equal(d.state.runState, "RoundWitness");
});

Deno.test("RoundWitness ends in the next millisecond once every expected witness reported", () => {
  const d = inRoundTrain(3);
  d.witnessAll();
  assert.equal(d.state.runState, "RoundWitness");
  assert.deepEqual(d.tick(0), { kind: "Unchanged" }, "never two transitions at one instant");
  assert.deepEqual(d.tick(0.001), { kind: "Changed" });
  assert.equal(d.state.runState, "RoundTrain");
  assert.equal(d.state.progress.step, 2);
});

Deno.test("a verifying run keeps its witness window even with every witness in", () => {
  const d = inRoundTrain(3, { verificationPercent: 10 });
  d.witnessAll();
  assert.deepEqual(d.tick(d.state.config.roundWitnessTime - 0.001), { kind: "Unchanged" });
  assert.deepEqual(d.tick(0.001), { kind: "Changed" });
  assert.equal(d.state.runState, "RoundTrain");
});

Deno.test("RoundWitness waits its time; then starts the next round with the ramped data index", () => {
  const d = inRoundTrain(3, {
    globalBatchSizeStart: 4,
    globalBatchSizeEnd: 12,
    globalBatchSizeWarmupTokens: 1000,
  });
  d.witnessFirst(2); // a quorum of 3: the third may still report
  const r0 = currentRound(d.state);
  assert.deepEqual(d.tick(d.state.config.roundWitnessTime - 1), { kind: "Unchanged" });
  assert.deepEqual(d.tick(1), { kind: "Changed" });
  assert.equal(d.state.runState, "RoundTrain");
  const r1 = currentRound(d.state);
  assert.equal(d.state.epochState.roundsHead, 1);
  assert.equal(r1.height, 1);
  assert.equal(r1.dataIndex, r0.dataIndex + 4);
  assert.equal(d.state.progress.step, 2);
  assert.equal(d.state.epochState.firstRound, false);
  // Round 1 at data index 4 (64 tokens): 4 + 8 * 64 / 1000 = 4.5 -> 5 sequences.
  assert.equal(roundBatchSize(d.state, r1), 5);
  d.fullRound();
  assert.equal(currentRound(d.state).dataIndex, 9);
});

Deno.test("RoundWitness -> Cooldown with no witnesses: everyone is withdrawn", () => {
  const d = inRoundTrain(3);
  d.tick(d.state.config.maxRoundTrainTime);
  assert.deepEqual(d.witnessTimeout(), { kind: "WindDown", cause: "no_witnesses" });
  assert.equal(d.state.runState, "Cooldown");
  assert.ok(d.state.epochState.clients.every((c) => c.state === "Withdrawn"));
});

Deno.test("RoundWitness -> Cooldown when fewer witnesses than the quorum reported", () => {
  const d = inRoundTrain(5, { witnessNodes: 0 });
  // 5 expected witnesses, quorum 3; two report.
  const clients = d.state.epochState.clients;
  for (const i of witnessIndices(d.state).slice(0, 2)) {
    witness(d.state, clients[i].id, witnessReport(d.state, i), d.now);
  }
  d.tick(d.state.config.maxRoundTrainTime);
  assert.deepEqual(d.witnessTimeout(), { kind: "WindDown", cause: "witness_quorum_lost" });
  assert.equal(d.state.runState, "Cooldown");
  assert.ok(d.state.epochState.clients.every((c) => c.state === "Healthy"));
});

Deno.test("RoundWitness -> Cooldown when clients fall below minClients", () => {
  const d = inRoundTrain(3, { minClients: 3, initMinClients: 3 });
  withdraw(d.state, 2);
  d.witnessAll();
  assert.deepEqual(d.witnessTimeout(), { kind: "WindDown", cause: "too_few_clients" });
  assert.equal(d.state.runState, "Cooldown");
  assert.equal(d.state.epochState.clients.length, 2);
  assert.equal(d.state.epochState.exitedClients[0].exitedHeight, 1);
});

Deno.test("RoundWitness -> Cooldown at totalSteps, then Finished", () => {
  const d = inRoundTrain(2, { totalSteps: 2 });
  assert.deepEqual(d.fullRound(), { kind: "WindDown", cause: "total_steps" });
  assert.equal(d.state.runState, "Cooldown");
  assert.equal(d.state.progress.step, 2);
  assert.deepEqual(d.tick(d.state.config.cooldownTime), { kind: "EpochEnd", success: true });
  assert.equal(d.state.runState, "Finished");
});

Deno.test("RoundWitness -> Cooldown when a pause is pending", () => {
  const d = inRoundTrain(2);
  pause(d.state, d.now);
  assert.equal(d.state.pendingPause, true);
  assert.deepEqual(d.fullRound(), { kind: "WindDown", cause: "pause" });
  assert.equal(d.state.runState, "Cooldown");
});

Deno.test("epoch timer: two apply-only rounds (lastStep = step + 2), at least 4 rounds", () => {
  // epochTime 30; rounds take 7 s (5 train + 2 witness) unless witnessed early.
  const d = inRoundTrain(2, { epochTime: 30 });
  const es = d.state.epochState;
  // Witnessing early makes rounds short: 3 rounds end before the epoch timer fires.
  d.fullRound();
  d.fullRound();
  assert.equal(es.lastStep, 0);
  d.now += 40; // The epoch timer has fired, but the epoch has had only 2 rounds.
  d.fullRound(); // ends round 2: step 4, 4 + 2 - 1 = 5 >= 4 rounds
  assert.equal(d.state.progress.step, 4);
  assert.equal(es.lastStep, 6);
  assert.equal(isTrainingRound(d.state, currentRound(d.state)), false);
  assert.equal(isTrainingRound(d.state, es.rounds[2]), true);
  assert.deepEqual(d.fullRound(), { kind: "Changed" });
  assert.equal(d.state.runState, "RoundTrain");
  assert.deepEqual(d.fullRound(), { kind: "WindDown", cause: "epoch_time" });
  assert.equal(d.state.runState, "Cooldown");
  assert.equal(d.state.progress.step, 6);
});

Deno.test("a round without witnesses ends the epoch as unattested, whatever else holds", () => {
  // Total steps reached, a pause pending and the epoch timer fired: the missing witnesses
  // still name the cause, since nobody attested the round.
  const d = inRoundTrain(2, { totalSteps: 2, epochTime: 30 });
  pause(d.state, d.now);
  d.now += 40;
  d.tick(d.state.config.maxRoundTrainTime);
  assert.deepEqual(d.witnessTimeout(), { kind: "WindDown", cause: "no_witnesses" });
  assert.equal(d.state.epochState.lastStep, 0, "no wind-down planned for an unattested epoch");
});

Deno.test("the run's end and a pause outrank the epoch timer as a cause", () => {
  const d = inRoundTrain(2, { totalSteps: 6, epochTime: 30 });
  d.fullRound();
  d.fullRound();
  d.now += 40;
  d.fullRound(); // step 4: the timer plans the last step at 6, the run's last too
  assert.equal(d.state.epochState.lastStep, 6);
  d.fullRound();
  assert.deepEqual(d.fullRound(), { kind: "WindDown", cause: "total_steps" });
});

Deno.test("epoch timer: lastStep waits until the epoch would have 4 rounds", () => {
  const d = inRoundTrain(2, { epochTime: 30 });
  d.now += 40;
  d.fullRound(); // step 2: 2 + 2 - 1 = 3 rounds only
  assert.equal(d.state.epochState.lastStep, 0);
  d.fullRound(); // step 3: 3 + 2 - 1 = 4 rounds
  assert.equal(d.state.epochState.lastStep, 5);
});

Deno.test("Cooldown -> WaitingForMembers: EpochEnd(true), epoch + 1, next data index, P2P checkpoint", () => {
  const d = inRoundTrain(2, { totalSteps: 100 });
  d.fullRound();
  const clients = d.state.epochState.clients;
  withdraw(d.state, 1);
  d.witnessAll([clients[0].id, clients[1].id]);
  d.witnessTimeout(); // one client left: below minClients (2)
  assert.equal(d.state.runState, "Cooldown");
  const last = currentRound(d.state);
  assert.deepEqual(d.tick(d.state.config.cooldownTime - 1), { kind: "Unchanged" });
  assert.deepEqual(d.tick(1), { kind: "EpochEnd", success: true });
  assert.equal(d.state.runState, "WaitingForMembers");
  assert.equal(d.state.progress.epoch, 1);
  assert.equal(
    d.state.progress.epochStartDataIndex,
    last.dataIndex + roundBatchSize(d.state, last),
  );
  assert.deepEqual(d.state.model.checkpoint, {
    kind: "P2P",
    repo: { repoId: "org/model", revision: null },
  });
  assert.equal(d.state.epochState.coldStartEpoch, false);
  assert.equal(d.state.epochState.clients.length, 1);
});

Deno.test("Cooldown -> Paused when a pause is pending: withdrawn, next epoch is a cold start", () => {
  const d = inRoundTrain(2);
  pause(d.state, d.now);
  d.fullRound();
  assert.deepEqual(d.tick(d.state.config.cooldownTime), { kind: "EpochEnd", success: true });
  assert.equal(d.state.runState, "Paused");
  assert.equal(d.state.pendingPause, false);
  assert.equal(d.state.epochState.coldStartEpoch, true);
  assert.ok(d.state.epochState.clients.every((c) => c.state === "Withdrawn"));
});

Deno.test("the tick outcome of an in-place call is Unchanged exactly when the state is", () => {
  const d = inRoundTrain(3);
  const before = structuredClone(d.state);
  assert.deepEqual(d.tick(1), { kind: "Unchanged" });
  assert.deepEqual(d.state, before);
});

Deno.test("createCoordinator: can start Paused; keeps its own copies of the inputs", () => {
  const config = testConfig();
  const model = testModel();
  const s = createCoordinator({ runId: "r", config, model, now: 7, paused: true });
  assert.equal(s.runState, "Paused");
  config.minClients = 99;
  (model.checkpoint as { repo: { repoId: string } }).repo.repoId = "changed";
  assert.equal(s.config.minClients, 2);
  assert.deepEqual(s.model.checkpoint, {
    kind: "Hub",
    repo: { repoId: "org/model", revision: null },
  });
});
