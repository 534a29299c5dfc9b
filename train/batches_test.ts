import assert from "node:assert/strict";
import fc from "fast-check";
import { microBatchRanges, readRanges } from "./batches.ts";
import { type DataProvider, LocalDataProvider } from "../data/mod.ts";

Deno.test("microBatchRanges: consecutive steps tile the dataset in order", () => {
  const plan = { totalBatch: 4, microBatch: 2, numSequences: 100 };
  assert.deepEqual(microBatchRanges(1, 0, plan), [{ start: 0, end: 1 }]);
  assert.deepEqual(microBatchRanges(1, 1, plan), [{ start: 2, end: 3 }]);
  assert.deepEqual(microBatchRanges(3, 1, plan), [{ start: 10, end: 11 }]);
  assert.deepEqual(microBatchRanges(1, 0, { ...plan, numSequences: 3, microBatch: 4 }), [
    { start: 0, end: 2 },
    { start: 0, end: 0 },
  ]);
  assert.throws(() => microBatchRanges(0, 0, plan), /step/);
  assert.throws(() => microBatchRanges(1, 2, plan), /micro-batch index 2/);
});

Deno.test("microBatchRanges: every step reads totalBatch indices (i mod N) in order", () => {
  fc.assert(fc.property(
    fc.integer({ min: 1, max: 50 }),
    fc.integer({ min: 1, max: 8 }),
    fc.integer({ min: 1, max: 4 }),
    fc.integer({ min: 1, max: 30 }),
    (step, micro, perStep, n) => {
      const plan = { totalBatch: micro * perStep, microBatch: micro, numSequences: n };
      const seen: number[] = [];
      for (let m = 0; m < perStep; m++) {
        for (const r of microBatchRanges(step, m, plan)) {
          assert.ok(r.start <= r.end && r.end < n);
          for (let i = r.start; i <= r.end; i++) seen.push(i);
        }
      }
      const want = Array.from(
        { length: plan.totalBatch },
        (_, i) => ((step - 1) * plan.totalBatch + i) % n,
      );
      assert.deepEqual(seen, want);
    },
  ));
});

Deno.test("readRanges concatenates wrapped ranges in order", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Three sequences of 2 tokens: [10, 11], [12, 13], [14, 15] (plus one unused token).
    const tokens = Uint16Array.from([10, 11, 12, 13, 14, 15, 16]);
    await Deno.writeFile(`${dir}/a.ds`, new Uint8Array(tokens.buffer));
    const data = await LocalDataProvider.open(dir, { seqLen: 2, tokenSize: "TwoBytes" });
    try {
      const plan = { totalBatch: 2, microBatch: 2, numSequences: data.numSequences };
      const ranges = microBatchRanges(2, 0, plan); // indices 2, 3 → 2, 0
      assert.deepEqual(ranges, [{ start: 2, end: 2 }, { start: 0, end: 0 }]);
      const rows = await readRanges(data, ranges);
      assert.deepEqual([...rows.tokens], [14, 15, 10, 11]);
      // Token files have no labels, positions or documents: the defaults stay implicit.
      assert.equal(rows.labels, null);
      assert.equal(rows.positionIds, null);
      assert.equal(rows.sequenceLengths, null);
    } finally {
      await data.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readRanges keeps the labels, positions and documents a provider serves", async () => {
  // Row i: tokens [2i, 2i+1], label -100 then 2i+1, positions [0, 0], two documents of 1.
  const data: DataProvider = {
    seqLen: 2,
    numSequences: 3,
    getSamples: ({ start, end }) => {
      const count = end - start + 1;
      const ids = Array.from({ length: count }, (_, r) => [2 * (start + r), 2 * (start + r) + 1]);
      return Promise.resolve({
        count,
        seqLen: 2,
        tokens: Uint32Array.from(ids.flat()),
        labels: Int32Array.from(ids.flatMap(([, b]) => [-100, b])),
        positionIds: new Int32Array(2 * count),
        sequenceLengths: ids.map(() => [1, 1]),
      });
    },
    close: () => Promise.resolve(),
  };
  const rows = await readRanges(data, [{ start: 2, end: 2 }, { start: 0, end: 1 }]);
  assert.deepEqual([...rows.tokens], [4, 5, 0, 1, 2, 3]);
  assert.deepEqual([...rows.labels!], [-100, 5, -100, 1, -100, 3]);
  assert.deepEqual([...rows.positionIds!], [0, 0, 0, 0, 0, 0]);
  assert.deepEqual(rows.sequenceLengths, [[1, 1], [1, 1], [1, 1]]);
});
