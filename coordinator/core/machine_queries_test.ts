import assert from "node:assert/strict";
import { pause, resume, withdraw } from "./machine_membership.ts";
import {
  applyPlan,
  assignedBatch,
  clientAtHistoricalIndex,
  coldStartWarmupBounds,
  currentRound,
  previousRound,
  roundAssignments,
  roundBatchSize,
  roundByHeight,
  roundClients,
} from "./machine_queries.ts";
import {
  identities,
  identity,
  RunDriver,
  testState,
} from "../../tests/support/coordinator_fixtures.ts";

function inRoundTrain(n: number, config = {}): RunDriver {
  const d = new RunDriver(testState(config));
  d.startEpoch(identities(n));
  d.warmupTimeout();
  return d;
}

Deno.test("rounds by height: the ring keeps the last 4; previousRound is null in round 0", () => {
  const d = inRoundTrain(2);
  assert.equal(previousRound(d.state), null);
  for (let i = 0; i < 5; i++) d.fullRound();
  assert.equal(currentRound(d.state).height, 5);
  assert.equal(previousRound(d.state)!.height, 4);
  assert.equal(roundByHeight(d.state, 2)!.height, 2);
  assert.equal(roundByHeight(d.state, 1), null);
  assert.equal(roundByHeight(d.state, 6), null);
});

Deno.test("roundClients rebuilds each round's list after clients left mid-list", () => {
  const d = inRoundTrain(5);
  d.fullRound();
  withdraw(d.state, 1);
  withdraw(d.state, 3);
  d.fullRound(); // round 1 ends; 1 and 3 leave with exitedHeight 2
  withdraw(d.state, 0);
  d.fullRound(); // round 2 ends; 0 leaves with exitedHeight 3
  const signerIndex = (cs: { id: { signer: Uint8Array } }[]) =>
    cs.map((c) => identities(5).findIndex((id) => id.signer.every((b, k) => b === c.id.signer[k])));
  assert.deepEqual(signerIndex(roundClients(d.state, 1)), [0, 1, 2, 3, 4]);
  assert.deepEqual(signerIndex(roundClients(d.state, 2)), [0, 2, 4]);
  assert.deepEqual(signerIndex(roundClients(d.state, 3)), [2, 4]);
  for (const h of [1, 2, 3]) {
    assert.equal(roundClients(d.state, h).length, roundByHeight(d.state, h)!.clientsLen);
  }
  assert.deepEqual(clientAtHistoricalIndex(d.state, 2, 1)!.id.signer, identity(2).signer);
  assert.deepEqual(clientAtHistoricalIndex(d.state, 3, 1)!.id.signer, identity(4).signer);
  assert.equal(clientAtHistoricalIndex(d.state, 3, 2), null);
});

Deno.test("roundAssignments: every batch of the round exactly once, contiguous", () => {
  const d = inRoundTrain(7, { globalBatchSizeStart: 20, globalBatchSizeEnd: 20 });
  d.fullRound();
  const round = currentRound(d.state);
  const a = roundAssignments(d.state, round);
  assert.equal(a.length, 7);
  let next = round.dataIndex;
  for (const { batch } of a) {
    assert.equal(batch.start, next);
    next = batch.end + 1;
  }
  assert.equal(next, round.dataIndex + roundBatchSize(d.state, round));
  assert.equal(new Set(a.map((x) => x.clientIndex)).size, 7);
});

Deno.test("assignedBatch: an epoch client's batch of a round, by epoch index, after others left", () => {
  const d = inRoundTrain(5);
  d.fullRound();
  withdraw(d.state, 1);
  d.fullRound(); // round 1 ends; client 1 leaves with exitedHeight 2
  for (const h of [1, 2]) {
    const round = roundByHeight(d.state, h)!;
    const clients = roundClients(d.state, h);
    for (const a of roundAssignments(d.state, round)) {
      assert.deepEqual(assignedBatch(d.state, h, clients[a.clientIndex].epochIndex), a.batch);
    }
  }
  assert.equal(assignedBatch(d.state, 2, 1), null, "client 1 was gone in round 2");
  assert.notEqual(assignedBatch(d.state, 1, 1), null, "and trained in round 1");
  assert.equal(assignedBatch(d.state, 9, 0), null, "a round not in the state");
});

Deno.test("applyPlan in training: round h - 2 with round h - 1's witnesses", () => {
  const d = inRoundTrain(3);
  assert.equal(applyPlan(d.state), null);
  d.fullRound();
  assert.equal(applyPlan(d.state), null);
  d.fullRound();
  const plan = applyPlan(d.state)!;
  assert.equal(plan.resultsRound.height, 0);
  assert.equal(plan.witnessRound.height, 1);
  assert.equal(plan.quorum, 2);
});

Deno.test("applyPlan at an early Cooldown: round H - 1, attested by round H", () => {
  const d = inRoundTrain(3, { totalSteps: 4 });
  d.fullRound();
  d.fullRound();
  d.fullRound();
  assert.equal(d.state.runState, "Cooldown");
  const plan = applyPlan(d.state)!;
  assert.equal(plan.resultsRound.height, 1);
  assert.equal(plan.witnessRound.height, 2);
});

Deno.test("applyPlan after the epoch timer's wind-down: nothing left at Cooldown", () => {
  const d = inRoundTrain(2, { epochTime: 30 });
  d.fullRound();
  d.fullRound();
  d.now += 40;
  d.fullRound();
  d.fullRound();
  assert.equal(
    applyPlan(d.state)!.resultsRound.height,
    2,
    "round 4 applies the last trained round",
  );
  d.fullRound();
  assert.equal(d.state.runState, "Cooldown");
  assert.equal(applyPlan(d.state), null);
});

Deno.test("coldStartWarmupBounds: only in the epoch after a pause", () => {
  const d = inRoundTrain(2);
  assert.equal(coldStartWarmupBounds(d.state), null);
  pause(d.state, d.now);
  d.fullRound();
  d.tick(d.state.config.cooldownTime);
  resume(d.state, d.now);
  d.startEpoch(identities(2));
  assert.deepEqual(coldStartWarmupBounds(d.state), [2, 4]);
  d.state.model.coldStartWarmupSteps = 0;
  assert.equal(coldStartWarmupBounds(d.state), null, "no window without warmup steps");
});
