import assert from "node:assert/strict";
import { identities, witnessReport } from "../../tests/support/coordinator_fixtures.ts";
import { runInRound0 } from "../testing/fixtures.ts";
import { roundView } from "../round_view.ts";
import { ClientProgress, type ExchangeFacts, type Intent, intentKey } from "./intent.ts";
import { planActions } from "./machine.ts";
import {
  CheckpointerSelection,
  type CoordinatorState,
  currentRound,
  type NodeIdentity,
  roundSelection,
  witness as witnessImpl,
} from "../../coordinator/core/mod.ts";
import { equalBytes, type PublicKeyBytes, toHex } from "../../common/mod.ts";

/** Facts a test sets by hand. */
class Facts implements ExchangeFacts {
  warmup = new Set<string>();
  settled = new Set<number>();
  finished = new Map<number, Set<string>>();
  warmupFinishedBy(peers: readonly PublicKeyBytes[]): boolean {
    return peers.every((p) => this.warmup.has(toHex(p)));
  }
  downloadsWaitOver(height: number): boolean {
    return this.settled.has(height);
  }
  witnessWaitOver(height: number, peers: readonly PublicKeyBytes[]): boolean {
    const s = this.finished.get(height) ?? new Set();
    return peers.every((p) => s.has(toHex(p)));
  }
  allFinish(height: number, ids: NodeIdentity[]): void {
    this.finished.set(height, new Set(ids.map((i) => toHex(i.p2pIdentity))));
  }
}

function plan(
  state: CoordinatorState,
  me: NodeIdentity,
  progress: ClientProgress,
  facts: Facts,
  checkpoints = true,
  diverged = false,
): Intent[] {
  return planActions({ state, signer: me.signer, progress, facts, checkpoints, diverged });
}

const kinds = (intents: Intent[]) => intents.map((i) => i.kind);

/** Marks every intent done, as a driver that completed them would. */
function complete(progress: ClientProgress, intents: Intent[]): void {
  for (const i of intents) progress.markDone(intentKey(i));
}

function witnessIndex(state: CoordinatorState): number {
  return roundSelection(state.config, currentRound(state)).witnessIndices()[0];
}

Deno.test("WaitingForMembers: nothing, unless this client was removed: then Join once", () => {
  const { driver, ids } = runInRound0(3);
  const progress = new ClientProgress();
  const facts = new Facts();
  const state = structuredClone(driver.state);
  state.runState = "WaitingForMembers";
  assert.deepEqual(plan(state, ids[0], progress, facts), []);
  state.epochState.clients[0].state = "Dropped";
  const out = plan(state, ids[0], progress, facts);
  assert.deepEqual(kinds(out), ["Join"]);
  progress.markStarted(intentKey(out[0]));
  assert.deepEqual(plan(state, ids[0], progress, facts), []);
});

Deno.test("a member left behind across an epoch's start joins again, once, for the next", () => {
  const { driver, ids } = runInRound0(3);
  const progress = new ClientProgress();
  const facts = new Facts();
  const state = structuredClone(driver.state);
  const outsider = { signer: new Uint8Array(32).fill(77), p2pIdentity: new Uint8Array(32) };
  const input = (lastMemberEpoch: number | null) => ({
    state,
    signer: outsider.signer,
    progress,
    facts,
    checkpoints: false,
    diverged: false,
    lastMemberEpoch,
  });
  // Never a member (a newcomer waits in the pending list), or a member of this very epoch.
  assert.deepEqual(planActions(input(null)), []);
  assert.deepEqual(planActions(input(state.progress.epoch)), []);
  // A member of an earlier epoch, absent from this one: Join, once.
  state.progress.epoch += 1;
  const out = planActions(input(state.progress.epoch - 1));
  assert.deepEqual(kinds(out), ["Join"]);
  progress.markStarted(intentKey(out[0]));
  assert.deepEqual(planActions(input(state.progress.epoch - 1)), []);
  // A member of the epoch goes on as usual whatever it remembers.
  assert.notDeepEqual(kinds(plan(state, ids[0], progress, facts)), ["Join"]);
});

