import assert from "node:assert/strict";
import { withdraw } from "./machine_membership.ts";
import { witness } from "./machine_witness.ts";
import { currentRound, previousRound, roundAssignments } from "./machine_queries.ts";
import { untrainedBatchCount } from "./untrained_batches.ts";
import type { NodeIdentity } from "./types.ts";
import {
  identities,
  RunDriver,
  testState,
  witnessIndices,
  witnessReport,
} from "../../tests/support/coordinator_fixtures.ts";

/** A 5-client run (everyone witnesses, quorum 3) in round 1, after a full round 0. */
function roundOne(): RunDriver {
  const d = new RunDriver(testState({ witnessNodes: 0, globalBatchSizeStart: 8 }));
  d.startEpoch(identities(5));
  d.warmupTimeout();
  d.fullRound();
  assert.equal(currentRound(d.state).height, 1);
  return d;
}

/** The current round's witnesses report: the first `k` saw `seenByFirst`, the rest `seenByRest`. */
function report(
  d: RunDriver,
  k: number,
  seenByFirst: readonly NodeIdentity[],
  seenByRest: readonly NodeIdentity[],
): void {
  witnessIndices(d.state).forEach((index, n) => {
    const from = d.state.epochState.clients[index].id;
    const seen = n < k ? seenByFirst : seenByRest;
    witness(d.state, from, witnessReport(d.state, index, seen), d.now);
  });
}

/** The batches client `index` had in the previous round. */
function batchesOf(d: RunDriver, index: number): number {
  return roundAssignments(d.state, previousRound(d.state)!)
    .filter((a) => a.clientIndex === index).length;
}

Deno.test("round 0 attests nothing", () => {
  const d = new RunDriver(testState({ witnessNodes: 0 }));
  d.startEpoch(identities(3));
  d.warmupTimeout();
  d.witnessAll();
  assert.deepEqual(untrainedBatchCount(d.state, currentRound(d.state)), {
    attestedHeight: null,
    batches: 0,
    untrained: 0,
  });
});

Deno.test("a batch is untrained when fewer than a quorum of witnesses saw its trainer", () => {
  const all = identities(5);
  const withoutThree = all.filter((_, i) => i !== 3);
  // Quorum of 5 witnesses is 3: seen by exactly 3 is trained, by 2 is not.
  const seenByQuorum = roundOne();
  report(seenByQuorum, 3, all, withoutThree);
  assert.deepEqual(untrainedBatchCount(seenByQuorum.state, currentRound(seenByQuorum.state)), {
    attestedHeight: 0,
    batches: 5,
    untrained: 0,
  });
  const belowQuorum = roundOne();
  report(belowQuorum, 2, all, withoutThree);
  assert.equal(batchesOf(belowQuorum, 3), 1);
  assert.deepEqual(untrainedBatchCount(belowQuorum.state, currentRound(belowQuorum.state)), {
    attestedHeight: 0,
    batches: 5,
    untrained: 1,
  });
  const nobody = roundOne();
  report(nobody, 0, [], []);
  assert.equal(untrainedBatchCount(nobody.state, currentRound(nobody.state)).untrained, 5);
});

Deno.test("trainers are those of the attested round, even after some left", () => {
  // Client 1 withdraws in round 0: in round 1 the epoch's list has 4 clients, and indices of
  // round 0 from 1 on name other clients there. The witnesses still saw its payload.
  const d = new RunDriver(testState({ witnessNodes: 0 }));
  d.startEpoch(identities(5));
  d.warmupTimeout();
  d.witnessAll();
  withdraw(d.state, 1);
  d.witnessTimeout();
  assert.equal(currentRound(d.state).clientsLen, 4);
  const all = identities(5);
  report(d, 4, all, all);
  assert.deepEqual(untrainedBatchCount(d.state, currentRound(d.state)), {
    attestedHeight: 0,
    batches: 5,
    untrained: 0,
  });
});

Deno.test("the apply-only rounds after the epoch timer assigned no training", () => {
  const d = new RunDriver(testState({ witnessNodes: 0, epochTime: 30 }));
  d.startEpoch(identities(3));
  d.warmupTimeout();
  while (d.state.epochState.lastStep === 0) {
    d.fullRound();
    d.tick(5);
  }
  // The round that set lastStep trained; the next one attests it, the one after that attests
  // an apply-only round.
  d.witnessAll();
  assert.equal(untrainedBatchCount(d.state, currentRound(d.state)).batches, 3);
  d.witnessTimeout();
  d.witnessAll();
  const applyOnly = untrainedBatchCount(d.state, currentRound(d.state));
  assert.equal(applyOnly.batches, 0);
  assert.equal(applyOnly.untrained, 0);
});
