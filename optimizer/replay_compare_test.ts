import assert from "node:assert/strict";
import { chunkLayout } from "./layout.ts";
import {
  coefficientOverlap,
  compareCoefficients,
  compareStates,
  mismatchPpm,
  ownMatchesResult,
} from "./replay_compare.ts";
import type { SparseParam } from "./compress.ts";

// One parameter of 2 chunks of 16 coefficients, 4 kept per chunk.
const layouts = [chunkLayout("w", [4, 8], { chunk: 4, topk: 4 })];
const p = (indices: number[], values: number[]): SparseParam[] => [{
  indices: Uint32Array.from(indices),
  values: Float32Array.from(values),
}];
const replayed = p([3, 0, 9, 5, 1, 2, 3, 15], [0.5, -0.25, 1, -2, 3, -1, 0.5, 4]);

Deno.test("coefficients compare by index within the chunk, whatever the entry order", () => {
  assert.equal(layouts[0].chunks, 2);
  assert.equal(layouts[0].k, 4);
  // Same set, other order, signs as ±1.
  const same = p([0, 3, 5, 9, 15, 3, 2, 1], [-1, 1, -1, 1, 1, 1, -1, 1]);
  assert.deepEqual(compareCoefficients(same, replayed, layouts), {
    entries: 8,
    missing: 0,
    signFlips: 0,
  });
  // One coefficient the replay did not select (chunk 0: 7), one negated (chunk 1: 15).
  const off = p([0, 3, 5, 7, 15, 3, 2, 1], [-1, 1, -1, 1, -1, 1, -1, 1]);
  const c = compareCoefficients(off, replayed, layouts);
  assert.deepEqual(c, { entries: 8, missing: 1, signFlips: 1 });
  assert.equal(mismatchPpm(c), 250_000);
  // Chunk 1's coefficients named in chunk 0 and back: only 3 of each set coincide.
  const shifted = p([1, 2, 3, 15, 0, 3, 5, 9], [1, 1, 1, 1, 1, 1, 1, 1]);
  assert.equal(compareCoefficients(shifted, replayed, layouts).missing, 6);
  assert.equal(coefficientOverlap(same, replayed, layouts), 1);
  assert.equal(coefficientOverlap(off, replayed, layouts), 7 / 8);
  assert.throws(() => compareCoefficients(p([1], [1]), replayed, layouts), /1 entries, expected 8/);
});

Deno.test("states compare by L2 over δ and the own values both selected", () => {
  const delta = Float32Array.from({ length: 32 }, (_, i) => i / 10);
  const own = { indices: replayed[0].indices, values: replayed[0].values };
  const base = { kind: "distro" as const, delta, own };
  const moved = delta.slice();
  moved[4] += 3;
  moved[5] -= 4;
  const ownMoved = {
    indices: Uint32Array.from([3, 0, 9, 5, 1, 2, 3, 14]),
    values: Float32Array.from([0.5, -0.25, 1, -2, 3, -1, 1.5, 4]),
  };
  const c = compareStates({ kind: "distro", delta: moved, own: ownMoved }, base, layouts);
  assert.ok(Math.abs(c.deltaDistance - 5) < 1e-6);
  assert.equal(c.ownDistance, 1);
  assert.equal(c.ownUnmatched, 1);
  assert.deepEqual(compareStates(base, base, layouts), {
    deltaDistance: 0,
    ownDistance: 0,
    ownUnmatched: 0,
  });
  assert.throws(() => compareStates({ ...base, own: null }, base, layouts), /own result/);
});

Deno.test("the served state's own result must be exactly the published coefficients and signs", () => {
  const state = {
    kind: "distro" as const,
    delta: new Float32Array(32),
    own: { indices: replayed[0].indices, values: replayed[0].values },
  };
  const published = p([0, 3, 5, 9, 15, 3, 2, 1], [-1, 1, -1, 1, 1, 1, -1, 1]);
  assert.equal(ownMatchesResult(state, published, layouts), true);
  const flipped = p([0, 3, 5, 9, 15, 3, 2, 1], [1, 1, -1, 1, 1, 1, -1, 1]);
  assert.equal(ownMatchesResult(state, flipped, layouts), false);
  assert.equal(ownMatchesResult({ ...state, own: null }, published, layouts), false);
});