Deno.test("Warmup: load, announce, then warmup witness with own index once all are ready", () => {
  const { driver, ids } = runInRound0(3);
  const state = structuredClone(driver.state);
  state.runState = "Warmup";
  const progress = new ClientProgress();
  const facts = new Facts();
  const me = ids[1];
  let out = plan(state, me, progress, facts);
  assert.deepEqual(kinds(out), ["LoadModel"]);
  progress.markStarted(intentKey(out[0]));
  assert.deepEqual(plan(state, me, progress, facts), [], "waits for the load");
  complete(progress, out);
  assert.deepEqual(plan(state, me, progress, facts), [], "the load failed: no readiness");
  progress.forget(intentKey(out[0]));
  assert.deepEqual(kinds(plan(state, me, progress, facts)), ["LoadModel"], "retried");
  complete(progress, out); // the retry loaded the model
  progress.modelReady = true;
  out = plan(state, me, progress, facts);
  assert.deepEqual(kinds(out), ["AnnounceWarmupFinished"]);
  complete(progress, out);
  facts.warmup.add(toHex(ids[0].p2pIdentity));
  facts.warmup.add(toHex(ids[1].p2pIdentity));
  assert.deepEqual(plan(state, me, progress, facts), [], "client 2 is not ready");
  facts.warmup.add(toHex(ids[2].p2pIdentity));
  out = plan(state, me, progress, facts);
  assert.deepEqual(out, [{
    kind: "SendWarmupWitness",
    epoch: 0,
    proof: { position: 1, index: 1, witness: false },
  }]);
  complete(progress, out);
  assert.deepEqual(plan(state, me, progress, facts), []);
});

Deno.test("RoundTrain h=0: train own batch, Finished, witness only after all Finished", () => {
  const { driver, ids } = runInRound0(3);
  const state = driver.state;
  const w = witnessIndex(state);
  const me = ids[w];
  const progress = new ClientProgress();
  progress.modelReady = true;
  const facts = new Facts();
  let out = plan(state, me, progress, facts);
  assert.deepEqual(kinds(out), ["Train"], "no apply in round 0");
  const train = out[0] as Extract<Intent, { kind: "Train" }>;
  const view = roundView(state, 0, me.signer)!;
  assert.deepEqual(train.batch, view.self!.batch);
  assert.equal(train.step, state.progress.step);
  progress.markStarted(intentKey(train));
  assert.deepEqual(plan(state, me, progress, facts), [], "Finished waits for training");
  complete(progress, [train]);
  out = plan(state, me, progress, facts);
  assert.deepEqual(kinds(out), ["AnnounceFinished"]);
  complete(progress, out);
  assert.deepEqual(plan(state, me, progress, facts), [], "witness waits for everyone");
  facts.allFinish(0, ids);
  out = plan(state, me, progress, facts);
  assert.deepEqual(kinds(out), ["SendWitness"]);
  assert.deepEqual(
    (out[0] as Extract<Intent, { kind: "SendWitness" }>).proof,
    view.self!.witnessProof,
  );
});

Deno.test("RoundTrain: a client without a batch applies the trainers' weight decay", () => {
  const { driver, ids } = runInRound0(3);
  const state = structuredClone(driver.state);
  state.config.globalBatchSizeStart = state.config.globalBatchSizeEnd = 2; // 2 batches, 3 clients
  const idle = ids.find((id) => roundView(state, 0, id.signer)!.self!.batch === null)!;
  const progress = new ClientProgress();
  progress.modelReady = true;
  assert.deepEqual(kinds(plan(state, idle, progress, new Facts())), ["AnnounceFinished"]);
  state.model.optimizer = {
    kind: "Distro",
    clipGradNorm: null,
    weightDecay: 0.1,
    compressionDecay: 0.999,
    compressionTopk: 2,
    compressionChunk: 64,
    quantize1bit: true,
  };
  const out = plan(state, idle, progress, new Facts());
  assert.deepEqual(kinds(out), ["DecayWeights", "AnnounceFinished"]);
  assert.equal((out[0] as Extract<Intent, { kind: "DecayWeights" }>).height, 0);
});

Deno.test("RoundTrain h=0 of a cold-start epoch: the optimizer state is reset first", () => {
  const { driver, ids } = runInRound0(3);
  const progress = new ClientProgress();
  progress.modelReady = true;
  const train = (state: CoordinatorState) =>
    plan(state, ids[0], progress, new Facts())[0] as Extract<Intent, { kind: "Train" }>;
  assert.equal(train(driver.state).resetOptimizer, false);
  const cold = structuredClone(driver.state);
  cold.epochState.coldStartEpoch = true;
  assert.equal(train(cold).resetOptimizer, true);
});

