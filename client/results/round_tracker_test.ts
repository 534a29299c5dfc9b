import assert from "node:assert/strict";
import { STRAGGLER_MIN_WAIT_MS } from "./straggler_wait.ts";
import { bloomSetup, RoundTracker } from "./round_tracker.ts";
import { roundView } from "../round_view.ts";
import { announcementOf, runInRound0, testBlooms } from "../testing/fixtures.ts";
import {
  bloomContains,
  currentRound,
  sha256,
  witnessBloomParameters,
} from "../../coordinator/core/mod.ts";

function setup() {
  const { driver, ids } = runInRound0(3);
  const state = driver.state;
  const view = roundView(state, currentRound(state).height, ids[0].signer)!;
  return { state, ids, view, tracker: new RoundTracker(view, testBlooms(state)) };
}

Deno.test("RoundTracker: accepts each trainer's announcement for its own batch once", () => {
  const { ids, view, tracker } = setup();
  for (const a of view.assignments) {
    const msg = announcementOf(view, a.clientIndex);
    assert.deepEqual(tracker.acceptResult(ids[a.clientIndex].p2pIdentity, msg), {
      accepted: true,
    });
    const again = tracker.acceptResult(ids[a.clientIndex].p2pIdentity, msg);
    assert.equal(again.accepted ? "" : again.reason, "Duplicate");
  }
  assert.equal(tracker.announcements().length, view.assignments.length);
});

Deno.test("RoundTracker: names the trainers whose result it has not heard, and only them", () => {
  const { ids, view, tracker } = setup();
  const keyOf = (index: number) => ids[index].p2pIdentity;
  const trainers = view.assignments.map((a) => a.clientIndex);
  assert.ok(trainers.length >= 2, "the fixture has two trainers or more");
  assert.deepEqual(tracker.unheardTrainers(), trainers.map(keyOf));
  tracker.acceptResult(keyOf(trainers[0]), announcementOf(view, trainers[0]));
  assert.deepEqual(tracker.unheardTrainers(), trainers.slice(1).map(keyOf));
  // A refused announcement (another trainer's batch) hears nobody.
  tracker.acceptResult(keyOf(trainers[1]), announcementOf(view, trainers[0]));
  assert.deepEqual(tracker.unheardTrainers(), trainers.slice(1).map(keyOf));
  for (const t of trainers.slice(1)) tracker.acceptResult(keyOf(t), announcementOf(view, t));
  assert.deepEqual(tracker.unheardTrainers(), []);
});

Deno.test("RoundTracker: refuses wrong step, outsiders, stolen proofs, wrong batch, equivocation", () => {
  const { ids, view, tracker } = setup();
  const [a0, a1] = view.assignments;
  const msg = announcementOf(view, a0.clientIndex);
  const from = ids[a0.clientIndex].p2pIdentity;
  const reason = (v: ReturnType<RoundTracker["acceptResult"]>) =>
    v.accepted ? "accepted" : v.reason;
  assert.equal(reason(tracker.acceptResult(from, { ...msg, step: msg.step + 1 })), "WrongStep");
  assert.equal(reason(tracker.acceptResult(sha256(new Uint8Array([9])), msg)), "UnknownSender");
  // Another client replaying a0's announcement (its proof names a0's index).
  assert.equal(reason(tracker.acceptResult(ids[a1.clientIndex].p2pIdentity, msg)), "BadProof");
  assert.equal(
    reason(tracker.acceptResult(from, { ...msg, proof: { ...msg.proof, position: 99 } })),
    "BadProof",
  );
  assert.equal(reason(tracker.acceptResult(from, { ...msg, batch: a1.batch })), "WrongBatch");
  assert.equal(reason(tracker.acceptResult(from, msg)), "accepted");
  const other = announcementOf(view, a0.clientIndex, 1);
  assert.equal(reason(tracker.acceptResult(from, other)), "Equivocation");
  assert.equal(tracker.announcements().length, 1);
});

Deno.test("RoundTracker: witness blooms hold verified trainers and commitments only", () => {
  const { ids, view, tracker } = setup();
  const [a0, a1] = view.assignments;
  const m0 = announcementOf(view, a0.clientIndex);
  const m1 = announcementOf(view, a1.clientIndex);
  tracker.acceptResult(ids[a0.clientIndex].p2pIdentity, m0);
  tracker.acceptResult(ids[a1.clientIndex].p2pIdentity, m1);
  assert.equal(tracker.downloadsSettled(), false);
  tracker.recordVerified(m0.commitment, {
    step: view.step,
    batch: m0.batch,
    trainerNonce: 0,
    params: [],
  });
  tracker.recordFailed(m1.commitment);
  assert.equal(tracker.downloadsSettled(), true);
  const w = tracker.witness(view.self!.witnessProof);
  assert.ok(bloomContains(w.participantBloom, sha256(ids[a0.clientIndex].signer)));
  assert.ok(!bloomContains(w.participantBloom, sha256(ids[a1.clientIndex].signer)));
  assert.ok(bloomContains(w.broadcastBloom, m0.commitment));
  assert.ok(!bloomContains(w.broadcastBloom, m1.commitment));
  assert.throws(
    () =>
      tracker.recordVerified(m1.commitment, {
        step: view.step,
        batch: m0.batch,
        trainerNonce: 0,
        params: [],
      }),
    /does not match its announcement/,
  );
});

