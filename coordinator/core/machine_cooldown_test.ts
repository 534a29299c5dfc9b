import assert from "node:assert/strict";
import { CheckpointerSelection } from "./checkpointer_selection.ts";
import { CoordinatorError } from "./errors.ts";
import { checkpoint } from "./machine_cooldown.ts";
import { nextTickDeadline } from "./machine.ts";
import { currentRound, roundSelection } from "./machine_queries.ts";
import { cooldownWitness } from "./machine_witness.ts";
import { recordedDigest } from "./params_digest.ts";
import type { Checkpoint, CoordinatorConfig, CoordinatorState } from "./types.ts";
import {
  identities,
  RunDriver,
  testState,
  witnessIndices,
} from "../../tests/support/coordinator_fixtures.ts";

const HUB: Checkpoint = { kind: "Hub", repo: { repoId: "org/new", revision: "c0ffee" } };

function digest(byte: number): Uint8Array {
  return new Uint8Array(32).fill(byte);
}

function assertRejected(fn: () => unknown, code: string, state: unknown, message?: RegExp): void {
  const before = structuredClone(state);
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof CoordinatorError, String(e));
    assert.equal(e.code, code, e.message);
    if (message !== undefined) assert.match(e.message, message);
    return true;
  });
  assert.deepEqual(state, before);
}

/** `n` clients trained until the epoch wound down (total steps 3 by default: it then finishes). */
function inCooldown(n: number, config: Partial<CoordinatorConfig> = {}): RunDriver {
  const d = new RunDriver(testState({ epochTime: 1000, totalSteps: 3, ...config }));
  d.startEpoch(identities(n));
  d.warmupTimeout();
  while (d.state.runState !== "Cooldown") d.fullRound();
  d.tick(0.5); // a moment into Cooldown
  return d;
}

/** Every witness of the last round votes `byte` in Cooldown. */
function voteAll(d: RunDriver, byte = 42): void {
  const selection = roundSelection(d.state.config, currentRound(d.state));
  for (const i of witnessIndices(d.state)) {
    const id = d.state.epochState.clients[i].id;
    cooldownWitness(d.state, id, selection.witnessProof(i), digest(byte), d.now);
  }
}

function elected(state: CoordinatorState): number[] {
  return CheckpointerSelection.fromState(state).indices();
}

function idOf(state: CoordinatorState, index: number) {
  return state.epochState.clients[index].id;
}

Deno.test("checkpoint: the first elected report ends Cooldown at once, recording its digest", () => {
  const d = inCooldown(6, { totalSteps: 100, epochTime: 20, warmupTime: 5 });
  const { epoch, step } = d.state.progress;
  voteAll(d);
  const [first] = elected(d.state);
  const outcome = checkpoint(d.state, idOf(d.state, first), first, HUB, d.now);
  assert.deepEqual(outcome, { kind: "EpochEnd", success: true });
  assert.equal(d.state.runState, "WaitingForMembers");
  assert.equal(d.state.runStateStartUnixTimestamp, d.now);
  assert.equal(d.state.progress.epoch, epoch + 1);
  // A Hub run's report replaces the repo, and the epoch's end turns it to P2P as always.
  assert.deepEqual(d.state.model.checkpoint, { kind: "P2P", repo: HUB.repo });
  assert.deepEqual(recordedDigest(d.state.paramsDigests, step), digest(42));
});

Deno.test("checkpoint: a run at its total steps finishes on the report", () => {
  const d = inCooldown(3);
  voteAll(d);
  const [first] = elected(d.state);
  checkpoint(d.state, idOf(d.state, first), first, HUB, d.now);
  assert.equal(d.state.runState, "Finished");
});

Deno.test("checkpoint: without a report Cooldown still ends by its timer", () => {
  const d = inCooldown(3, { totalSteps: 100, epochTime: 20, warmupTime: 5 });
  voteAll(d);
  const start = d.state.runStateStartUnixTimestamp;
  assert.equal(nextTickDeadline(d.state, 0), start + d.state.config.cooldownTime);
  d.tick(d.state.config.cooldownTime);
  assert.equal(d.state.runState, "WaitingForMembers");
  assert.deepEqual(d.state.model.checkpoint, {
    kind: "P2P",
    repo: { repoId: "org/model", revision: null },
  });
});

