import assert from "node:assert/strict";
import { CommitteeSelection } from "./committee_selection.ts";
import type { Committee, CoordinatorState, Round } from "./types.ts";

const create = (
  tieBreakerNodes: number,
  witnessNodes: number,
  verificationPercent: number,
  totalNodes: number,
  randomSeed = 12345n,
) =>
  CommitteeSelection.create({
    tieBreakerNodes,
    witnessNodes,
    verificationPercent,
    totalNodes,
    randomSeed,
  });

function counts(cs: CommitteeSelection): Record<Committee, number> {
  const out: Record<Committee, number> = { TieBreaker: 0, Verifier: 0, Trainer: 0 };
  for (let i = 0; i < cs.totalNodes; i++) out[cs.committeeProof(i).committee]++;
  return out;
}

Deno.test("sizes for (tie 10, witness 20, verify 30%, total 100)", () => {
  const cs = create(10, 20, 30, 100);
  assert.equal(cs.tieBreakerNodes, 10);
  assert.equal(cs.witnessNodes, 20);
  assert.equal(cs.verifierNodes, 27); // (100 - 10) * 30 / 100
  assert.equal(cs.trainerNodes, 63);
  assert.equal(cs.totalNodes, 100);
});

Deno.test("committees follow position ranges and count 10/27/63", () => {
  const cs = create(10, 20, 30, 100);
  for (let i = 0; i < 100; i++) {
    const p = cs.committeeProof(i);
    assert.equal(p.index, i);
    assert.ok(p.position < 100);
    const expected = p.position < 10 ? "TieBreaker" : p.position < 37 ? "Verifier" : "Trainer";
    assert.equal(p.committee, expected);
  }
  assert.deepEqual(counts(cs), { TieBreaker: 10, Verifier: 27, Trainer: 63 });
});

Deno.test("(tie 10, witness 5, verify 20%, total 100) gives 10/18/72", () => {
  const cs = create(10, 5, 20, 100);
  assert.equal(cs.verifierNodes, 18); // 90 * 20 / 100
  assert.deepEqual(counts(cs), { TieBreaker: 10, Verifier: 18, Trainer: 72 });
});

Deno.test("exactly 20 witnesses, each with position < 20", () => {
  const cs = create(10, 20, 30, 100);
  let witnesses = 0;
  for (let i = 0; i < 100; i++) {
    const p = cs.witnessProof(i);
    assert.equal(p.witness, p.position < 20);
    if (p.witness) witnesses++;
  }
  assert.equal(witnesses, 20);
  assert.equal(cs.witnessIndices().length, 20);
});

Deno.test("witnessNodes 0 means MAX_WITNESSES (32) witnesses", () => {
  assert.equal(create(0, 0, 0, 100).witnessIndices().length, 32);
  assert.equal(create(0, 0, 0, 10).witnessIndices().length, 10);
});

Deno.test("positions match the independently computed swap-or-not vector", () => {
  // See swap_or_not_test.ts: committee positions of indices 0..3 for seed 12345, n = 100.
  const cs = create(10, 20, 30, 100);
  assert.deepEqual([0, 1, 2, 3].map((i) => cs.committeePosition(i)), [83, 58, 32, 29]);
  // Witness salt gives a different permutation: [58, 86, 21, 7] (same Python check).
  assert.deepEqual([0, 1, 2, 3].map((i) => cs.witnessPosition(i)), [58, 86, 21, 7]);
});

Deno.test("own proofs verify; wrong ones fail", () => {
  const cs = create(10, 20, 30, 100);
  for (let i = 0; i < 100; i++) {
    const c = cs.committeeProof(i);
    assert.ok(cs.verifyCommittee(c));
    assert.ok(!cs.verifyCommittee({ committee: "Verifier", position: 99, index: i }));
    assert.ok(!cs.verifyCommittee({ ...c, position: (c.position + 1) % 100 }));
    const other: Committee = c.committee === "Trainer" ? "TieBreaker" : "Trainer";
    assert.ok(!cs.verifyCommittee({ ...c, committee: other }));

    const w = cs.witnessProof(i);
    assert.ok(cs.verifyWitness(w));
    assert.ok(!cs.verifyWitness({ witness: !w.witness, position: 99, index: i }));
    assert.ok(!cs.verifyWitness({ ...w, witness: !w.witness }));
  }
  // Another client's proof under my index fails.
  const p0 = cs.committeeProof(0);
  assert.ok(!cs.verifyCommittee({ ...p0, index: 1 }));
});

