import assert from "node:assert/strict";
import { CoordinatorError } from "./errors.ts";
import { currentRound, roundSelection } from "./machine_queries.ts";
import { warmupWitness, witness } from "./machine_witness.ts";
import { MAX_WITNESSES } from "./types.ts";
import {
  emptyBloom,
  identities,
  identity,
  RunDriver,
  testState,
  warmupReport,
  witnessIndices,
  witnessReport,
} from "../../tests/support/coordinator_fixtures.ts";
import { createBloom } from "./bloom.ts";

function assertRejected(fn: () => unknown, code: string, state: unknown): void {
  const before = structuredClone(state);
  assert.throws(fn, (e: unknown) => e instanceof CoordinatorError && e.code === code);
  assert.deepEqual(state, before, "a rejected call must leave the state untouched");
}

function inWarmup(n: number, config = {}): RunDriver {
  const d = new RunDriver(testState(config));
  d.startEpoch(identities(n));
  return d;
}

function inRoundTrain(n: number, config = {}): RunDriver {
  const d = inWarmup(n, config);
  d.warmupTimeout();
  return d;
}

Deno.test("warmupWitness: training starts once every expected client reported", () => {
  const d = inWarmup(3);
  const ids = identities(3);
  assert.deepEqual(warmupWitness(d.state, ids[0], warmupReport(d.state, 0), d.now, 5n), {
    kind: "Changed",
  });
  warmupWitness(d.state, ids[2], warmupReport(d.state, 2), d.now, 5n);
  assert.equal(d.state.runState, "Warmup");
  warmupWitness(d.state, ids[1], warmupReport(d.state, 1), d.now, 5n);
  assert.equal(d.state.runState, "RoundTrain");
  assert.equal(currentRound(d.state).randomSeed, 5n);
  assert.equal(currentRound(d.state).witnesses.length, 0, "warmup reports are not round witnesses");
});

Deno.test("warmupWitness: with witnessNodes set, that many reports start training", () => {
  const d = inWarmup(4, { witnessNodes: 2 });
  const ids = identities(4);
  warmupWitness(d.state, ids[3], warmupReport(d.state, 3), d.now, 5n);
  warmupWitness(d.state, ids[1], warmupReport(d.state, 1), d.now, 5n);
  assert.equal(d.state.runState, "RoundTrain");
});

Deno.test("warmupWitness: the proof index must be the sender's (Psyche quirk 6 fixed)", () => {
  const d = inWarmup(3);
  assertRejected(
    () => warmupWitness(d.state, identity(0), warmupReport(d.state, 1), d.now, 5n),
    "InvalidWitness",
    d.state,
  );
  assertRejected(
    () => warmupWitness(d.state, identity(99), warmupReport(d.state, 0), d.now, 5n),
    "InvalidWitness",
    d.state,
  );
  assertRejected(
    () => warmupWitness(d.state, identity(0), warmupReport(d.state, 7), d.now, 5n),
    "InvalidWitness",
    d.state,
  );
  const skewed = warmupReport(d.state, 0);
  skewed.proof.position = 2;
  assertRejected(
    () => warmupWitness(d.state, identity(0), skewed, d.now, 5n),
    "InvalidWitness",
    d.state,
  );
});

Deno.test("warmupWitness: duplicates are rejected; withdrawn clients cannot report", () => {
  const d = inWarmup(3);
  warmupWitness(d.state, identity(0), warmupReport(d.state, 0), d.now, 5n);
  assertRejected(
    () => warmupWitness(d.state, identity(0), warmupReport(d.state, 0), d.now, 5n),
    "DuplicateWitness",
    d.state,
  );
  d.state.epochState.clients[1].state = "Withdrawn";
  assertRejected(
    () => warmupWitness(d.state, identity(1), warmupReport(d.state, 1), d.now, 5n),
    "InvalidWitness",
    d.state,
  );
});

Deno.test("warmupWitness: late reports are ignored in RoundTrain, refused elsewhere", () => {
  const d = inRoundTrain(2);
  const before = structuredClone(d.state);
  assert.deepEqual(warmupWitness(d.state, identity(0), warmupReport(d.state, 0), d.now, 5n), {
    kind: "Unchanged",
  });
  assert.deepEqual(d.state, before);
  const w = testState();
  assertRejected(
    () => warmupWitness(w, identity(0), warmupReport(w, 0), 1, 5n),
    "WrongRunState",
    w,
  );
  w.runState = "Paused";
  assertRejected(() => warmupWitness(w, identity(0), warmupReport(w, 0), 1, 5n), "Halted", w);
});