Deno.test("checkpoint: a client that is not elected is refused, naming the elected", () => {
  const d = inCooldown(9);
  voteAll(d);
  const chosen = elected(d.state);
  assert.equal(chosen.length, 3);
  const other = d.state.epochState.clients.findIndex((_, i) => !chosen.includes(i));
  assertRejected(
    () => checkpoint(d.state, idOf(d.state, other), other, HUB, d.now),
    "InvalidCheckpoint",
    d.state,
    new RegExp(
      `client ${other} is not an elected checkpointer of epoch 0 \\(elected: ${
        chosen.join(", ")
      }\\)`,
    ),
  );
});

Deno.test("checkpoint: only during Cooldown", () => {
  const d = new RunDriver(testState({ epochTime: 1000, totalSteps: 3 }));
  d.startEpoch(identities(3));
  const sender = (i: number) => idOf(d.state, i);
  assertRejected(
    () => checkpoint(d.state, sender(0), 0, HUB, d.now),
    "WrongRunState",
    d.state,
    /in Warmup/,
  );
  d.warmupTimeout();
  assertRejected(
    () => checkpoint(d.state, sender(0), 0, HUB, d.now),
    "WrongRunState",
    d.state,
    /in RoundTrain/,
  );
  while (d.state.runState !== "Cooldown") d.fullRound();
  voteAll(d);
  const [first] = elected(d.state);
  const lateId = sender(first);
  checkpoint(d.state, lateId, first, HUB, d.now);
  // Another checkpointer's report finds the run moved on (here, Finished).
  assertRejected(() => checkpoint(d.state, lateId, first, HUB, d.now), "WrongRunState", d.state);
  const u = testState();
  u.runState = "Uninitialized";
  assertRejected(() => checkpoint(u, idOf(d.state, 0), 0, HUB, 1), "WrongRunState", u);
});

Deno.test("checkpoint: refused until the Cooldown digest vote has a quorum", () => {
  const d = inCooldown(4);
  const [first] = elected(d.state);
  const from = idOf(d.state, first);
  assertRejected(
    () => checkpoint(d.state, from, first, HUB, d.now),
    "InvalidCheckpoint",
    d.state,
    /digest vote has no quorum yet \(0 votes, 2 agreeing needed\)/,
  );
  // 4 witnesses, quorum 2: a split vote is no quorum either.
  const selection = roundSelection(d.state.config, currentRound(d.state));
  witnessIndices(d.state).forEach((i, k) => {
    cooldownWitness(d.state, idOf(d.state, i), selection.witnessProof(i), digest(k % 2 + 1), d.now);
  });
  assertRejected(() => checkpoint(d.state, from, first, HUB, d.now), "InvalidCheckpoint", d.state);
});

Deno.test("checkpoint: wrong sender, unknown index, left client or bad repo is InvalidCheckpoint", () => {
  const d = inCooldown(3);
  voteAll(d);
  const [first] = elected(d.state);
  const other = (first + 1) % 3;
  const from = idOf(d.state, first);
  assertRejected(
    () => checkpoint(d.state, idOf(d.state, other), first, HUB, d.now),
    "InvalidCheckpoint",
    d.state,
    /not the sender/,
  );
  assertRejected(
    () => checkpoint(d.state, from, 5, HUB, d.now),
    "InvalidCheckpoint",
    d.state,
    /no client 5/,
  );
  const long: Checkpoint = { kind: "Hub", repo: { repoId: "x".repeat(65), revision: null } };
  assertRejected(() => checkpoint(d.state, from, first, long, d.now), "InvalidCheckpoint", d.state);
  const gcs: Checkpoint = { kind: "Gcs", repo: { bucket: "b", prefix: null } };
  assertRejected(() => checkpoint(d.state, from, first, gcs, d.now), "InvalidCheckpoint", d.state);
  const p2p: Checkpoint = { kind: "P2P", repo: { repoId: "org/x", revision: null } };
  assertRejected(() => checkpoint(d.state, from, first, p2p, d.now), "InvalidCheckpoint", d.state);
  d.state.epochState.clients[first].state = "Withdrawn";
  assertRejected(
    () => checkpoint(d.state, from, first, HUB, d.now),
    "InvalidCheckpoint",
    d.state,
    /is Withdrawn/,
  );
  assert.throws(() => checkpoint(d.state, from, first, HUB, -1), RangeError);
});
