import assert from "node:assert/strict";
import { encodeCoordinatorState } from "../encoding/mod.ts";
import {
  identity,
  testState,
  warmupReport,
  witnessReport,
} from "../../tests/support/coordinator_fixtures.ts";
import { CoordinatorHost, type HostEvent, type HostOptions } from "./host.ts";
import { eventLevel } from "./log.ts";
import { WEAK_POINTS } from "../../net/testing/weak_keys.ts";
import {
  CheckpointerSelection,
  type CoordinatorConfig,
  currentRound,
  NO_DIGEST,
  roundAssignments,
  roundByHeight,
  roundClients,
  roundSelection,
  unhealthyTrainers,
  type WitnessMetadata,
} from "../core/mod.ts";
import { toHex } from "../../common/mod.ts";

const SEED = 42n;
const META: WitnessMetadata = {
  step: 1,
  tokensPerSec: 10,
  bandwidthPerSec: 5,
  loss: 3.5,
  evals: [],
  promptResults: [],
  promptIndex: 0,
  efficiency: 1,
};

function newHost(
  withdrawOnDisconnect = true,
  initWarmupTime?: number,
  config: Partial<CoordinatorConfig> = {},
) {
  const state = testState({ initMinClients: 2, minClients: 2, witnessNodes: 0, ...config }, 100);
  return new CoordinatorHost({ state, withdrawOnDisconnect, initWarmupTime });
}

function join(host: CoordinatorHost, i: number, now = 100) {
  return host.handle(
    identity(i).signer,
    { kind: "Join", requestId: i, runId: host.state.runId },
    now,
    SEED,
  );
}

function kinds(events: HostEvent[]): string[] {
  return events.map((e) => e.kind);
}

/** Joins clients `order`, starts the epoch and sends every warmup witness: RoundTrain at 102. */
function trainingHost(
  order: number[],
  withdrawOnDisconnect = true,
  config: Partial<CoordinatorConfig> = {},
) {
  const host = newHost(withdrawOnDisconnect, undefined, config);
  startTraining(host, order);
  return host;
}

/** Joins clients `order` at 100, starts the epoch at 101 and sends every warmup witness at 102. */
function startTraining(host: CoordinatorHost, order: number[]) {
  for (const i of order) join(host, i);
  host.tick(101, SEED);
  assert.equal(host.state.runState, "Warmup");
  host.state.epochState.clients.forEach((c, index) => {
    const reply = host.handle(
      c.id.signer,
      {
        kind: "WarmupWitness",
        requestId: 9,
        witness: warmupReport(host.state, index),
        paramsDigest: NO_DIGEST,
      },
      102,
      SEED,
    );
    assert.deepEqual(reply, { kind: "Ack" });
  });
  assert.equal(host.state.runState, "RoundTrain");
}

Deno.test("the epoch's clients are the pending clients in join order", () => {
  const host = newHost();
  for (const i of [2, 0, 1]) assert.deepEqual(join(host, i), { kind: "Ack" });
  assert.equal(host.state.runState, "WaitingForMembers", "extra time not yet passed");
  host.tick(101, SEED);
  assert.equal(host.state.runState, "Warmup");
  assert.deepEqual(
    host.state.epochState.clients.map((c) => toHex(c.id.signer)),
    [2, 0, 1].map((i) => toHex(identity(i).signer)),
  );
  const events = host.takeEvents();
  assert.deepEqual(kinds(events), ["Joined", "Joined", "Joined", "StateChanged"]);
  assert.deepEqual(events[3], {
    kind: "StateChanged",
    from: "WaitingForMembers",
    to: "Warmup",
    epoch: 0,
    step: 1,
  });
});

Deno.test("a join with the wrong run id is refused naming both ids; a repeated join is one entry", () => {
  const host = newHost();
  const reply = host.handle(
    identity(0).signer,
    { kind: "Join", requestId: 1, runId: "other-run" },
    100,
    SEED,
  );
  assert.deepEqual(reply, {
    kind: "Refused",
    reason: `run id "other-run" does not match this coordinator's run "test-run"`,
  });
  assert.equal(host.pending().length, 0);
  join(host, 1);
  join(host, 1);
  assert.equal(host.pending().length, 1);
});

Deno.test("the pending list has a cap", () => {
  const host = new CoordinatorHost({
    state: testState(),
    withdrawOnDisconnect: true,
    maxPending: 1,
  });
  assert.deepEqual(join(host, 0), { kind: "Ack" });
  assert.deepEqual(join(host, 1), {
    kind: "Refused",
    reason: "the pending list is full (1 clients)",
  });
});

Deno.test("warmup witnesses start training; a rejected call leaves the state byte-identical", () => {
  const host = trainingHost([0, 1]);
  const before = encodeCoordinatorState(host.state);
  const version = host.version;
  // A warmup witness in RoundTrain is ignored; a witness with a forged proof is rejected.
  const forged = witnessReport(host.state, 0);
  forged.proof.position += 1;
  const reply = host.handle(
    identity(0).signer,
    { kind: "Witness", requestId: 5, witness: forged, metadata: META, paramsDigest: NO_DIGEST },
    102,
    SEED,
  );
  assert.equal(reply.kind, "Error");
  if (reply.kind === "Error") assert.equal(reply.code, "InvalidCommitteeProof");
  assert.deepEqual(encodeCoordinatorState(host.state), before);
  assert.equal(host.version, version);
  const rejected = host.takeEvents().find((e) => e.kind === "Rejected");
  assert.equal(rejected?.kind === "Rejected" && rejected.request, "Witness");
});

