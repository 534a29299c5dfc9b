import assert from "node:assert/strict";
import { CoordinatorError } from "./errors.ts";
import { currentRound, roundSelection } from "./machine_queries.ts";
import { cooldownWitness, warmupWitness, witness } from "./machine_witness.ts";
import {
  digestConsensus,
  NO_DIGEST,
  recordDigest,
  recordedDigest,
  tallyDigestVotes,
} from "./params_digest.ts";
import { NUM_DIGEST_RECORDS } from "./types.ts";
import {
  identities,
  RunDriver,
  testState,
  warmupReport,
  witnessIndices,
  witnessReport,
} from "../../tests/support/coordinator_fixtures.ts";

const digest = (b: number) => new Uint8Array(32).fill(b);

function assertRejected(fn: () => unknown, code: string, state: unknown): void {
  const before = structuredClone(state);
  assert.throws(fn, (e: unknown) => e instanceof CoordinatorError && e.code === code);
  assert.deepEqual(state, before, "a rejected call must leave the state untouched");
}

/** A run of `n` clients in Warmup. */
function inWarmup(n: number, config = {}): RunDriver {
  const d = new RunDriver(testState(config));
  d.startEpoch(identities(n));
  return d;
}

/** Every witness of the current round reports, voting `vote(index)`. */
function witnessAllVoting(d: RunDriver, vote: (index: number) => Uint8Array): void {
  for (const index of witnessIndices(d.state)) {
    const from = d.state.epochState.clients[index].id;
    witness(d.state, from, witnessReport(d.state, index), d.now, vote(index));
  }
}

Deno.test("digestConsensus: most votes, at least the quorum, no tie", () => {
  const [a, b, c] = [digest(1), digest(2), digest(3)];
  assert.equal(digestConsensus([a, b, a, c], 2), a);
  assert.equal(digestConsensus([a, b, a, c], 3), null, "below the quorum");
  assert.equal(digestConsensus([a, b, b, a], 2), null, "a tie records nothing");
  assert.equal(digestConsensus([], 1), null);
  assert.deepEqual(digestConsensus([a, digest(1)], 2), a, "equal bytes are one digest");
});

Deno.test("recordDigest keeps the newest NUM_DIGEST_RECORDS steps; a step's first record is final", () => {
  const s = testState();
  recordDigest(s, 5, digest(5));
  recordDigest(s, 5, digest(6));
  recordDigest(s, 4, digest(4));
  assert.deepEqual(s.paramsDigests, [{ step: 5, digest: digest(5) }]);
  for (let step = 6; step < 6 + NUM_DIGEST_RECORDS; step++) recordDigest(s, step, digest(step));
  assert.equal(s.paramsDigests.length, NUM_DIGEST_RECORDS);
  assert.equal(s.paramsDigests[0].step, 6);
  assert.equal(recordedDigest(s.paramsDigests, 5), null, "the oldest fell out");
  assert.deepEqual(recordedDigest(s.paramsDigests, 13), digest(13));
});

Deno.test("warmup witnesses vote for the model the epoch starts from", () => {
  const d = inWarmup(3);
  const ids = identities(3);
  const step = d.state.progress.step;
  warmupWitness(d.state, ids[0], warmupReport(d.state, 0), d.now, 5n, digest(7));
  warmupWitness(d.state, ids[1], warmupReport(d.state, 1), d.now, 5n, digest(8));
  assert.deepEqual(d.state.paramsDigests, [], "nothing is recorded before Warmup ends");
  warmupWitness(d.state, ids[2], warmupReport(d.state, 2), d.now, 5n, digest(7));
  assert.equal(d.state.runState, "RoundTrain");
  assert.deepEqual(d.state.paramsDigests, [{ step, digest: digest(7) }]);
  assert.deepEqual(d.state.epochState.digestVotes, [], "the votes are cleared");
});

