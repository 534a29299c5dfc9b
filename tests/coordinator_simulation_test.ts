/**
 * Protocol simulations: whole runs of the pure coordinator driven by a simulated host and
 * clients (tests/support/coordinator_sim.ts). Every call is followed by the invariant
 * checks (batches assigned once and contiguously, legal edges only, data index strictly
 * increasing, client lists rebuildable), so each scenario also checks those throughout.
 */

import assert from "node:assert/strict";
import { type SimClient, type SimOperatorAction, Simulation } from "./support/coordinator_sim.ts";
import { identities, RunDriver, testState } from "./support/coordinator_fixtures.ts";
import { type CoordinatorConfig, trainerHealthScore, withdraw } from "../coordinator/core/mod.ts";

function sim(
  clients: SimClient[],
  config: Partial<CoordinatorConfig> = {},
  seed = 1,
  operator: SimOperatorAction[] = [],
): Simulation {
  return new Simulation({
    state: testState({ epochTime: 60, warmupTime: 10, maxClients: 32, ...config }),
    clients,
    operator,
    seed,
  });
}

const steady = (n: number, joinAt = 0): SimClient[] =>
  Array.from({ length: n }, () => ({ joinAt }));

Deno.test("simulation: a healthy run trains to totalSteps and finishes", () => {
  for (const seed of [1, 2, 3]) {
    const s = sim(steady(6), { totalSteps: 30 }, seed);
    assert.ok(s.run(2000, (x) => x.state.runState === "Finished"), `seed ${seed} finished`);
    assert.equal(s.state.progress.step, 30);
    assert.ok(s.epochEnds.length >= 2 && s.epochEnds.every((ok) => ok), "every epoch ended well");
    assert.equal(s.recorder.roundStarts.length, 29, "one round per step");
    assert.equal(s.dropped.size, 0);
    assert.equal(s.cooldownByWindDown.at(-1), false, "the last epoch ended at totalSteps");
  }
});

Deno.test("simulation: every epoch winds down with two apply-only rounds after epochTime", () => {
  const s = sim(steady(4), { totalSteps: 1000, epochTime: 40 }, 4);
  s.run(600, (x) => x.epochEnds.length >= 3);
  assert.ok(s.epochEnds.length >= 3);
  assert.ok(s.cooldownByWindDown.every((x) => x), "each epoch ended by its timer's wind-down");
  assert.ok(s.recorder.roundStarts.length >= 12, "at least 4 rounds per epoch");
});

Deno.test("simulation: late joiners wait for the next epoch and join in join order", () => {
  const clients = [...steady(3), { joinAt: 25 }, { joinAt: 20 }, { joinAt: 30 }];
  const s = sim(clients, { totalSteps: 1000 }, 5);
  s.run(400, (x) => x.epochSizes.length >= 2);
  assert.deepEqual(s.epochSizes.slice(0, 2), [3, 6]);
  // Join order, not client number: client 4 (t=20) before client 3 (t=25).
  assert.deepEqual(s.epochMembers[1], [0, 1, 2, 4, 3, 5].map((i) => s.keyOf(i)));
});

Deno.test("simulation: a client that disconnects mid-epoch is withdrawn and removed", () => {
  const clients = [...steady(4), { joinAt: 0, leaveAt: 35 }];
  const s = sim(clients, { totalSteps: 1000 }, 6);
  s.run(45);
  const keys = s.state.epochState.clients.map((c) => c.id.signer);
  assert.equal(keys.length, 4, "the leaver is out of the client list");
  const exited = s.state.epochState.exitedClients;
  assert.equal(exited.length, 1);
  assert.equal(exited[0].state, "Withdrawn");
  assert.ok(["RoundTrain", "RoundWitness"].includes(s.state.runState), "training continues");
});

