import assert from "node:assert/strict";
import { concatRows, documentSpans, rowPositions, rowTargets, sliceRows } from "./rows.ts";

Deno.test("rowTargets shifts the labels (tokens by default) and counts the predictions", () => {
  const tokens = Uint32Array.from([1, 2, 3, 4, 5, 6]);
  const plain = rowTargets(tokens, { seqLen: 3, vocabSize: 10 });
  assert.deepEqual([...plain.targets], [2, 3, -100, 5, 6, -100]);
  assert.equal(plain.predictions, 4);
  const labels = Int32Array.from([-100, -100, 3, 4, -100, 6]);
  const masked = rowTargets(tokens, { seqLen: 3, vocabSize: 10, labels });
  // Label 4 starts row 1: no position predicts it.
  assert.deepEqual([...masked.targets], [-100, 3, -100, -100, 6, -100]);
  assert.equal(masked.predictions, 2);
  assert.throws(() => rowTargets(tokens, { seqLen: 3, vocabSize: 6 }), /token 6 at position 5/);
});

Deno.test("rowPositions and documentSpans check their ranges", () => {
  assert.deepEqual([...rowPositions(Int32Array.from([0, 2, 0]), { seqLen: 3 })], [0, 2, 0]);
  assert.throws(() => rowPositions(Int32Array.from([-1]), { seqLen: 3 }), /position id -1/);
  const spans = documentSpans([[1, 2], [3]], { rows: 2, seqLen: 3 });
  assert.deepEqual([...spans], [0, 1, 1, 3, 1, 3, 0, 3, 0, 3, 0, 3]);
  assert.throws(() => documentSpans([[2, 2]], { rows: 1, seqLen: 3 }), /adding up to 3/);
});

Deno.test("concatRows fills the defaults of parts without a column; sliceRows takes rows", () => {
  const a = { tokens: Uint32Array.from([1, 2]) };
  const b = {
    tokens: Uint32Array.from([3, 4, 5, 6]),
    labels: Int32Array.from([-100, 4, -100, 6]),
    positionIds: Int32Array.from([0, 0, 0, 1]),
    sequenceLengths: [[1, 1], [2]],
  };
  const both = concatRows([a, b], { seqLen: 2 });
  assert.deepEqual([...both.tokens], [1, 2, 3, 4, 5, 6]);
  assert.deepEqual([...both.labels!], [1, 2, -100, 4, -100, 6]);
  assert.deepEqual([...both.positionIds!], [0, 1, 0, 0, 0, 1]);
  assert.deepEqual(both.sequenceLengths, [[2], [1, 1], [2]]);
  const plain = concatRows([a, a], { seqLen: 2 });
  assert.equal(plain.labels, null);
  assert.equal(plain.positionIds, null);
  assert.equal(plain.sequenceLengths, null);
  const tail = sliceRows(both, { seqLen: 2, from: 1, to: 3 });
  assert.deepEqual([...tail.tokens], [3, 4, 5, 6]);
  assert.deepEqual([...tail.labels!], [-100, 4, -100, 6]);
  assert.deepEqual(tail.sequenceLengths, [[1, 1], [2]]);
});
