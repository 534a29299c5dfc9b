import assert from "node:assert/strict";
import fc from "fast-check";
import { microBatchRanges, readRanges } from "./batches.ts";
import { LocalDataProvider } from "../data/mod.ts";

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
      assert.deepEqual([...await readRanges(data, ranges)], [14, 15, 10, 11]);
    } finally {
      await data.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