Deno.test("RoundTracker: stops waiting for the last downloads once a majority settled", () => {
  const { ids, view } = setup();
  assert.equal(view.assignments.length, 3);
  const tracker = new RoundTracker(view, testBlooms(setup().state), 1000); // seen at 1,000 ms
  const messages = view.assignments.map((a) => {
    const m = announcementOf(view, a.clientIndex);
    tracker.acceptResult(ids[a.clientIndex].p2pIdentity, m);
    return m;
  });
  const result = (i: number) => ({
    step: view.step,
    batch: messages[i].batch,
    trainerNonce: 0,
    params: [],
  });
  tracker.recordVerified(messages[0].commitment, result(0), 1200);
  assert.equal(tracker.downloadsDeadline(), null, "one of three trainers' results");
  tracker.recordFailed(messages[1].commitment, 4000); // a failure settles too
  // The majority took 3,000 ms from the round's start: the third gets as long again.
  assert.equal(tracker.downloadsDeadline(), 4000 + 3000);
  assert.ok(3000 > STRAGGLER_MIN_WAIT_MS);
  assert.equal(tracker.downloadsSettled(), false);
  tracker.recordVerified(messages[2].commitment, result(2), 9000);
  assert.equal(tracker.downloadsSettled(), true);
});

Deno.test("RoundTracker: the Merkle root does not depend on arrival order", () => {
  const { state, ids, view } = setup();
  const roots = [false, true].map((reverse) => {
    const t = new RoundTracker(view, testBlooms(state));
    const order = reverse ? [...view.assignments].reverse() : view.assignments;
    for (const a of order) {
      t.acceptResult(ids[a.clientIndex].p2pIdentity, announcementOf(view, a.clientIndex));
    }
    return t.merkleRoot();
  });
  assert.deepEqual(roots[0], roots[1]);
  assert.notDeepEqual(roots[0], new Uint8Array(32));
});

Deno.test("RoundTracker: Finished from every client, once, this step only, own proof", () => {
  const { ids, view, tracker } = setup();
  const finished = (step: number, index: number, warmup = false) => ({
    kind: "Finished" as const,
    step,
    proof: view.selection.committeeProof(index),
    merkleRoot: new Uint8Array(32),
    warmup,
  });
  const peers = ids.map((i) => i.p2pIdentity);
  const reason = (v: ReturnType<RoundTracker["acceptFinished"]>) =>
    v.accepted ? "accepted" : v.reason;
  assert.equal(reason(tracker.acceptFinished(peers[0], finished(view.step + 1, 0))), "WrongStep");
  assert.equal(
    reason(tracker.acceptFinished(peers[0], finished(view.step, 0, true))),
    "WarmupFlag",
  );
  assert.equal(reason(tracker.acceptFinished(peers[0], finished(view.step, 1))), "BadProof");
  assert.equal(reason(tracker.acceptFinished(peers[0], finished(view.step, 0))), "accepted");
  assert.equal(reason(tracker.acceptFinished(peers[0], finished(view.step, 0))), "Duplicate");
  assert.equal(tracker.finishedBy(peers), false);
  assert.deepEqual(peers.map((p) => tracker.hasFinished(p)), [true, false, false]);
  assert.equal(tracker.stragglerDeadline(peers), null, "one of three");
  tracker.acceptFinished(peers[1], finished(view.step, 1), 700);
  assert.deepEqual(tracker.unfinished(peers), [peers[2]]);
  // Seen at 0; the first Finished counted at 0 ms, the second (the majority) at 700.
  assert.equal(tracker.stragglerDeadline(peers), 700 + STRAGGLER_MIN_WAIT_MS);
  assert.equal(tracker.stragglerDeadline(peers.slice(1)), null, "counts only the peers asked");
  tracker.acceptFinished(peers[2], finished(view.step, 2));
  assert.equal(tracker.finishedBy(peers), true);
  assert.deepEqual(tracker.unfinished(peers), []);
});

Deno.test("bloomSetup: the run's bloom geometry, participant keys drawn before broadcast keys", () => {
  let next = 0n;
  const setup = bloomSetup(256, () => ++next);
  const parameters = witnessBloomParameters(256);
  assert.deepEqual(setup.parameters, parameters);
  const n = parameters.numKeys;
  assert.deepEqual([...setup.participantKeys], Array.from({ length: n }, (_, i) => BigInt(i + 1)));
  assert.deepEqual(
    [...setup.broadcastKeys],
    Array.from({ length: n }, (_, i) => BigInt(n + i + 1)),
  );
  assert.notDeepEqual(bloomSetup(16, () => 1n).parameters, parameters);
});