Deno.test("witnesses from every elected client move the round to RoundWitness", () => {
  const host = trainingHost([0, 1]);
  host.takeEvents();
  const selection = roundSelection(host.state.config, currentRound(host.state));
  for (const index of selection.witnessIndices()) {
    const client = host.state.epochState.clients[index].id.signer;
    const reply = host.handle(
      client,
      {
        kind: "Witness",
        requestId: 7,
        witness: witnessReport(host.state, index),
        metadata: META,
        paramsDigest: NO_DIGEST,
      },
      103,
      SEED,
    );
    assert.deepEqual(reply, { kind: "Ack" });
  }
  assert.equal(host.state.runState, "RoundWitness");
  const events = host.takeEvents();
  assert.ok(events.some((e) => e.kind === "Witness" && e.metadata.loss === 3.5));
  assert.ok(events.some((e) => e.kind === "StateChanged" && e.to === "RoundWitness"));
});

Deno.test("a witness report that arrives after its round ended is refused as late, not forged", () => {
  const state = testState({ initMinClients: 8, minClients: 2, witnessNodes: 2 }, 100);
  const host = new CoordinatorHost({ state, withdrawOnDisconnect: true });
  startTraining(host, [0, 1, 2, 3, 4, 5, 6, 7]);
  const send = (index: number, witness: ReturnType<typeof witnessReport>, now: number) =>
    host.handle(
      host.state.epochState.clients[index].id.signer,
      { kind: "Witness", requestId: 3, witness, metadata: META, paramsDigest: NO_DIGEST },
      now,
      SEED,
    );
  const round0 = roundSelection(host.state.config, currentRound(host.state));
  const reports = round0.witnessIndices().map((i) => ({
    index: i,
    report: witnessReport(host.state, i),
  }));
  for (const { index, report } of reports) {
    assert.deepEqual(send(index, report, 103), { kind: "Ack" });
  }
  // A new seed for round 1: the seats move.
  host.tick(103 + host.state.config.roundWitnessTime, SEED + 1n);
  assert.equal(currentRound(host.state).height, 1);
  const round1 = roundSelection(host.state.config, currentRound(host.state));
  const stale = reports.find((r) => !round1.verifyWitness(r.report.proof));
  assert.ok(stale, "every round-0 seat is a round-1 seat too: pick another seed");
  host.takeEvents();
  const reply = send(stale.index, stale.report, 110);
  assert.equal(reply.kind === "Error" && reply.code, "InvalidCommitteeProof");
  assert.match(
    reply.kind === "Error" ? reply.message : "",
    /^late: .* round 0, which already ended/,
  );
  const rejected = host.takeEvents().find((e) => e.kind === "Rejected");
  assert.ok(rejected?.kind === "Rejected" && rejected.late === true);
  assert.equal(eventLevel(rejected), "info");
  // A proof of no round at all stays a plain rejection, at warn.
  const forged = witnessReport(host.state, stale.index);
  forged.proof.position += 7;
  send(stale.index, forged, 111);
  const plain = host.takeEvents().find((e) => e.kind === "Rejected");
  assert.ok(plain?.kind === "Rejected" && plain.late === undefined);
  assert.equal(eventLevel(plain), "warn");
});

Deno.test("disconnect withdraws a client of the epoch only with the flag", () => {
  const withFlag = trainingHost([0, 1], true);
  withFlag.disconnect(identity(1).signer, 103, SEED);
  assert.equal(withFlag.state.epochState.clients[1].state, "Withdrawn");
  assert.equal(withFlag.pending().length, 1);
  const left = withFlag.takeEvents().find((e) => e.kind === "Left");
  assert.deepEqual(left, { kind: "Left", client: toHex(identity(1).signer), withdrawn: true });

  const withoutFlag = trainingHost([0, 1], false);
  withoutFlag.disconnect(identity(1).signer, 103, SEED);
  assert.equal(withoutFlag.state.epochState.clients[1].state, "Healthy");
  assert.equal(withoutFlag.pending().length, 1, "still leaves the pending list");
});

Deno.test("clients that leave the epoch unhealthy are dropped from pending once and may rejoin", () => {
  const host = trainingHost([0, 1]);
  host.takeEvents();
  const { maxRoundTrainTime, roundWitnessTime } = host.state.config;
  host.tick(102 + maxRoundTrainTime, SEED); // RoundWitness, nobody witnessed
  host.tick(102 + maxRoundTrainTime + roundWitnessTime, SEED); // Cooldown: everyone withdrawn
  assert.equal(host.state.runState, "Cooldown");
  assert.equal(host.pending().length, 0);
  const kicked = host.takeEvents().filter((e) => e.kind === "Kicked");
  assert.equal(kicked.length, 2);
  join(host, 0, 200);
  host.tick(201, SEED);
  assert.equal(host.pending().length, 1, "a rejoin is not kicked again");
});

Deno.test("--init-warmup-time holds until the run trains, then the configured time returns", () => {
  const host = newHost(true, 50);
  assert.equal(host.state.config.warmupTime, 50);
  assert.equal(host.configuredWarmupTime, 20);
  join(host, 0);
  join(host, 1);
  host.tick(101, SEED);
  host.tick(101 + 20, SEED);
  assert.equal(host.state.runState, "Warmup", "the configured 20 s are not enough");
  host.tick(101 + 50, SEED);
  assert.equal(host.state.runState, "RoundTrain");
  assert.equal(host.state.config.warmupTime, 20);
  assert.throws(
    () =>
      new CoordinatorHost({ state: testState(), withdrawOnDisconnect: true, initWarmupTime: 0 }),
    /initWarmupTime \(seconds\) must be > 0, found 0/,
  );
});

