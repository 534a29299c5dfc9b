import assert from "node:assert/strict";
import fc from "fast-check";
import { CommitteeSelection } from "./committee_selection.ts";
import {
  assignDataForRound,
  batchForClient,
  batchIdsForRound,
  type BatchRampConfig,
  batchSizeForTokens,
  dataIndexForStep,
} from "./data_selection.ts";
import { deterministicShuffle } from "./deterministic_shuffle.ts";

function trainersOnly(n: number, seed: bigint): CommitteeSelection {
  return CommitteeSelection.create({
    tieBreakerNodes: 0,
    verificationPercent: 0,
    witnessNodes: Math.min(n, 1),
    totalNodes: n,
    randomSeed: seed,
  });
}

function sizes(clients: number, batchSize: number, dataIndex = 0, seed = 7n): number[] {
  const selection = trainersOnly(clients, seed);
  return assignDataForRound({
    clientsLen: clients,
    selection,
    dataIndex,
    batchSize,
    randomSeed: seed,
  })
    .map((a) => a.batch.end - a.batch.start + 1);
}

Deno.test("even distribution: 4 trainers x 25", () => {
  assert.deepEqual(sizes(4, 100), [25, 25, 25, 25]);
});

Deno.test("uneven: 23 trainers, 384 sequences → seven 16s and sixteen 17s", () => {
  // 384 = 23 * 16 + 16: the first 16 trainers get 17, the other 7 get 16.
  const s = sizes(23, 384);
  assert.equal(s.length, 23);
  assert.equal(s.filter((x) => x === 17).length, 16);
  assert.equal(s.filter((x) => x === 16).length, 7);
  assert.deepEqual(s.slice(0, 16), new Array(16).fill(17));
});

Deno.test("larger remainder: 5 trainers, 13 sequences → [3,3,3,2,2]", () => {
  // 13 = 5 * 2 + 3: three trainers get 3 and two get 2 (Psyche's test sorts to [2,2,3,3,3]).
  const s = sizes(5, 13);
  assert.deepEqual([...s].sort(), [2, 2, 3, 3, 3]);
  assert.deepEqual(s, [3, 3, 3, 2, 2]);
});

Deno.test("ranges are contiguous from dataIndex and owned by shuffled trainers", () => {
  const selection = CommitteeSelection.create({
    tieBreakerNodes: 2,
    verificationPercent: 0,
    witnessNodes: 3,
    totalNodes: 12,
    randomSeed: 99n,
  });
  const a = assignDataForRound({
    clientsLen: 12,
    selection,
    dataIndex: 1000,
    batchSize: 25,
    randomSeed: 99n,
  });
  const trainers = deterministicShuffle(selection.trainerIndices(), 99n);
  assert.equal(a.length, 10);
  assert.deepEqual(a.map((x) => x.clientIndex), trainers);
  for (const x of a) assert.equal(selection.committee(x.clientIndex), "Trainer");
  assert.equal(a[0].batch.start, 1000);
  for (let k = 1; k < a.length; k++) assert.equal(a[k].batch.start, a[k - 1].batch.end + 1);
  assert.equal(a[a.length - 1].batch.end, 1024);
  assert.deepEqual(
    batchIdsForRound({
      clientsLen: 12,
      selection,
      dataIndex: 1000,
      batchSize: 25,
      randomSeed: 99n,
    }),
    a.map((x) => x.batch),
  );
  assert.deepEqual(batchForClient(a, trainers[3]), a[3].batch);
  assert.equal(batchForClient(a, -5), null);
});

Deno.test("more trainers than sequences: the extra trainers get nothing", () => {
  assert.deepEqual(sizes(5, 3), [1, 1, 1]);
  assert.deepEqual(sizes(3, 0), []);
  assert.deepEqual(sizes(0, 10), []);
});

Deno.test("property: assignment covers [dataIndex, dataIndex + batchSize) exactly once", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 0, max: 500 }),
      fc.integer({ min: 0, max: 1e9 }),
      fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
      (clients, batchSize, dataIndex, seed) => {
        const selection = trainersOnly(clients, seed);
        const a = assignDataForRound({
          clientsLen: clients,
          selection,
          dataIndex,
          batchSize,
          randomSeed: seed,
        });
        let cursor = dataIndex;
        const owners = new Set<number>();
        for (const x of a) {
          assert.equal(x.batch.start, cursor);
          assert.ok(x.batch.end >= x.batch.start);
          cursor = x.batch.end + 1;
          assert.ok(!owners.has(x.clientIndex));
          owners.add(x.clientIndex);
        }
        assert.equal(cursor, clients === 0 ? dataIndex : dataIndex + batchSize);
      },
    ),
    { numRuns: 60 },
  );
});

Deno.test("assignDataForRound rejects a clientsLen that disagrees with the selection", () => {
  const selection = trainersOnly(4, 1n);
  assert.throws(
    () =>
      assignDataForRound({ clientsLen: 5, selection, dataIndex: 0, batchSize: 4, randomSeed: 1n }),
    /clientsLen \(5\)/,
  );
});

const ramp = (start: number, end: number, warmupTokens: number): BatchRampConfig => ({
  globalBatchSizeStart: start,
  globalBatchSizeEnd: end,
  globalBatchSizeWarmupTokens: warmupTokens,
});

Deno.test("batch-size ramp: start, middle, rounding, end", () => {
  const c = ramp(8, 16, 1000);
  assert.equal(batchSizeForTokens(c, 0), 8);
  assert.equal(batchSizeForTokens(c, 500), 12); // 8 + 8 * 0.5
  assert.equal(batchSizeForTokens(c, 62), 8); // 8.496 → 8
  assert.equal(batchSizeForTokens(c, 63), 9); // 8.504 → 9
  assert.equal(batchSizeForTokens(ramp(1, 2, 2), 1), 2); // 1.5 rounds half up
  assert.equal(batchSizeForTokens(c, 999), 16); // 15.992 → 16
  assert.equal(batchSizeForTokens(c, 1000), 16);
  assert.equal(batchSizeForTokens(c, 10 ** 15), 16);
  assert.equal(batchSizeForTokens(ramp(4, 4, 0), 0), 4); // no ramp
  assert.throws(() => batchSizeForTokens(c, -1), RangeError);
});

Deno.test("dataIndexForStep replays the ramp", () => {
  // start 2, end 4 over 8 tokens, seq len 2: step 1 at 0 (size 2), step 2 at 2 (4 tokens → 3),
  // step 3 at 5 (10 tokens → 4), step 4 at 9.
  const c = ramp(2, 4, 8);
  assert.deepEqual([1, 2, 3, 4].map((s) => dataIndexForStep(c, 2, s)), [0, 2, 5, 9]);
  assert.equal(dataIndexForStep(c, 2, 0), 0);
  assert.throws(() => dataIndexForStep(c, 0, 3), /maxSeqLen/);
});