Deno.test("RoundTrain without a model: LoadModel alone, then the due apply", () => {
  const { driver, ids } = runInRound0(3);
  driver.fullRound();
  driver.fullRound();
  const progress = new ClientProgress();
  const out = plan(driver.state, ids[0], progress, new Facts());
  assert.deepEqual(kinds(out), ["LoadModel"]);
  progress.markStarted(intentKey(out[0]));
  assert.deepEqual(plan(driver.state, ids[0], progress, new Facts()), []);
  progress.modelReady = true;
  assert.deepEqual(kinds(plan(driver.state, ids[0], progress, new Facts())), ["Apply"]);
});

Deno.test("RoundTrain without a model after round 0 was applied: sits the epoch out", () => {
  const { driver, ids } = runInRound0(3);
  for (let h = 0; h < 3; h++) driver.fullRound();
  const progress = new ClientProgress();
  assert.equal(currentRound(driver.state).height, 3);
  assert.deepEqual(plan(driver.state, ids[0], progress, new Facts()), []);
});

Deno.test("RoundTrain: a client outside the round plans nothing", () => {
  const { driver } = runInRound0(3);
  const stranger = identities(4)[3];
  const progress = new ClientProgress();
  progress.modelReady = true;
  driver.fullRound();
  driver.fullRound();
  assert.deepEqual(plan(driver.state, stranger, progress, new Facts()), []);
});

Deno.test("RoundTrain h=1: Finished waits for round 0's payloads to settle", () => {
  const { driver, ids } = runInRound0(3);
  driver.fullRound();
  const progress = new ClientProgress();
  progress.modelReady = true;
  const facts = new Facts();
  const out = plan(driver.state, ids[0], progress, facts);
  assert.deepEqual(kinds(out), ["Train"]);
  complete(progress, out);
  assert.deepEqual(plan(driver.state, ids[0], progress, facts), []);
  facts.settled.add(0);
  assert.deepEqual(kinds(plan(driver.state, ids[0], progress, facts)), ["AnnounceFinished"]);
});

Deno.test("RoundTrain h=2: apply round 0 (witnessed in round 1) before training", () => {
  const { driver, ids } = runInRound0(3);
  driver.fullRound();
  driver.fullRound();
  const state = driver.state;
  assert.equal(currentRound(state).height, 2);
  const progress = new ClientProgress();
  progress.modelReady = true;
  const out = plan(state, ids[0], progress, new Facts());
  assert.deepEqual(kinds(out), ["Apply"], "training waits for the apply");
  const apply = out[0] as Extract<Intent, { kind: "Apply" }>;
  assert.equal(apply.plan.resultsRound.height, 0);
  assert.equal(apply.plan.witnessRound.height, 1);
  assert.equal(apply.step, state.epochState.startStep);
  assert.equal(apply.batches.length, 3);
  progress.markStarted(intentKey(apply));
  assert.deepEqual(plan(state, ids[0], progress, new Facts()), []);
  complete(progress, [apply]);
  assert.deepEqual(kinds(plan(state, ids[0], progress, new Facts())), ["Train"]);
});

Deno.test("RoundTrain: a client that skipped a round catches up on both due applies, in order", () => {
  const { driver, ids } = runInRound0(3);
  for (let i = 0; i < 3; i++) driver.fullRound();
  const progress = new ClientProgress();
  progress.modelReady = true;
  const out = plan(driver.state, ids[0], progress, new Facts());
  assert.deepEqual(
    out.filter((i) => i.kind === "Apply").map((i) =>
      (i as Extract<Intent, { kind: "Apply" }>).plan.resultsRound.height
    ),
    [0, 1],
  );
});

Deno.test("RoundTrain h=2: a witness of round 1 reports the round-0 trainer nobody saw", () => {
  const { driver, ids } = runInRound0(3);
  driver.fullRound(); // round 0 → 1
  const state = driver.state;
  const selection = roundSelection(state.config, currentRound(state));
  const seen = ids.slice(0, 2); // client 2's payload of round 0 never arrived
  for (const index of selection.witnessIndices()) {
    witnessImpl(state, ids[index], witnessReport(state, index, seen), driver.now);
  }
  driver.witnessTimeout(); // → round 2
  const witnessOfRound1 = selection.witnessIndices()[0];
  const progress = new ClientProgress();
  progress.modelReady = true;
  const out = plan(state, ids[witnessOfRound1], progress, new Facts());
  const checks = out.find((i) => i.kind === "SendHealthChecks") as
    | Extract<Intent, { kind: "SendHealthChecks" }>
    | undefined;
  assert.ok(checks, `expected health checks in ${kinds(out)}`);
  assert.deepEqual(checks.checks.map((c) => toHex(c.id.signer)), [toHex(ids[2].signer)]);
});