Deno.test("the data server admits exactly the epoch's clients for their own batches", () => {
  const host = newHost();
  assert.equal(host.authorizeData(identity(0).signer, { start: 0, end: 3 }), "NotInThisRound");
  const trained = trainingHost([0, 1]);
  const assignments = roundAssignments(trained.state, currentRound(trained.state));
  assert.ok(assignments.length > 0);
  for (const a of assignments) {
    const client = trained.state.epochState.clients[a.clientIndex].id.signer;
    assert.equal(trained.authorizeData(client, a.batch), "Allowed");
    assert.equal(
      trained.authorizeData(client, { start: a.batch.start, end: a.batch.end + 1 }),
      "WrongDataIdForStep",
    );
  }
  assert.equal(trained.authorizeData(identity(9).signer, assignments[0].batch), "NotInThisRound");
});

Deno.test("a health check drops an unseen trainer, who leaves the pending list", () => {
  const host = trainingHost([0, 1, 2]);
  const unseen = identity(2).signer;
  let now = 102;
  // Every round, the witnesses report seeing clients 0 and 1 only.
  while (currentRound(host.state).height < 2) {
    const state = host.state;
    const seen = state.epochState.clients.map((c) => c.id).filter((id) =>
      toHex(id.signer) !== toHex(unseen)
    );
    for (const index of roundSelection(state.config, currentRound(state)).witnessIndices()) {
      const reply = host.handle(
        state.epochState.clients[index].id.signer,
        {
          kind: "Witness",
          requestId: 1,
          witness: witnessReport(state, index, seen),
          metadata: META,
          paramsDigest: NO_DIGEST,
        },
        now,
        SEED,
      );
      assert.deepEqual(reply, { kind: "Ack" });
    }
    now += host.state.config.roundWitnessTime;
    host.tick(now, SEED);
    assert.equal(host.state.runState, "RoundTrain");
  }
  host.takeEvents();
  const checks = unhealthyTrainers(host.state);
  assert.deepEqual(checks.map((c) => toHex(c.id.signer)), [toHex(unseen)]);
  const reply = host.handle(
    identity(0).signer,
    { kind: "HealthCheck", requestId: 2, checks },
    now,
    SEED,
  );
  assert.deepEqual(reply, { kind: "Ack" });
  const dropped = host.state.epochState.clients.find((c) => toHex(c.id.signer) === toHex(unseen));
  assert.equal(dropped?.state, "Dropped");
  assert.deepEqual(
    host.takeEvents().filter((e) => e.kind === "HealthCheck" || e.kind === "Kicked"),
    [
      { kind: "Kicked", client: toHex(unseen), state: "Dropped" },
      { kind: "HealthCheck", client: toHex(identity(0).signer), dropped: 1 },
    ],
  );
  assert.equal(host.pending().length, 2);
  // Another witness reporting the same client drops nobody new (as in Psyche).
  const again = host.handle(
    identity(1).signer,
    { kind: "HealthCheck", requestId: 3, checks },
    now,
    SEED,
  );
  assert.deepEqual(again, { kind: "Ack" });
  assert.deepEqual(
    host.takeEvents().filter((e) => e.kind === "HealthCheck").map((e) =>
      e.kind === "HealthCheck" && e.dropped
    ),
    [0],
  );
});

Deno.test("a checkpointer's report is refused outside Cooldown and ends Cooldown in it", () => {
  // Total steps 2: round 0 is the epoch's (and the run's) last.
  const host = trainingHost([0, 1], true, { totalSteps: 2 });
  const repo = { kind: "Hub" as const, repo: { repoId: "org/model", revision: "abc123" } };
  const report = (i: number, requestId: number, now: number) =>
    host.handle(identity(i).signer, { kind: "Checkpoint", requestId, repo }, now, SEED);
  assert.deepEqual(report(1, 1, 103), {
    kind: "Error",
    code: "WrongRunState",
    message: "checkpoint report in RoundTrain: checkpointers report during Cooldown only",
  });
  assert.deepEqual(report(7, 2, 103), {
    kind: "Error",
    code: "InvalidCheckpoint",
    message: "the sender is not a client of this epoch",
  });
  const digest = new Uint8Array(32).fill(9);
  const selection = roundSelection(host.state.config, currentRound(host.state));
  const clients = host.state.epochState.clients;
  for (const index of selection.witnessIndices()) {
    host.handle(
      clients[index].id.signer,
      {
        kind: "Witness",
        requestId: 3,
        witness: witnessReport(host.state, index, clients.map((c) => c.id)),
        metadata: META,
        paramsDigest: NO_DIGEST,
      },
      104,
      SEED,
    );
  }
  host.tick(104 + host.state.config.roundWitnessTime, SEED);
  assert.equal(host.state.runState, "Cooldown");
  for (const index of selection.witnessIndices()) {
    host.handle(
      clients[index].id.signer,
      {
        kind: "CooldownWitness",
        requestId: 4,
        proof: selection.witnessProof(index),
        paramsDigest: digest,
      },
      107,
      SEED,
    );
  }
  host.takeEvents();
  const [elected] = CheckpointerSelection.fromState(host.state).indices();
  const signer = clients[elected].id.signer;
  const other = clients.findIndex((_, i) => i !== elected);
  const refused = host.handle(
    clients[other].id.signer,
    {
      kind: "Checkpoint",
      requestId: 5,
      repo,
    },
    107,
    SEED,
  );
  assert.equal(refused.kind === "Error" && refused.code, "InvalidCheckpoint");
  assert.deepEqual(
    host.handle(signer, { kind: "Checkpoint", requestId: 6, repo }, 108, SEED),
    { kind: "Ack" },
  );
  assert.equal(host.state.runState, "Finished", "the report ended Cooldown before its timer");
  assert.deepEqual(host.state.model.checkpoint, { kind: "P2P", repo: repo.repo });
  const events = host.takeEvents();
  assert.deepEqual(
    kinds(events).filter((k) => k !== "Rejected"),
    ["DigestRecorded", "StateChanged", "EpochEnd", "Checkpoint"],
  );
  assert.deepEqual(events.find((e) => e.kind === "Checkpoint"), {
    kind: "Checkpoint",
    client: toHex(signer),
    repo,
  });
});