Deno.test("simulation: below minClients the epoch ends and the run waits for members", () => {
  const clients = [...steady(2), { joinAt: 0, leaveAt: 30 }, { joinAt: 200 }];
  const s = sim(clients, { minClients: 3, initMinClients: 3, totalSteps: 1000 }, 7);
  s.run(199);
  assert.equal(s.state.runState, "WaitingForMembers", "stuck with 2 of 3 clients");
  assert.ok(s.recorder.edges.includes("RoundWitness->Cooldown"));
  s.run(40);
  assert.ok(
    ["Warmup", "RoundTrain", "RoundWitness"].includes(s.state.runState),
    "a joiner restarts it",
  );
});

Deno.test("simulation: a client that leaves during Warmup ends the epoch when below minClients", () => {
  const clients = [...steady(2), { joinAt: 0, leaveAt: 4, loadTime: 9 }];
  const s = sim(clients, { minClients: 3, initMinClients: 3 }, 8);
  s.run(8);
  assert.deepEqual(s.epochEnds, [false]);
  assert.equal(s.state.runState, "WaitingForMembers");
});

Deno.test("simulation: witnesses that never report end the epoch; everyone must rejoin", () => {
  const clients = steady(4).map((c) => ({ ...c, silentWitness: true }));
  const s = sim(clients, { totalSteps: 1000 }, 9);
  s.run(200, (x) => x.state.runState === "Cooldown");
  assert.equal(s.state.runState, "Cooldown");
  assert.ok(s.state.epochState.clients.every((c) => c.state === "Withdrawn"));
  // The stalled round ended by the RoundTrain timeout.
  assert.ok(s.recorder.edges.includes("RoundTrain->RoundWitness"));
});

Deno.test("simulation: too few witnesses for the quorum end the epoch early", () => {
  // witnessNodes 3: two silent witnesses at most leave 1 < quorum 2.
  const clients = steady(6).map((c, i) => ({ ...c, silentWitness: i % 2 === 0 }));
  const s = sim(
    clients,
    { witnessNodes: 3, minClients: 3, initMinClients: 3, totalSteps: 1000 },
    10,
  );
  s.run(400, (x) => x.epochEnds.length >= 1);
  assert.deepEqual(s.epochEnds, [true]);
});

Deno.test("simulation: a stalled trainer fails its health check and is dropped", () => {
  const clients = [...steady(5), { joinAt: 0, stallAt: 30 }];
  const s = sim(clients, { totalSteps: 1000, epochTime: 120 }, 11);
  s.run(90);
  assert.ok(s.dropped.has(s.keyOf(5)), "health check reported the staller");
  const exited = s.state.epochState.exitedClients.map((c) => c.state);
  assert.deepEqual(exited, ["Dropped"]);
  assert.equal(s.state.epochState.clients.length, 5);
});

Deno.test("simulation: when everyone stalls, rounds end by timeout and the epoch ends", () => {
  const clients = steady(3).map((c) => ({ ...c, stallAt: 40 }));
  const s = sim(clients, { totalSteps: 1000 }, 12);
  s.run(120, (x) => x.epochEnds.length >= 1);
  assert.deepEqual(s.epochEnds, [true]);
  // The stalled round: RoundTrain lasted exactly maxRoundTrainTime, then no witness -> Cooldown.
  const edges = s.timedEdges;
  const stalled = edges.findIndex(([from, to, t]) =>
    from === "RoundTrain" && to === "RoundWitness" && t > 40
  );
  assert.ok(stalled > 0);
  const [, , trainStart] = edges[stalled - 1];
  assert.equal(edges[stalled][2] - trainStart, s.state.config.maxRoundTrainTime);
  assert.equal(edges[stalled + 1][1], "Cooldown");
});

Deno.test("simulation: a dropped client that reconnects joins the next epoch", () => {
  const clients = [...steady(3), { joinAt: 0, stallAt: 20, rejoinAt: 70 }];
  const s = sim(clients, { totalSteps: 1000, epochTime: 50 }, 15);
  s.run(300, (x) => x.epochSizes.length >= 3);
  assert.ok(s.dropped.has(s.keyOf(3)), "dropped while stalled");
  assert.equal(s.epochSizes[0], 4);
  assert.ok(s.epochMembers.slice(1).some((m) => m.includes(s.keyOf(3))), "back in a later epoch");
});

