import assert from "node:assert/strict";
import { bloomAdd } from "./bloom.ts";
import { sha256 } from "./hash.ts";
import {
  expectedWitnesses,
  selectConsensusCommitmentByWitnesses,
  witnessQuorum,
} from "./witness_quorum.ts";
import { emptyBloom, testConfig, testState } from "../../tests/support/coordinator_fixtures.ts";
import type { Witness } from "./types.ts";

Deno.test("witnessQuorum: 1 -> 1, 2 -> 2, 3 -> 2, then floor(2W/3)", () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 9, 32].map(witnessQuorum), [1, 1, 2, 2, 2, 3, 4, 6, 21]);
  assert.throws(() => witnessQuorum(-1), RangeError);
  assert.throws(() => witnessQuorum(2.5), RangeError);
});

Deno.test("expectedWitnesses: witnessNodes, or min(clients, 32) when it is 0", () => {
  assert.equal(expectedWitnesses(testConfig({ witnessNodes: 2 }), 50), 2);
  assert.equal(expectedWitnesses(testConfig({ witnessNodes: 0 }), 5), 5);
  assert.equal(expectedWitnesses(testConfig({ witnessNodes: 0 }), 50), 32);
});

const state = testState();
const hash = (i: number) => sha256(new Uint8Array([i]));

function voter(...hashes: Uint8Array[]): Witness {
  const broadcastBloom = emptyBloom(state);
  for (const h of hashes) bloomAdd(broadcastBloom, h);
  return {
    proof: { index: 0, position: 0, witness: true },
    participantBloom: emptyBloom(state),
    broadcastBloom,
    broadcastMerkle: new Uint8Array(32),
  };
}

Deno.test("consensus: each witness votes for the first commitment it saw; quorum needed", () => {
  const commitments = [hash(1), hash(2), hash(3)];
  // Two witnesses saw 2 (one of them also 3, but 2 comes first); one saw only 3.
  const ws = [voter(hash(2)), voter(hash(3), hash(2)), voter(hash(3))];
  assert.equal(selectConsensusCommitmentByWitnesses(commitments, ws, 2), 1);
  assert.equal(selectConsensusCommitmentByWitnesses(commitments, ws, 3), null);
  assert.equal(selectConsensusCommitmentByWitnesses(commitments, [], 1), null);
});

Deno.test("consensus: ties go to the lowest index", () => {
  const commitments = [hash(1), hash(2)];
  const ws = [voter(hash(2)), voter(hash(1))];
  assert.equal(selectConsensusCommitmentByWitnesses(commitments, ws, 1), 0);
});