Deno.test("a Join from a small-order key is refused, whatever backend carried it", () => {
  const host = newHost();
  for (const weak of WEAK_POINTS) {
    const reply = host.handle(
      weak.bytes,
      { kind: "Join", requestId: 1, runId: host.state.runId },
      100,
      SEED,
    );
    assert.deepEqual(reply, { kind: "Refused", reason: "public key is a small-order point" });
  }
  assert.equal(host.pending().length, 0);
  assert.deepEqual(join(host, 0), { kind: "Ack" }, "an ordinary key still joins");
});

Deno.test("a peer's run id is quoted escaped in the refusal: no raw newline or U+202E", () => {
  const host = newHost();
  const reply = host.handle(
    identity(0).signer,
    { kind: "Join", requestId: 1, runId: "x\nFAKE LOG\u202E" },
    100,
    SEED,
  );
  assert.deepEqual(reply, {
    kind: "Refused",
    reason: `run id "x\\nFAKE LOG\\u202e" does not match this coordinator's run "test-run"`,
  });
});

/** Rounds with witnesses seeing everyone but `unseen`, until height 2; returns `now`. */
function trainToHeight2(host: CoordinatorHost, unseen: Uint8Array, start = 102): number {
  let now = start;
  while (currentRound(host.state).height < 2) {
    const state = host.state;
    const seen = state.epochState.clients.map((c) => c.id).filter((id) =>
      toHex(id.signer) !== toHex(unseen)
    );
    for (const index of roundSelection(state.config, currentRound(state)).witnessIndices()) {
      host.handle(
        state.epochState.clients[index].id.signer,
        {
          kind: "Witness",
          requestId: 1,
          witness: witnessReport(state, index, seen),
          metadata: META,
          paramsDigest: NO_DIGEST,
        },
        now,
        SEED,
      );
    }
    now += host.state.config.roundWitnessTime;
    host.tick(now, SEED);
  }
  return now;
}

/** Ticks until the run waits for members again (nobody witnesses: everyone is withdrawn). */
function endEpoch(host: CoordinatorHost, now: number): number {
  const { maxRoundTrainTime, roundWitnessTime, cooldownTime } = host.state.config;
  for (const step of [maxRoundTrainTime, roundWitnessTime, cooldownTime]) {
    now += step;
    host.tick(now, SEED);
  }
  assert.equal(host.state.runState, "WaitingForMembers");
  return now;
}

/**
 * Client 2, which the witnesses never see, is dropped by a health check at height 2, and the
 * epoch runs to its end. Returns the time WaitingForMembers began.
 */
function dropClient2AndEndEpoch(host: CoordinatorHost): number {
  const now = trainToHeight2(host, identity(2).signer);
  host.handle(
    identity(0).signer,
    { kind: "HealthCheck", requestId: 2, checks: unhealthyTrainers(host.state) },
    now,
    SEED,
  );
  return endEpoch(host, now);
}

function trainingHostWith(order: number[], options: Partial<HostOptions>) {
  const state = testState({ initMinClients: 2, minClients: 2, witnessNodes: 0 }, 100);
  const host = new CoordinatorHost({ state, withdrawOnDisconnect: true, ...options });
  startTraining(host, order);
  return host;
}

Deno.test("a key dropped by a health check in epoch e waits in the pending list until epoch e + k", () => {
  const host = trainingHostWith([0, 1, 2], { joinBackoffEpochs: 1 });
  const unseen = identity(2).signer;
  let now = trainToHeight2(host, unseen);
  const checks = unhealthyTrainers(host.state);
  host.handle(identity(0).signer, { kind: "HealthCheck", requestId: 2, checks }, now, SEED);
  const name = toHex(unseen);
  assert.deepEqual(host.takeEvents().find((e) => e.kind === "BackedOff"), {
    kind: "BackedOff",
    client: name,
    cause: "HealthCheck",
    epoch: 0,
    until: 1,
  });
  const reason =
    "this key was dropped by a health check in epoch 0; it may join again from epoch 1";
  // The join is accepted (an honest client that was dropped rejoins by itself), deferred.
  assert.deepEqual(join(host, 2, now), { kind: "Ack" });
  assert.deepEqual(
    host.takeEvents().filter((e) => e.kind === "JoinDeferred"),
    [{ kind: "JoinDeferred", client: name, reason }],
  );
  assert.ok(host.pending().some((p) => toHex(p.signer) === name));
  now = endEpoch(host, now);
  assert.equal(host.state.progress.epoch, 1);
  // Epoch e + k: the next epoch takes it (with client 0, whom the epoch's end withdrew).
  assert.deepEqual(join(host, 0, now), { kind: "Ack" });
  host.tick(now + host.state.config.waitingForMembersExtraTime, SEED);
  assert.equal(host.state.runState, "Warmup");
  assert.ok(host.state.epochState.clients.some((c) => toHex(c.id.signer) === name));
});

