import assert from "node:assert/strict";
import { CoordinatorError } from "./errors.ts";
import { pause, resume, withdraw, withdrawAll } from "./machine_membership.ts";
import { tick } from "./machine.ts";
import { identities, RunDriver, testState } from "../../tests/support/coordinator_fixtures.ts";

function assertRejected(fn: () => unknown, code: string, state: unknown): void {
  const before = structuredClone(state);
  assert.throws(fn, (e: unknown) => e instanceof CoordinatorError && e.code === code);
  assert.deepEqual(state, before);
}

function inRoundTrain(n: number): RunDriver {
  const d = new RunDriver(testState());
  d.startEpoch(identities(n));
  d.warmupTimeout();
  return d;
}

Deno.test("withdraw: Healthy -> Withdrawn; unknown or already gone is InvalidWithdraw", () => {
  const d = inRoundTrain(3);
  assert.deepEqual(withdraw(d.state, 1), { kind: "Changed" });
  assert.equal(d.state.epochState.clients[1].state, "Withdrawn");
  assertRejected(() => withdraw(d.state, 1), "InvalidWithdraw", d.state);
  assertRejected(() => withdraw(d.state, 3), "InvalidWithdraw", d.state);
  assertRejected(() => withdraw(d.state, -1), "InvalidWithdraw", d.state);
  assertRejected(() => withdraw(d.state, 0.5), "InvalidWithdraw", d.state);
});

Deno.test("withdrawAll: every Healthy client, Unchanged when there is none", () => {
  const d = inRoundTrain(3);
  d.state.epochState.clients[0].state = "Dropped";
  assert.deepEqual(withdrawAll(d.state), { kind: "Changed" });
  assert.deepEqual(d.state.epochState.clients.map((c) => c.state), [
    "Dropped",
    "Withdrawn",
    "Withdrawn",
  ]);
  assert.deepEqual(withdrawAll(d.state), { kind: "Unchanged" });
});

Deno.test("pause in WaitingForMembers or Warmup: Paused at once, cold start next", () => {
  const s = testState();
  assert.deepEqual(pause(s, 3), { kind: "Changed" });
  assert.equal(s.runState, "Paused");
  assert.equal(s.runStateStartUnixTimestamp, 3);
  assert.equal(s.epochState.coldStartEpoch, true);
  const d = new RunDriver(testState());
  d.startEpoch(identities(2));
  pause(d.state, d.now);
  assert.equal(d.state.runState, "Paused");
  assert.ok(d.state.epochState.clients.every((c) => c.state === "Withdrawn"));
});

Deno.test("pause while training is pending; twice is Unchanged; halted runs refuse", () => {
  const d = inRoundTrain(2);
  assert.deepEqual(pause(d.state, d.now), { kind: "Changed" });
  assert.equal(d.state.runState, "RoundTrain");
  assert.deepEqual(pause(d.state, d.now), { kind: "Unchanged" });
  const s = testState();
  s.runState = "Finished";
  assertRejected(() => pause(s, 1), "WrongRunState", s);
});

Deno.test("resume: Paused -> WaitingForMembers, or Finished after totalSteps", () => {
  const s = testState();
  pause(s, 1);
  assert.deepEqual(resume(s, 9), { kind: "Changed" });
  assert.equal(s.runState, "WaitingForMembers");
  assert.equal(s.runStateStartUnixTimestamp, 9);
  const f = testState({ totalSteps: 5 });
  f.progress.step = 5;
  pause(f, 1);
  resume(f, 2);
  assert.equal(f.runState, "Finished");
});

Deno.test("resume cancels a pending pause; otherwise CannotResume", () => {
  const d = inRoundTrain(2);
  assertRejected(() => resume(d.state, d.now), "CannotResume", d.state);
  pause(d.state, d.now);
  resume(d.state, d.now);
  assert.equal(d.state.pendingPause, false);
  d.fullRound();
  assert.equal(d.state.runState, "RoundTrain");
});

Deno.test("a paused run resumes into a cold-start epoch with warmup bounds", () => {
  const d = inRoundTrain(2);
  pause(d.state, d.now);
  d.fullRound();
  d.tick(d.state.config.cooldownTime);
  assert.equal(d.state.runState, "Paused");
  assertRejected(() => tick(d.state, identities(2), d.now + 100, 1n), "Halted", d.state);
  d.now += 100;
  resume(d.state, d.now);
  d.startEpoch(identities(2));
  assert.equal(d.state.epochState.coldStartEpoch, true);
  assert.equal(d.state.epochState.startStep, 2);
});

Deno.test("resume starts an Uninitialized run; pause refuses it", () => {
  const s = testState();
  s.runState = "Uninitialized";
  assertRejected(() => pause(s, 1), "WrongRunState", s);
  assert.deepEqual(resume(s, 4), { kind: "Changed" });
  assert.equal(s.runState, "WaitingForMembers");
  assert.equal(s.runStateStartUnixTimestamp, 4);
});