Deno.test("simulation: pause during training finishes the epoch, resume starts a cold start", () => {
  const s = sim(steady(3), { totalSteps: 1000 }, 13, [
    { at: 30, action: "pause" },
    { at: 80, action: "resume" },
  ]);
  s.run(79);
  assert.equal(s.state.runState, "Paused");
  assert.ok(s.recorder.edges.includes("Cooldown->Paused"));
  assert.equal(s.state.epochState.coldStartEpoch, true);
  s.run(30);
  assert.equal(s.epochSizes.length, 2);
  assert.equal(s.state.epochState.coldStartEpoch, true);
  assert.ok(s.recorder.roundStarts.length > 5);
});

Deno.test("simulation: many clients (128), several epochs, a few leavers and stallers", () => {
  const clients: SimClient[] = steady(128).map((c, i) => ({
    ...c,
    leaveAt: i % 37 === 5 ? 60 + 2 * i : undefined,
    stallAt: i % 53 === 7 ? 50 : undefined,
  }));
  const s = sim(clients, { maxClients: 256, totalSteps: 1000, epochTime: 80 }, 14);
  s.run(300);
  assert.ok(s.epochEnds.length >= 2);
  assert.ok(s.dropped.size >= 1);
});

// Ports of Psyche's centralized integration tests
// (architectures/centralized/testing/tests/integration_tests.rs), with its constants: warmup 20 s,
// train 5 s, witness 2 s, cooldown 3 s, epoch 30 s.
const PSYCHE_TIMING = {
  warmupTime: 20,
  maxRoundTrainTime: 5,
  roundWitnessTime: 2,
  cooldownTime: 3,
  epochTime: 30,
  totalSteps: 100,
};

Deno.test("psyche finish_epoch: rounds_head 0 -> 1 -> 2 -> 3, Cooldown, epoch becomes 1", () => {
  const d = new RunDriver(testState(PSYCHE_TIMING));
  d.startEpoch(identities(2));
  d.warmupTimeout();
  const heads: number[] = [];
  while (d.state.runState === "RoundTrain") {
    heads.push(d.state.epochState.roundsHead);
    d.tick(PSYCHE_TIMING.maxRoundTrainTime); // trains until the timeout
    d.witnessAll();
    d.witnessTimeout();
  }
  assert.deepEqual(heads, [0, 1, 2, 3]);
  assert.equal(d.state.runState, "Cooldown");
  d.tick(PSYCHE_TIMING.cooldownTime);
  assert.equal(d.state.progress.epoch, 1);
  assert.equal(d.state.runState, "WaitingForMembers");
});

Deno.test("psyche validate_all_clients_participate_in_witness_bloom: scores sum to 5", () => {
  const d = new RunDriver(
    testState({
      ...PSYCHE_TIMING,
      witnessNodes: 1,
      globalBatchSizeStart: 5,
      globalBatchSizeEnd: 5,
    }),
  );
  d.startEpoch(identities(5));
  d.warmupTimeout();
  d.fullRound();
  d.fullRound();
  assert.equal(d.state.epochState.roundsHead, 2);
  const total = identities(5).reduce((sum, id) => sum + trainerHealthScore(d.state, id), 0);
  assert.equal(total, 5);
});

Deno.test("psyche state_change_shutdown_node_in_warmup: back to WaitingForMembers, 1 client", () => {
  const d = new RunDriver(testState(PSYCHE_TIMING));
  d.startEpoch(identities(2));
  withdraw(d.state, 1);
  assert.deepEqual(d.tick(1), { kind: "EpochEnd", success: false });
  assert.equal(d.state.runState, "WaitingForMembers");
  assert.equal(d.state.epochState.clients.length, 1);
});