Deno.test("the default back-off keeps a dropped key out of the next epoch", () => {
  const host = trainingHostWith([0, 1, 2], {});
  const later = dropClient2AndEndEpoch(host);
  assert.equal(host.state.progress.epoch, 1);
  assert.deepEqual(join(host, 2, later), { kind: "Ack" });
  assert.deepEqual(join(host, 0, later), { kind: "Ack" }, "a withdrawn key is not backed off");
  const deferred = host.takeEvents().flatMap((e) => e.kind === "JoinDeferred" ? [e] : []);
  assert.deepEqual(deferred.map((e) => e.client), [toHex(identity(2).signer)]);
  assert.match(deferred[0].reason, /it may join again from epoch 2$/);
  // Epoch 1 starts with fresh keys and leaves the dropped one waiting.
  for (const i of [3, 4]) assert.deepEqual(join(host, i, later), { kind: "Ack" });
  host.tick(later + host.state.config.waitingForMembersExtraTime, SEED);
  assert.equal(host.state.runState, "Warmup");
  const taken = host.state.epochState.clients.map((c) => toHex(c.id.signer));
  assert.ok(taken.includes(toHex(identity(3).signer)));
  assert.ok(!taken.includes(toHex(identity(2).signer)), "the dropped key sits out epoch 1");
  assert.ok(host.pending().some((p) => toHex(p.signer) === toHex(identity(2).signer)));
});

Deno.test("a run held by back-offs says so once, ticks when the wait lifts them, and starts", () => {
  // Issue 32's stall: init_min_clients = 3, one of the three clients backed off until epoch 3.
  const host = trainingHostWith([0, 1, 2], { joinBackoffEpochs: 3 });
  const later = dropClient2AndEndEpoch(host);
  assert.equal(host.state.progress.epoch, 1);
  host.state.config.initMinClients = 3;
  host.takeEvents();
  for (const i of [0, 1, 2]) assert.deepEqual(join(host, i, later), { kind: "Ack" });
  const { epochTime, waitingForMembersExtraTime } = host.state.config;
  const held = (events: HostEvent[]) => events.filter((e) => e.kind === "HeldByBars");
  // Two epochs of waiting serve the back-off (it ends at epoch 3; this is epoch 1).
  assert.deepEqual(held(host.takeEvents()), [{
    kind: "HeldByBars",
    joined: 3,
    eligible: 2,
    initMinClients: 3,
    liftsInSeconds: 2 * epochTime,
  }]);
  host.tick(later + waitingForMembersExtraTime, SEED);
  assert.deepEqual(held(host.takeEvents()), [], "said once");
  // The edge's timer wakes the run when the wait has lifted enough, not never.
  assert.equal(host.nextTickDeadline(), later + 2 * epochTime);
  host.tick(later + 2 * epochTime - 1, SEED);
  assert.equal(host.state.runState, "WaitingForMembers");
  host.tick(later + 2 * epochTime, SEED);
  assert.equal(host.state.runState, "Warmup");
  assert.equal(host.state.epochState.clients.length, 3);
});

Deno.test("a run whose pending list is too short however long it waits is not woken for it", () => {
  const host = trainingHostWith([0, 1, 2], { joinBackoffEpochs: 3 });
  const later = dropClient2AndEndEpoch(host);
  host.state.config.initMinClients = 3;
  for (const i of [0, 2]) join(host, i, later);
  assert.equal(host.nextTickDeadline(), null);
  assert.deepEqual(host.takeEvents().filter((e) => e.kind === "HeldByBars"), []);
});

Deno.test("witnesses that stay silent in a round without quorum are withdrawn and backed off", () => {
  const host = trainingHostWith([0, 1, 2], {});
  const state = host.state;
  const elected = roundSelection(state.config, currentRound(state)).witnessIndices();
  assert.deepEqual(elected, [0, 1, 2], "witnessNodes 0: everyone witnesses, quorum 2");
  const reporter = state.epochState.clients[0].id.signer;
  host.handle(
    reporter,
    {
      kind: "Witness",
      requestId: 1,
      witness: witnessReport(state, 0),
      metadata: META,
      paramsDigest: NO_DIGEST,
    },
    103,
    SEED,
  );
  host.tick(102 + state.config.maxRoundTrainTime, SEED);
  host.takeEvents();
  host.tick(102 + state.config.maxRoundTrainTime + state.config.roundWitnessTime, SEED);
  assert.equal(host.state.runState, "Cooldown", "one witness of three is no quorum");
  const exited = host.state.epochState.exitedClients;
  assert.deepEqual(exited.map((c) => c.state), ["Withdrawn", "Withdrawn"]);
  const silent = exited.map((c) => toHex(c.id.signer));
  assert.ok(!silent.includes(toHex(reporter)));
  const events = host.takeEvents();
  assert.deepEqual(
    events.filter((e) => e.kind === "BackedOff").map((e) => e.kind === "BackedOff" && e.client),
    silent,
  );
  assert.deepEqual(host.pending().map((p) => toHex(p.signer)), [toHex(reporter)]);
  const deferred = host.handle(
    exited[0].id.signer,
    { kind: "Join", requestId: 3, runId: "test-run" },
    200,
    SEED,
  );
  assert.deepEqual(deferred, { kind: "Ack" });
  const reasons = host.takeEvents().flatMap((e) => e.kind === "JoinDeferred" ? [e.reason] : []);
  assert.equal(reasons.length, 1);
  assert.match(
    reasons[0],
    /elected witness and did not report in a round that lacked a witness quorum in epoch 0/,
  );
});

