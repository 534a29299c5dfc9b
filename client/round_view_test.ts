import assert from "node:assert/strict";
import {
  currentHeight,
  epochIndexOf,
  epochPeerKeys,
  isEpochPeer,
  roundView,
  stepLearningRate,
  stepOfHeight,
} from "./round_view.ts";
import { runInRound0 } from "./testing/fixtures.ts";
import { currentRound, sha256 } from "../coordinator/core/mod.ts";
import { learningRate } from "../common/mod.ts";

Deno.test("roundView: step, own index, proofs and batch; null for strangers' self", () => {
  const { driver, ids } = runInRound0(3);
  const state = driver.state;
  driver.fullRound();
  const view = roundView(state, 1, ids[2].signer)!;
  assert.equal(view.step, state.epochState.startStep + 1);
  assert.equal(view.step, state.progress.step);
  assert.equal(view.self!.index, 2);
  assert.ok(view.selection.verifyCommittee(view.self!.committeeProof));
  assert.ok(view.selection.verifyWitness(view.self!.witnessProof));
  assert.deepEqual(view.self!.batch, view.assignments.find((a) => a.clientIndex === 2)!.batch);
  assert.equal(view.training, true);
  assert.equal(roundView(state, 1, sha256(new Uint8Array([1])))!.self, null);
  assert.equal(roundView(state, 7, ids[0].signer), null, "not in the ring buffer");
  assert.equal(stepOfHeight(state, 3), state.epochState.startStep + 3);
  assert.equal(epochIndexOf(state, ids[1].signer), 1);
});

Deno.test("stepLearningRate: the schedule, scaled inside a cold-start window", () => {
  const { driver } = runInRound0(3);
  const state = structuredClone(driver.state);
  state.model.lrSchedule = { kind: "Constant", baseLr: 1e-3, warmupSteps: 0, warmupInitLr: 0 };
  assert.equal(stepLearningRate(state, 5), learningRate(state.model.lrSchedule, 5));
  state.epochState.coldStartEpoch = true;
  state.epochState.startStep = 4;
  state.model.coldStartWarmupSteps = 4;
  assert.equal(stepLearningRate(state, 4), 0);
  assert.equal(stepLearningRate(state, 6), 0.5e-3);
  assert.equal(stepLearningRate(state, 8), 1e-3);
});

Deno.test("currentHeight follows the ring buffer's head; isEpochPeer knows the epoch's p2p keys", () => {
  const { driver, ids } = runInRound0(3);
  const state = driver.state;
  assert.equal(currentHeight(state), 0);
  driver.fullRound();
  assert.equal(currentHeight(state), 1);
  assert.equal(currentHeight(state), currentRound(state).height);
  for (const id of ids) assert.ok(isEpochPeer(state, id.p2pIdentity));
  assert.ok(!isEpochPeer(state, sha256(new Uint8Array([9]))));
  assert.deepEqual(epochPeerKeys(state), ids.map((id) => id.p2pIdentity));
});