Deno.test("proofs with out-of-range or malformed indices are false, not exceptions", () => {
  const cs = create(10, 20, 30, 100);
  for (const index of [-1, 100, 1.5, Number.NaN]) {
    assert.equal(cs.verifyCommittee({ committee: "Trainer", position: 50, index }), false);
    assert.equal(cs.verifyWitness({ witness: false, position: 50, index }), false);
  }
  assert.throws(() => cs.committeeProof(100), RangeError);
  assert.throws(() => cs.witnessProof(-1), RangeError);
});

Deno.test("same seed, same selection; another seed, another", () => {
  const a = create(10, 5, 20, 100);
  const b = create(10, 5, 20, 100);
  assert.deepEqual(a.seed, b.seed);
  const positions = (cs: CommitteeSelection) =>
    Array.from({ length: 100 }, (_, i) => cs.committeePosition(i));
  assert.deepEqual(positions(a), positions(b));
  assert.notDeepEqual(positions(a), positions(create(10, 5, 20, 100, 12346n)));
});

Deno.test("invalid selections throw RangeError", () => {
  assert.throws(() => create(10, 5, 20, 9), /tieBreakerNodes/);
  assert.throws(() => create(10, 5, 101, 100), /verificationPercent/);
  assert.throws(() => create(10, 5, 20, 5), RangeError);
  assert.throws(() => create(10, 50, 20, 11), /witnessNodes/);
  assert.throws(() => create(10, 5, 20, 2 ** 32), RangeError);
  assert.throws(() => create(-1, 5, 20, 100), RangeError);
  assert.throws(() => create(0, 0, 0, 10, -1n), /randomSeed/);
  assert.throws(() => create(0, 0, 0, 10, 1n << 64n), /randomSeed/);
});

Deno.test("all tie-breakers", () => {
  const cs = create(100, 5, 20, 100);
  assert.deepEqual(counts(cs), { TieBreaker: 100, Verifier: 0, Trainer: 0 });
  assert.deepEqual(cs.trainerIndices(), []);
});

Deno.test("no verifiers: 10 tie-breakers and 90 trainers", () => {
  const cs = create(10, 5, 0, 100);
  assert.deepEqual(counts(cs), { TieBreaker: 10, Verifier: 0, Trainer: 90 });
  assert.equal(cs.trainerIndices().length, 90);
});

Deno.test("an empty round has no proofs", () => {
  const cs = create(0, 0, 0, 0);
  assert.equal(cs.totalNodes, 0);
  assert.deepEqual(cs.trainerIndices(), []);
  assert.equal(cs.verifyCommittee({ committee: "Trainer", position: 0, index: 0 }), false);
});

function round(overrides: Partial<Round>): Round {
  return {
    witnesses: [],
    dataIndex: 0,
    randomSeed: 0n,
    height: 0,
    clientsLen: 0,
    tieBreakerTasks: 0,
    rejected: [],
    ...overrides,
  };
}

Deno.test("fromState reads the current or previous ring-buffer slot", () => {
  const rounds = [
    round({ randomSeed: 1n, clientsLen: 8 }),
    round({ randomSeed: 2n, clientsLen: 9 }),
    round({ randomSeed: 3n, clientsLen: 10 }),
    round({ randomSeed: 4n, clientsLen: 11 }),
  ];
  const state = {
    config: { verificationPercent: 0, witnessNodes: 3 },
    epochState: { rounds, roundsHead: 0 },
  } as unknown as CoordinatorState;
  const current = CommitteeSelection.fromState(state, 0);
  assert.equal(current.totalNodes, 8);
  assert.equal(current.witnessNodes, 3);
  assert.deepEqual(
    current.seed,
    CommitteeSelection.create({
      tieBreakerNodes: 0,
      verificationPercent: 0,
      witnessNodes: 3,
      totalNodes: 8,
      randomSeed: 1n,
    }).seed,
  );
  // head 0, offset -1 wraps to slot 3.
  assert.equal(CommitteeSelection.fromState(state, -1).totalNodes, 11);
  state.epochState.roundsHead = 2;
  assert.equal(CommitteeSelection.fromState(state, 0).totalNodes, 10);
  assert.equal(CommitteeSelection.fromState(state, -1).totalNodes, 9);
  state.epochState.roundsHead = 4;
  assert.throws(() => CommitteeSelection.fromState(state, 0), /roundsHead/);
});