Deno.test("a round's witnesses vote for its step; the record appears when the round ends", () => {
  const d = inWarmup(4);
  d.warmupTimeout();
  const step = d.state.progress.step;
  const liar = witnessIndices(d.state)[0];
  witnessAllVoting(d, (i) => i === liar ? digest(66) : digest(9));
  assert.deepEqual(d.state.paramsDigests, []);
  d.witnessTimeout();
  assert.equal(d.state.runState, "RoundTrain");
  assert.deepEqual(d.state.paramsDigests, [{ step, digest: digest(9) }]);
  // A round whose witnesses have no digest (all zero) records nothing for its step.
  witnessAllVoting(d, () => NO_DIGEST);
  d.witnessTimeout();
  assert.equal(d.state.paramsDigests.length, 1);
});

Deno.test("without a quorum for one digest nothing is recorded", () => {
  const d = inWarmup(4);
  d.warmupTimeout();
  // 4 witnesses, quorum 2: an even split is a tie.
  witnessAllVoting(d, (i) => i % 2 === 0 ? digest(1) : digest(2));
  d.witnessTimeout();
  assert.deepEqual(d.state.paramsDigests, []);
});

Deno.test("cooldownWitness: the last round's witnesses vote for the next epoch's start", () => {
  const d = inWarmup(3, { epochTime: 1000, totalSteps: 3 });
  d.warmupTimeout();
  while (d.state.runState !== "Cooldown") d.fullRound();
  const next = d.state.progress.step;
  const [first, ...rest] = witnessIndices(d.state);
  const proof = (i: number) =>
    roundSelection(d.state.config, currentRound(d.state)).witnessProof(i);
  const idOf = (i: number) => d.state.epochState.clients[i].id;
  cooldownWitness(d.state, idOf(first), proof(first), digest(42), d.now);
  assertRejected(
    () => cooldownWitness(d.state, idOf(first), proof(first), digest(42), d.now),
    "DuplicateWitness",
    d.state,
  );
  for (const i of rest) cooldownWitness(d.state, idOf(i), proof(i), digest(42), d.now);
  d.tick(d.state.config.cooldownTime);
  assert.equal(d.state.runState, "Finished");
  assert.deepEqual(recordedDigest(d.state.paramsDigests, next), digest(42));
});

Deno.test("cooldownWitness refuses what it must, leaving the state untouched", () => {
  const d = inWarmup(3, { epochTime: 1000, totalSteps: 3 });
  d.warmupTimeout();
  const proofNow = (i: number) =>
    roundSelection(d.state.config, currentRound(d.state)).witnessProof(i);
  const w = witnessIndices(d.state)[0];
  const from = d.state.epochState.clients[w].id;
  assertRejected(
    () => cooldownWitness(d.state, from, proofNow(w), digest(1), d.now),
    "WrongRunState",
    d.state,
  );
  while (d.state.runState !== "Cooldown") d.fullRound();
  const witnesses = witnessIndices(d.state);
  const index = witnesses[0];
  const sender = d.state.epochState.clients[index].id;
  const proof = proofNow(index);
  assertRejected(
    () => cooldownWitness(d.state, sender, proof, NO_DIGEST, d.now),
    "InvalidWitness",
    d.state,
  );
  assertRejected(
    () => cooldownWitness(d.state, sender, proof, new Uint8Array(31).fill(1), d.now),
    "InvalidWitness",
    d.state,
  );
  assertRejected(
    () =>
      cooldownWitness(
        d.state,
        sender,
        { ...proof, position: proof.position + 1 },
        digest(1),
        d.now,
      ),
    "InvalidCommitteeProof",
    d.state,
  );
  const other = d.state.epochState.clients.findIndex((_, i) => i !== index);
  assertRejected(
    () => cooldownWitness(d.state, d.state.epochState.clients[other].id, proof, digest(1), d.now),
    "InvalidWitness",
    d.state,
  );
});

Deno.test("tallyDigestVotes labels the votes with the step they were cast in", () => {
  const s = testState();
  s.progress.step = 12;
  s.epochState.digestVotes = [{ index: 0, digest: digest(3) }];
  tallyDigestVotes(s, 1);
  assert.deepEqual(s.paramsDigests, [{ step: 12, digest: digest(3) }]);
});