Deno.test("warmupWitness: if reports arrive after clients left, too few clients end the epoch", () => {
  const d = inWarmup(3, { minClients: 2, witnessNodes: 1 });
  d.state.epochState.clients[1].state = "Withdrawn";
  d.state.epochState.clients[2].state = "Withdrawn";
  assert.deepEqual(
    warmupWitness(d.state, identity(0), warmupReport(d.state, 0), d.now, 5n),
    { kind: "EpochEnd", success: false },
  );
  assert.equal(d.state.runState, "WaitingForMembers");
});

Deno.test("witness: accepted from an elected witness, stored as a copy", () => {
  const d = inRoundTrain(4);
  const [i] = witnessIndices(d.state);
  const report = witnessReport(d.state, i);
  assert.deepEqual(witness(d.state, identity(i), report, d.now), { kind: "Changed" });
  report.participantBloom.bits[0] = 0xff;
  assert.equal(currentRound(d.state).witnesses[0].participantBloom.bits[0], 0);
});

Deno.test("witness: a proof that does not verify is InvalidCommitteeProof", () => {
  const d = inRoundTrain(6, { witnessNodes: 2 });
  const sel = roundSelection(d.state.config, currentRound(d.state));
  const nonWitness = [0, 1, 2, 3, 4, 5].find((i) => !sel.isWitness(i))!;
  const forged = witnessReport(d.state, nonWitness);
  forged.proof.witness = true; // claims a seat it does not have
  assertRejected(
    () => witness(d.state, identity(nonWitness), forged, d.now),
    "InvalidCommitteeProof",
    d.state,
  );
  const [w] = witnessIndices(d.state);
  const wrongPosition = witnessReport(d.state, w);
  wrongPosition.proof.position = (wrongPosition.proof.position + 1) % 6;
  assertRejected(
    () => witness(d.state, identity(w), wrongPosition, d.now),
    "InvalidCommitteeProof",
    d.state,
  );
  const honestNo = witnessReport(d.state, nonWitness);
  assertRejected(
    () => witness(d.state, identity(nonWitness), honestNo, d.now),
    "InvalidWitness",
    d.state,
  );
});

Deno.test("witness: someone else's valid proof is InvalidWitness", () => {
  const d = inRoundTrain(4);
  const [i] = witnessIndices(d.state);
  const other = identity((i + 1) % 4);
  assertRejected(
    () => witness(d.state, other, witnessReport(d.state, i), d.now),
    "InvalidWitness",
    d.state,
  );
  assertRejected(
    () => witness(d.state, identity(42), witnessReport(d.state, i), d.now),
    "InvalidWitness",
    d.state,
  );
});

Deno.test("witness: one report per witness", () => {
  const d = inRoundTrain(4);
  const [i] = witnessIndices(d.state);
  witness(d.state, identity(i), witnessReport(d.state, i), d.now);
  assertRejected(
    () => witness(d.state, identity(i), witnessReport(d.state, i), d.now),
    "DuplicateWitness",
    d.state,
  );
});

Deno.test("witness: blooms must have the run's size; the Merkle root 32 bytes", () => {
  const d = inRoundTrain(4);
  const [i] = witnessIndices(d.state);
  const small = witnessReport(d.state, i);
  small.participantBloom = createBloom(1024, new BigUint64Array(8));
  assertRejected(() => witness(d.state, identity(i), small, d.now), "InvalidWitness", d.state);
  const keys = witnessReport(d.state, i);
  keys.broadcastBloom = { keys: new BigUint64Array(1), bits: emptyBloom(d.state).bits };
  assertRejected(() => witness(d.state, identity(i), keys, d.now), "InvalidWitness", d.state);
  const merkle = witnessReport(d.state, i);
  merkle.broadcastMerkle = new Uint8Array(31);
  assertRejected(() => witness(d.state, identity(i), merkle, d.now), "InvalidWitness", d.state);
  const junk = { proof: { index: "0" } } as unknown as Parameters<typeof witness>[2];
  assertRejected(() => witness(d.state, identity(i), junk, d.now), "InvalidWitness", d.state);
});

Deno.test("witness: only in RoundTrain or RoundWitness", () => {
  const d = inWarmup(2);
  assertRejected(
    () => witness(d.state, identity(0), warmupReport(d.state, 0), d.now),
    "WrongRunState",
    d.state,
  );
  d.state.runState = "Finished";
  assertRejected(
    () => witness(d.state, identity(0), warmupReport(d.state, 0), d.now),
    "Halted",
    d.state,
  );
});

Deno.test("witness: late witnesses are still accepted in RoundWitness, up to the cap", () => {
  const d = inRoundTrain(40, { maxClients: 64 });
  const idx = witnessIndices(d.state);
  assert.equal(idx.length, MAX_WITNESSES);
  d.tick(d.state.config.maxRoundTrainTime);
  assert.equal(d.state.runState, "RoundWitness");
  for (const i of idx) witness(d.state, identity(i), witnessReport(d.state, i), d.now);
  assert.equal(currentRound(d.state).witnesses.length, MAX_WITNESSES);
});