Deno.test("RoundTrain h=2: no health checks about a round that did not train", () => {
  const { driver, ids } = runInRound0(3);
  driver.fullRound();
  const state = driver.state;
  const selection = roundSelection(state.config, currentRound(state));
  for (const index of selection.witnessIndices()) {
    witnessImpl(state, ids[index], witnessReport(state, index, []), driver.now); // saw nobody
  }
  driver.witnessTimeout();
  const progress = new ClientProgress();
  progress.modelReady = true;
  const me = ids[selection.witnessIndices()[0]];
  const report = () =>
    plan(state, me, progress, new Facts()).filter((i) => i.kind === "SendHealthChecks");
  assert.equal(report().length, 1, "everyone unseen is reported");
  const apply = plan(state, me, progress, new Facts())[0];
  progress.markDone(intentKey(apply));
  state.epochState.lastStep = state.epochState.startStep + 2; // round 0 was apply-only
  assert.deepEqual(report(), []);
});

Deno.test("RoundWitness: a witness reports without waiting for Finished", () => {
  const { driver, ids } = runInRound0(3);
  const state = structuredClone(driver.state);
  state.runState = "RoundWitness";
  const me = ids[witnessIndex(state)];
  const progress = new ClientProgress();
  progress.modelReady = true;
  const out = plan(state, me, progress, new Facts());
  assert.deepEqual(kinds(out), ["SendWitness", "Train"]);
});

Deno.test("Apply-only rounds after the epoch timer: no training, Finished at once", () => {
  const { driver, ids } = runInRound0(3);
  driver.fullRound();
  const state = structuredClone(driver.state);
  state.epochState.lastStep = state.progress.step + 1; // this round only applies
  const progress = new ClientProgress();
  progress.modelReady = true;
  const facts = new Facts();
  facts.settled.add(0);
  assert.deepEqual(kinds(plan(state, ids[0], progress, facts)), ["AnnounceFinished"]);
});

Deno.test("Cooldown: apply round H-1, share the model, checkpoint (with a folder), report its digest", () => {
  const { driver, ids } = runInRound0(3);
  driver.fullRound();
  driver.fullRound();
  const state = structuredClone(driver.state);
  state.runState = "Cooldown"; // after round H = 2
  const progress = new ClientProgress();
  progress.modelReady = true;
  progress.markDone("Apply:0:0"); // applied in round 2
  let out = plan(state, ids[0], progress, new Facts());
  assert.deepEqual(kinds(out), ["Apply"]);
  assert.equal((out[0] as Extract<Intent, { kind: "Apply" }>).plan.resultsRound.height, 1);
  assert.equal((out[0] as Extract<Intent, { kind: "Apply" }>).plan.witnessRound.height, 2);
  complete(progress, out);
  out = plan(state, ids[0], progress, new Facts());
  assert.deepEqual(out, [
    { kind: "ShareModel", epoch: 0, step: state.progress.step, snapshotDtype: "f32" },
    { kind: "Checkpoint", epoch: 0, step: state.progress.step, checkpointers: [], upload: false },
  ]);
  assert.deepEqual(kinds(plan(state, ids[0], progress, new Facts(), false)), ["ShareModel"]);
  // The run's snapshot dtype travels with the intent: bf16 has the client round first.
  const bf16 = { ...state, model: { ...state.model, snapshotDtype: "bf16" as const } };
  assert.deepEqual(plan(bf16, ids[0], progress, new Facts(), false), [
    { kind: "ShareModel", epoch: 0, step: state.progress.step, snapshotDtype: "bf16" },
  ]);
  complete(progress, out);
  // The snapshot labelled the parameters: a witness of round H now reports their digest.
  const index = state.epochState.clients.findIndex((c) =>
    toHex(c.id.signer) === toHex(ids[0].signer)
  );
  const proof = roundSelection(state.config, currentRound(state)).witnessProof(index);
  assert.ok(proof.witness, "with 3 clients every client is a witness");
  out = plan(state, ids[0], progress, new Facts());
  assert.deepEqual(out, [
    { kind: "SendCooldownWitness", epoch: 0, step: state.progress.step, proof },
  ]);
  complete(progress, out);
  assert.deepEqual(plan(state, ids[0], progress, new Facts()), []);
});