Deno.test("a permissioned run refuses the joins of keys outside its allowlist", () => {
  const state = testState({}, 100);
  const host = new CoordinatorHost({
    state,
    withdrawOnDisconnect: true,
    authorizedKeys: new Set([toHex(identity(1).signer)]),
  });
  assert.equal(host.isAuthorized(identity(0).signer), false);
  assert.equal(host.isAuthorized(identity(1).signer), true);
  assert.deepEqual(join(host, 0), {
    kind: "Refused",
    reason: "this key is not in the run's authorized keys",
  });
  assert.deepEqual(join(host, 1), { kind: "Ack" });
  assert.equal(host.pending().length, 1);
});

Deno.test("members are the pending clients and the epoch's clients", () => {
  const host = trainingHostWith([0, 1], {});
  assert.ok(host.isMember(identity(0).signer), "a client of the epoch");
  assert.ok(!host.isMember(identity(5).signer));
  join(host, 5, 103);
  assert.ok(host.isMember(identity(5).signer), "pending");
  host.disconnect(identity(5).signer, 103, SEED);
  assert.ok(!host.isMember(identity(5).signer), "left");
});

Deno.test("a health check is refused on its head: non-member sender, more entries than clients", () => {
  const host = trainingHostWith([0, 1, 2], {});
  trainToHeight2(host, identity(2).signer);
  host.takeEvents();
  const head = (entries: number) => ({ kind: "HealthCheck" as const, requestId: 1, entries });
  assert.deepEqual(host.precheck(identity(7).signer, head(1)), {
    kind: "Error",
    code: "InvalidHealthCheck",
    message: "the sender is not a client of this epoch",
  });
  assert.deepEqual(host.precheck(identity(0).signer, head(65_535)), {
    kind: "Error",
    code: "InvalidHealthCheck",
    message: "a report lists 1..3 clients, found 65535",
  });
  assert.equal(host.precheck(identity(0).signer, head(1)), null, "decode and handle it");
  assert.equal(
    host.precheck(identity(7).signer, { kind: "Join", requestId: 1, entries: null }),
    null,
  );
  assert.deepEqual(
    host.takeEvents().map((e) => e.kind === "Rejected" && e.code),
    ["InvalidHealthCheck", "InvalidHealthCheck"],
  );
});

Deno.test("a health check naming a client twice is refused before the second proof is checked", () => {
  const host = trainingHostWith([0, 1, 2], {});
  const now = trainToHeight2(host, identity(2).signer);
  const [check] = unhealthyTrainers(host.state);
  const forged = { ...check, proof: { ...check.proof, position: check.proof.position + 1 } };
  const reply = host.handle(
    identity(0).signer,
    { kind: "HealthCheck", requestId: 2, checks: [check, forged] },
    now,
    SEED,
  );
  assert.deepEqual(reply, {
    kind: "Error",
    code: "InvalidHealthCheck",
    message: "entry 1 names a client listed before",
  });
});

Deno.test("a client withdraws itself: Withdrawn, not backed off, and it may join again", () => {
  const host = trainingHostWith([0, 1, 2], {});
  const me = identity(1).signer;
  assert.deepEqual(host.handle(me, { kind: "Withdraw", requestId: 4 }, 103, SEED), {
    kind: "Ack",
  });
  const client = host.state.epochState.clients.find((c) => toHex(c.id.signer) === toHex(me));
  assert.equal(client?.state, "Withdrawn");
  assert.ok(host.takeEvents().some((e) => e.kind === "Left" && e.withdrawn));
  // Twice is refused with the coordinator's error; the connection stays.
  const again = host.handle(me, { kind: "Withdraw", requestId: 5 }, 103, SEED);
  assert.equal(again.kind === "Error" && again.code, "InvalidWithdraw");
  // Its Join is taken at once (no back-off) and kept in the pending list.
  assert.deepEqual(join(host, 1, 104), { kind: "Ack" });
  assert.ok(!host.takeEvents().some((e) => e.kind === "JoinDeferred"));
  host.tick(105, SEED);
  assert.ok(host.pending().some((p) => toHex(p.signer) === toHex(me)));
});

