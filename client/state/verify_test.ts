import assert from "node:assert/strict";
import { identities, RunDriver, testState } from "../../tests/support/coordinator_fixtures.ts";
import { ClientProgress, type ExchangeFacts, type Intent, intentKey, roundKey } from "./intent.ts";
import { planActions } from "./machine.ts";
import { keptParamHeights, paramsKept } from "./verify.ts";
import type { CoordinatorState, NodeIdentity } from "../../coordinator/core/mod.ts";

const facts: ExchangeFacts = {
  warmupFinishedBy: () => true,
  downloadsWaitOver: () => true,
  witnessWaitOver: () => false,
};

/** Five clients in round 1 of a run that samples every batch (round 0's, at round 1's start). */
function verifyingRun(percent = 100): { driver: RunDriver; ids: NodeIdentity[] } {
  const ids = identities(5);
  const driver = new RunDriver(
    testState({ initMinClients: 5, minClients: 1, verificationPercent: percent, epochTime: 1000 }),
  );
  driver.startEpoch(ids);
  driver.warmupTimeout();
  driver.fullRound();
  return { driver, ids };
}

function plan(state: CoordinatorState, me: NodeIdentity, progress: ClientProgress): Intent[] {
  return planActions({
    state,
    signer: me.signer,
    progress,
    facts,
    checkpoints: false,
    diverged: false,
  });
}

const kinds = (intents: Intent[]) => intents.map((i) => i.kind);

Deno.test("a verifying run keeps the round's θ after its applies and before its training", () => {
  const { driver, ids } = verifyingRun();
  const progress = new ClientProgress();
  progress.modelReady = true;
  const state = driver.state;
  const first = plan(state, ids[0], progress);
  assert.deepEqual(kinds(first).filter((k) => k !== "Verify"), ["KeepParams"]);
  assert.equal(paramsKept({ state, progress } as never, 1), false);
  // Training waits for the copy: after it, the round's training comes.
  for (const i of first) progress.markStarted(intentKey(i));
  assert.deepEqual(kinds(plan(state, ids[0], progress)), []);
  progress.markDone(roundKey("KeepParams", 0, 1));
  assert.deepEqual(kinds(plan(state, ids[0], progress)).filter((k) => k !== "Verify"), ["Train"]);
  // A run that does not verify keeps nothing and trains at once.
  const plain = verifyingRun(0);
  const p = new ClientProgress();
  p.modelReady = true;
  assert.deepEqual(kinds(plan(plain.driver.state, plain.ids[0], p)), ["Train"]);
});

Deno.test("a seated verifier verifies each open task once it kept that round's θ", () => {
  const { driver, ids } = verifyingRun();
  const state = driver.state;
  const tasks = state.epochState.verificationTasks;
  assert.ok(tasks.length > 0);
  const task = tasks[0];
  const seat = task.seats[0].verifier;
  const me = ids[state.epochState.clients.findIndex((c) => c.epochIndex === seat)];
  // (In round 1 every client is still listed: list index and epoch index coincide.)
  const progress = new ClientProgress();
  progress.modelReady = true;
  // Round 0's θ was not kept by this client: it cannot verify.
  assert.ok(!kinds(plan(state, me, progress)).includes("Verify"));
  progress.markDone(roundKey("KeepParams", 0, 0));
  const verifies = plan(state, me, progress).filter((i) => i.kind === "Verify");
  const mine = tasks.filter((t) => t.seats.some((s) => s.verifier === seat));
  assert.equal(verifies.length, mine.length);
  assert.deepEqual(verifies[0], {
    kind: "Verify",
    epoch: 0,
    height: task.height,
    trainer: task.trainer,
    stage: "Verify",
  });
  for (const v of verifies) progress.markStarted(intentKey(v));
  assert.ok(!kinds(plan(state, me, progress)).includes("Verify"), "once");
  // A client seated nowhere verifies nothing.
  const seated = new Set(tasks.flatMap((t) => t.seats.map((s) => s.verifier)));
  const free = state.epochState.clients.find((c) => !seated.has(c.epochIndex));
  if (free !== undefined) {
    const p = new ClientProgress();
    p.modelReady = true;
    p.markDone(roundKey("KeepParams", 0, 0));
    assert.ok(!kinds(plan(state, ids[free.epochIndex], p)).includes("Verify"));
  }
});

Deno.test("kept θ: the current round, the one before, and every open task's", () => {
  const { driver } = verifyingRun();
  assert.deepEqual(keptParamHeights(driver.state, 1), [0, 1]);
  driver.fullRound();
  driver.fullRound(); // round 3: the tasks of round 0 closed at round 2's end
  assert.deepEqual(
    keptParamHeights(driver.state, 3),
    [...new Set([2, 3, ...driver.state.epochState.verificationTasks.map((t) => t.height)])]
      .sort((a, b) => a - b),
  );
  const none = {
    ...driver.state,
    epochState: { ...driver.state.epochState, verificationTasks: [] },
  };
  assert.deepEqual(keptParamHeights(none, 0), [0], "no round before the first");
});