Deno.test("Cooldown with Hub uploads: only the elected checkpointers upload their checkpoint", () => {
  const { driver, ids } = runInRound0(3);
  driver.fullRound();
  driver.fullRound();
  const state = structuredClone(driver.state);
  state.runState = "Cooldown";
  const elected = CheckpointerSelection.fromState(state).indices();
  assert.equal(elected.length, 1, "a third of 3 clients");
  const checkpoints = ids.map((id) => {
    const progress = new ClientProgress();
    progress.modelReady = true;
    progress.markDone("Apply:0:0");
    progress.markDone("Apply:0:1");
    const out = planActions({
      state,
      signer: id.signer,
      progress,
      facts: new Facts(),
      checkpoints: true,
      hubUpload: true,
      diverged: false,
    });
    return out.find((i) => i.kind === "Checkpoint") as Extract<Intent, { kind: "Checkpoint" }>;
  });
  for (const [k, intent] of checkpoints.entries()) {
    const index = state.epochState.clients.findIndex((c) => equalBytes(c.id.signer, ids[k].signer));
    assert.deepEqual(intent.checkpointers, elected);
    assert.equal(intent.upload, index === elected[0], `client ${index}`);
  }
  assert.equal(checkpoints.filter((i) => i.upload).length, 1);
});

Deno.test("WaitingForMembers after a Cooldown it never saw: a member applies the epoch's last results", () => {
  // An outage: round 2 ends with no witness, so the epoch winds down and every client is
  // withdrawn; the coordinator's Cooldown ends while the clients are still cut off.
  const { driver, ids } = runInRound0(3);
  driver.fullRound();
  driver.fullRound();
  driver.tick(driver.state.config.maxRoundTrainTime);
  driver.witnessTimeout();
  assert.equal(driver.state.runState, "Cooldown");
  driver.tick(driver.state.config.cooldownTime);
  const state = driver.state;
  assert.equal(state.runState, "WaitingForMembers");
  const ended = state.progress.epoch - 1;
  const input = (progress: ClientProgress, lastMemberEpoch: number | null, diverged = false) => ({
    state,
    signer: ids[0].signer,
    progress,
    facts: new Facts(),
    checkpoints: true,
    diverged,
    lastMemberEpoch,
  });
  const progress = new ClientProgress();
  progress.modelReady = true;
  progress.markDone(`Apply:${ended}:0`); // applied in round 2
  const out = planActions(input(progress, ended));
  assert.deepEqual(kinds(out), ["Apply", "Join"], "the missed apply first, then join again");
  const apply = out[0] as Extract<Intent, { kind: "Apply" }>;
  assert.equal(apply.epoch, ended, "keyed by the epoch that ended");
  assert.equal(apply.plan.resultsRound.height, 1);
  assert.equal(apply.plan.witnessRound.height, 2);
  // Round 1 trained step 2; round 2 (step 3) ended the epoch, and the run is at step 4.
  assert.equal(apply.step, state.epochState.startStep + 1);
  assert.equal(apply.step, state.progress.step - 2);
  // Made once: in Cooldown (same key) or here; then the snapshot the next epoch starts from.
  progress.markStarted(intentKey(apply));
  assert.deepEqual(kinds(planActions(input(progress, ended))), ["Join"]);
  progress.markDone(intentKey(apply));
  const share = planActions(input(progress, ended));
  assert.deepEqual(share, [
    { kind: "ShareModel", epoch: ended, step: state.progress.step, snapshotDtype: "f32" },
    {
      kind: "Checkpoint",
      epoch: ended,
      step: state.progress.step,
      checkpointers: [],
      upload: false,
    },
    { kind: "Join", epoch: state.progress.epoch },
  ]);
  complete(progress, share.slice(0, 2));
  assert.deepEqual(kinds(planActions(input(progress, ended))), ["Join"]);
  // Not for a client without the model, a diverged one, or one that was not a member.
  const fresh = () => {
    const p = new ClientProgress();
    p.modelReady = true;
    p.markDone(`Apply:${ended}:0`);
    return p;
  };
  assert.deepEqual(kinds(planActions(input(new ClientProgress(), ended))), ["Join"]);
  assert.deepEqual(kinds(planActions(input(fresh(), ended, true))), ["Join"]);
  assert.deepEqual(kinds(planActions(input(fresh(), ended - 1))), ["Join"]);
  assert.deepEqual(kinds(planActions(input(fresh(), null))), ["Join"]);
});