Deno.test("a round's end says its witnesses, whether its timer ended training, and untrained batches", () => {
  const host = trainingHost([0, 1]);
  const { maxRoundTrainTime, roundWitnessTime } = host.state.config;
  const witnessAll = (now: number, seen: number[]) => {
    const state = host.state;
    for (const index of roundSelection(state.config, currentRound(state)).witnessIndices()) {
      const reply = host.handle(
        state.epochState.clients[index].id.signer,
        {
          kind: "Witness",
          requestId: 1,
          witness: witnessReport(state, index, seen.map(identity)),
          metadata: META,
          paramsDigest: NO_DIGEST,
        },
        now,
        SEED,
      );
      assert.deepEqual(reply, { kind: "Ack" });
    }
  };
  const roundEnds = () => host.takeEvents().filter((e) => e.kind === "RoundEnd");
  // Round 0: both witnesses report at once, so RoundTrain ends by them, not by its timer, and
  // with every witness in, RoundWitness has nothing to wait for: it ends in the next ms.
  let now = 103;
  witnessAll(now, [0, 1]);
  assert.equal(host.state.runState, "RoundWitness");
  host.tick(now, SEED);
  assert.equal(host.state.runState, "RoundWitness", "never two transitions at one instant");
  host.takeEvents();
  now += 0.001;
  host.tick(now, SEED);
  const events = host.takeEvents();
  assert.deepEqual(kinds(events), ["RoundEnd", "StateChanged"]);
  assert.deepEqual(events[0], {
    kind: "RoundEnd",
    height: 0,
    step: 1,
    witnesses: 2,
    quorum: 2,
    trainTimedOut: false,
    batches: 0,
    untrainedBatches: 0,
  });
  // Round 1: RoundTrain ends by its timer; the witnesses then saw client 0's payload only.
  assert.equal(currentRound(host.state).height, 1);
  now += maxRoundTrainTime;
  host.tick(now, SEED);
  assert.equal(host.state.runState, "RoundWitness");
  witnessAll(now, [0]);
  now += roundWitnessTime;
  host.tick(now, SEED);
  assert.deepEqual(roundEnds(), [{
    kind: "RoundEnd",
    height: 1,
    step: 2,
    witnesses: 2,
    quorum: 2,
    trainTimedOut: true,
    batches: 2,
    untrainedBatches: 1,
  }]);
  // Round 2: one witness of two is no quorum; the round ends into Cooldown, still counted.
  const state = host.state;
  const index = roundSelection(state.config, currentRound(state)).witnessIndices()[0];
  host.handle(
    state.epochState.clients[index].id.signer,
    {
      kind: "Witness",
      requestId: 2,
      witness: witnessReport(state, index, [identity(0), identity(1)]),
      metadata: META,
      paramsDigest: NO_DIGEST,
    },
    now,
    SEED,
  );
  now += maxRoundTrainTime;
  host.tick(now, SEED);
  now += roundWitnessTime;
  host.tick(now, SEED);
  assert.equal(host.state.runState, "Cooldown");
  const last = roundEnds();
  assert.deepEqual(last.map((e) => e.kind === "RoundEnd" && [e.height, e.witnesses, e.quorum]), [
    [2, 1, 2],
  ]);
  assert.equal(last[0].kind === "RoundEnd" && last[0].trainTimedOut, true);
  assert.equal(
    last[0].kind === "RoundEnd" && last[0].untrainedBatches,
    2,
    "seen by one witness, below the quorum: nothing of round 1 can be applied",
  );
});

Deno.test("an epoch whose last round nobody witnessed ends with cause no_witnesses", () => {
  const host = trainingHost([0, 1]);
  const { maxRoundTrainTime, roundWitnessTime, cooldownTime } = host.state.config;
  // Round 0 trains, and nobody reports: the epoch ends unattested.
  let now = 103 + maxRoundTrainTime;
  host.tick(now, SEED);
  now += roundWitnessTime;
  host.tick(now, SEED);
  assert.equal(host.state.runState, "Cooldown");
  host.takeEvents();
  now += cooldownTime;
  host.tick(now, SEED);
  const ends = host.takeEvents().filter((e) => e.kind === "EpochEnd");
  assert.deepEqual(ends, [{
    kind: "EpochEnd",
    epoch: 1,
    step: 2,
    success: true,
    cause: "no_witnesses",
  }]);
});

const NOTICE = {
  step: 1,
  bytesSent: 1000,
  bytesReceived: 2000,
  tokensPerSec: 50,
  breakdownMs: { train: 100, encode: 10, exchange: 40, apply: 5, wait: 1 },
};

function notify(host: CoordinatorHost, i: number, step: number, bytesSent = 1000, now = 103) {
  return host.handle(
    identity(i).signer,
    { kind: "Telemetry", requestId: 0, telemetry: { ...NOTICE, step, bytesSent } },
    now,
    SEED,
  );
}

Deno.test("a member's telemetry is kept once per step; it never touches the run's state", () => {
  const host = trainingHost([0, 1]);
  host.takeEvents();
  const before = encodeCoordinatorState(host.state);
  const version = host.version;
  const step = host.state.progress.step;
  assert.deepEqual(notify(host, 0, step), { kind: "Noted" }, "a notice is never answered");
  assert.deepEqual(host.takeEvents(), [{
    kind: "Telemetry",
    client: toHex(identity(0).signer),
    telemetry: { ...NOTICE, step },
  }]);
  assert.equal(host.telemetry(toHex(identity(0).signer))?.bytesSent, 1000);
  assert.equal(host.telemetry(toHex(identity(1).signer)), null, "one client's notice only");
  notify(host, 0, step, 9999); // the same step again: dropped silently
  assert.deepEqual(host.takeEvents(), []);
  assert.equal(host.telemetry(toHex(identity(0).signer))?.bytesSent, 1000, "the first kept");
  assert.equal(host.staleTelemetry, 1);
  assert.equal(host.version, version, "no state change");
  assert.deepEqual(encodeCoordinatorState(host.state), before, "state byte-identical");
  host.disconnect(identity(0).signer, 104, SEED);
  assert.equal(host.telemetry(toHex(identity(0).signer)), null, "forgotten when it leaves");
});