Deno.test("WaitingForMembers after an epoch wound down by its timer: only the snapshot is missed", () => {
  // The epoch timer's last rounds train nothing, so its Cooldown has nothing left to apply.
  const { driver, ids } = runInRound0(3);
  const state = driver.state;
  state.epochState.lastStep = state.progress.step + 2;
  driver.fullRound();
  driver.fullRound();
  assert.equal(state.runState, "Cooldown");
  driver.tick(state.config.cooldownTime);
  assert.equal(state.runState, "WaitingForMembers");
  const progress = new ClientProgress();
  progress.modelReady = true;
  const ended = state.progress.epoch - 1;
  assert.deepEqual(
    planActions({
      state,
      signer: ids[0].signer,
      progress,
      facts: new Facts(),
      checkpoints: false,
      diverged: false,
      lastMemberEpoch: ended,
    }),
    [{ kind: "ShareModel", epoch: ended, step: state.progress.step, snapshotDtype: "f32" }],
    "no checkpoint without a folder",
  );
});

Deno.test("WaitingForMembers before any epoch trained: no apply is due", () => {
  const { driver, ids } = runInRound0(3);
  const state = structuredClone(driver.state);
  state.runState = "WaitingForMembers";
  state.progress.epoch += 1;
  const progress = new ClientProgress();
  progress.modelReady = true;
  const out = planActions({
    state,
    signer: ids[0].signer,
    progress,
    facts: new Facts(),
    checkpoints: true,
    diverged: false,
    lastMemberEpoch: state.progress.epoch - 1,
  });
  assert.deepEqual(out, [], "round 0 has no witnessed round before it");
});

Deno.test("a diverged client contributes nothing in rounds and Cooldown, and still loads in Warmup", () => {
  const { driver, ids } = runInRound0(3);
  const progress = new ClientProgress();
  progress.modelReady = true;
  const facts = new Facts();
  const training = structuredClone(driver.state);
  assert.ok(plan(training, ids[0], progress, facts).length > 0, "an in-sync client trains");
  assert.deepEqual(plan(training, ids[0], progress, facts, true, true), []);
  const cooldown = structuredClone(driver.state);
  cooldown.runState = "Cooldown";
  assert.deepEqual(plan(cooldown, ids[0], progress, facts, true, true), []);
  const warmup = structuredClone(driver.state);
  warmup.runState = "Warmup";
  assert.deepEqual(kinds(plan(warmup, ids[0], new ClientProgress(), facts, true, true)), [
    "LoadModel",
  ]);
});

Deno.test("Halted states plan nothing", () => {
  const { driver, ids } = runInRound0(3);
  for (const runState of ["Uninitialized", "Finished", "Paused"] as const) {
    const state = structuredClone(driver.state);
    state.runState = runState;
    assert.deepEqual(plan(state, ids[0], new ClientProgress(), new Facts()), []);
  }
});

Deno.test("an epoch begun again under the same number plans its Warmup afresh", () => {
  const { driver, ids } = runInRound0(3);
  const warmup = structuredClone(driver.state);
  warmup.runState = "Warmup";
  const progress = new ClientProgress();
  const epoch = warmup.progress.epoch;
  for (const key of [`LoadModel:${epoch}`, `Train:${epoch}:0`, `Apply:${epoch - 1}:4`]) {
    progress.markDone(key);
  }
  assert.deepEqual(plan(warmup, ids[0], progress, new Facts()), [], "loaded in the first try");
  // The coordinator restarted from its saved state: the same epoch number begins again.
  progress.forgetFrom(epoch);
  assert.deepEqual(kinds(plan(warmup, ids[0], progress, new Facts())), ["LoadModel"]);
  assert.ok(!progress.done(`Train:${epoch}:0`));
  assert.ok(progress.done(`Apply:${epoch - 1}:4`), "earlier epochs are kept");
});