Deno.test("telemetry from a non-member, or for a step the run has not reached, is dropped", () => {
  const host = trainingHost([0, 1]);
  host.takeEvents();
  const step = host.state.progress.step;
  notify(host, 7, step);
  assert.deepEqual(host.takeEvents(), [{
    kind: "TelemetryDropped",
    client: toHex(identity(7).signer),
    step,
    reason: "the sender is not a member of the run",
  }]);
  notify(host, 0, step + 1);
  const [future] = host.takeEvents();
  assert.equal(future.kind, "TelemetryDropped");
  assert.match(
    (future as { reason: string }).reason,
    new RegExp(`reports step ${step + 1}, the run is at step ${step}`),
  );
  assert.equal(host.telemetryClients, 0);
});

Deno.test("a flood of telemetry keeps one entry and one event per member and step", () => {
  const host = trainingHost([0, 1]);
  host.takeEvents();
  const step = host.state.progress.step;
  for (let n = 0; n < 10_000; n++) notify(host, 0, step - (n % 2), n);
  const events = host.takeEvents();
  assert.equal(events.length, 1, "one event for the step reported first");
  assert.equal(host.telemetryClients, 1);
  assert.equal(host.staleTelemetry, 9_999);
});

Deno.test("a notice never ticks: past a deadline, the run waits for its own tick", () => {
  const host = trainingHost([0, 1]);
  const version = host.version;
  notify(host, 0, host.state.progress.step, 1000, 1_000_000);
  assert.equal(host.state.runState, "RoundTrain");
  assert.equal(host.version, version);
  host.tick(1_000_000, SEED);
  assert.notEqual(host.state.runState, "RoundTrain", "a tick then moves it");
});

Deno.test("verification: a sample opens a task, two fails eject the trainer, its join is deferred", () => {
  const state = testState(
    { initMinClients: 5, minClients: 2, witnessNodes: 0, verificationPercent: 10 },
    100,
  );
  const host = new CoordinatorHost({ state, withdrawOnDisconnect: false });
  startTraining(host, [0, 1, 2, 3, 4]);
  host.takeEvents();
  trainToHeight2(host, new Uint8Array(32)); // round 1's start samples round 0
  const opened = host.takeEvents().filter((e) => e.kind === "VerificationOpened");
  assert.ok(opened.length >= 1);
  const task = host.state.epochState.verificationTasks.find((t) => t.height === 1) ??
    host.state.epochState.verificationTasks[0];
  const byIndex = (i: number) => host.state.epochState.clients.find((c) => c.epochIndex === i)!;
  const trainer = byIndex(task.trainer);
  const seats = task.seats.map((s) => byIndex(s.verifier));
  // A seated verifier may fetch the trainer's batch of that round (its replay's input), rounds
  // later; a client without a seat may not.
  const sampledRound = roundByHeight(host.state, task.height)!;
  const trainerIndex = roundClients(host.state, task.height).indexOf(trainer);
  const sampled = roundAssignments(host.state, sampledRound)
    .find((a) => a.clientIndex === trainerIndex)!.batch;
  const unseated = host.state.epochState.clients.find((c) => c !== trainer && !seats.includes(c))!;
  const current = roundAssignments(host.state, currentRound(host.state)).map((a) => a.batch);
  assert.ok(!current.some((b) => b.start === sampled.start), "the batch is not the round's");
  assert.equal(host.authorizeData(seats[0].id.signer, sampled), "Allowed");
  assert.equal(host.authorizeData(unseated.id.signer, sampled), "WrongDataIdForStep");
  const report = (i: number, requestId: number) =>
    host.handle(
      seats[i].id.signer,
      {
        kind: "Verification",
        requestId,
        report: {
          height: task.height,
          trainer: task.trainer,
          verdict: "Fail",
          evidence: "StateMismatch",
          detail: 250_000,
        },
      },
      200,
      SEED,
    );
  assert.deepEqual(report(0, 1), { kind: "Ack" });
  assert.deepEqual(report(1, 2), { kind: "Ack" });
  const events = host.takeEvents();
  assert.deepEqual(
    kinds(events).filter((k) => k.startsWith("Verification") || k === "Ejected"),
    ["VerificationReport", "Ejected", "VerificationReport"],
  );
  const ejected = events.find((e) => e.kind === "Ejected");
  assert.ok(ejected?.kind === "Ejected" && ejected.cause === "FailedVerification");
  assert.equal(ejected.client, toHex(trainer.id.signer));
  assert.equal(ejected.evidence, "StateMismatch");
  assert.equal(trainer.state, "Ejected");
  // Decided, the task stays open for the last seat, whose agreeing report is taken.
  assert.deepEqual(report(2, 3), { kind: "Ack" });
  assert.ok(!kinds(host.takeEvents()).includes("Ejected"));
  // The ejected key may join, but waits out its bar.
  host.handle(
    trainer.id.signer,
    { kind: "Join", requestId: 4, runId: host.state.runId },
    201,
    SEED,
  );
  const deferred = host.takeEvents().find((e) => e.kind === "JoinDeferred");
  assert.ok(deferred?.kind === "JoinDeferred");
  assert.match(
    deferred.reason,
    /ejected by verification in epoch 0 \(FailedVerification\); it may join again from epoch 5/,
  );
});
