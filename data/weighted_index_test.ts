import assert from "node:assert/strict";
import fc from "fast-check";
import { DataError } from "./errors.ts";
import { buildWeightedIndex, planWeightedReads, type WeightedIndex } from "./weighted_index.ts";

const seed = Uint8Array.from({ length: 32 }, (_, i) => 7 * i + 1);
const seeded = { kind: "Seeded" as const, seed };

function pairs(index: WeightedIndex, from = 0, to = index.numSequences): string[] {
  return Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    return `${index.datasetOf[i]}:${index.sequenceOf[i]}`;
  });
}

function counts(index: WeightedIndex, from: number, to: number): number[] {
  const out = new Array(index.sizes.length).fill(0);
  for (let i = from; i < to; i++) out[index.datasetOf[i]]++;
  return out;
}

Deno.test("two equal datasets alternate, in Psyche's order (its weighted HTTP test vector)", () => {
  // Psyche's test_http_multi_data_provider: two mixes of 2 files x 2 sequences, weights 1:1,
  // samples 0..7 are files 1,3,1,3,2,4,2,4 = (0,0) (1,0) (0,1) (1,1) (0,2) (1,2) (0,3) (1,3).
  const index = buildWeightedIndex([4, 4], { weights: [1, 1] });
  assert.deepEqual(pairs(index), ["0:0", "1:0", "0:1", "1:1", "0:2", "1:2", "0:3", "1:3"]);
});

Deno.test("the mix has Σ sizes samples and uses every sequence once when weighted by size", () => {
  const index = buildWeightedIndex([3, 7, 0, 5]);
  assert.equal(index.numSequences, 15);
  assert.deepEqual(index.weights, [3 / 15, 7 / 15, 0, 5 / 15]);
  const seen = pairs(index).sort();
  const expected = [0, 1, 3].flatMap((d) =>
    Array.from({ length: index.sizes[d] }, (_, s) => `${d}:${s}`)
  ).sort();
  assert.deepEqual(seen, expected);
});

Deno.test("a small dataset weighted above its share is used up, then repeated from its start", () => {
  // Psyche's exhausts_small_dataset_before_repeat: sizes 5 and 20, weights 1:1, 25 samples.
  const index = buildWeightedIndex([5, 20], { weights: [0.5, 0.5] });
  assert.equal(index.numSequences, 25);
  const small = pairs(index).filter((p) => p.startsWith("0:")).map((p) => Number(p.slice(2)));
  const large = pairs(index).filter((p) => p.startsWith("1:")).map((p) => Number(p.slice(2)));
  assert.ok(small.length === 12 || small.length === 13, `${small.length}`);
  assert.deepEqual(small, small.map((_, k) => k % 5)); // 0,1,2,3,4,0,1,...
  assert.deepEqual(large, large.map((_, k) => k)); // no repeat
  assert.equal(small.length + large.length, 25);
});

Deno.test("every prefix of an unshuffled mix holds each dataset's share to within 2 samples", () => {
  const weight = fc.double({ min: 0.01, max: 100, noNaN: true });
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 1, max: 60 }), weight), { minLength: 1, maxLength: 6 }),
      (datasets) => {
        const sizes = datasets.map(([s]) => s);
        const index = buildWeightedIndex(sizes, { weights: datasets.map(([, w]) => w) });
        const drawn = new Array(sizes.length).fill(0);
        for (let i = 0; i < index.numSequences; i++) {
          const d = index.datasetOf[i];
          // Never past a dataset's end: its k-th sample is its sequence k mod size.
          assert.equal(index.sequenceOf[i], drawn[d] % sizes[d]);
          drawn[d]++;
          for (let e = 0; e < sizes.length; e++) {
            assert.ok(Math.abs(drawn[e] - index.weights[e] * (i + 1)) < 2, `prefix ${i + 1}`);
          }
        }
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("a seeded mix is the same table, shuffled, and the same on every build", () => {
  const sizes = [400, 1000, 250];
  const weights = [5, 3, 2];
  const plain = buildWeightedIndex(sizes, { weights });
  const a = buildWeightedIndex(sizes, { weights, shuffle: seeded });
  const b = buildWeightedIndex([...sizes], { weights: [...weights], shuffle: seeded });
  assert.deepEqual(a.datasetOf, b.datasetOf);
  assert.deepEqual(a.sequenceOf, b.sequenceOf);
  assert.notDeepEqual(pairs(a), pairs(plain));
  assert.deepEqual(pairs(a).sort(), pairs(plain).sort());
  // Over the whole mix the shares are exact (the shuffle only reorders): 825/495/330 of 1650.
  assert.deepEqual(counts(a, 0, a.numSequences), [825, 495, 330]);
  const other = buildWeightedIndex(sizes, {
    weights,
    shuffle: { kind: "Seeded", seed: new Uint8Array(32) },
  });
  assert.notDeepEqual(pairs(other), pairs(a));
});

Deno.test("in a seeded mix, every window of 1000 samples matches the weights statistically", () => {
  const sizes = [20_000, 20_000, 20_000];
  const weights = [0.7, 0.2, 0.1];
  const index = buildWeightedIndex(sizes, { weights, shuffle: seeded });
  for (let from = 0; from + 1000 <= index.numSequences; from += 1000) {
    const c = counts(index, from, from + 1000);
    for (let d = 0; d < 3; d++) {
      // A window of a shuffled table is close to a multinomial draw: 4.5 standard deviations.
      const mean = 1000 * weights[d];
      const sd = Math.sqrt(1000 * weights[d] * (1 - weights[d]));
      assert.ok(Math.abs(c[d] - mean) <= 4.5 * sd, `window ${from}: dataset ${d} has ${c[d]}`);
    }
  }
});

Deno.test("a dataset with no sequences is never chosen", () => {
  const index = buildWeightedIndex([0, 6, 0], { weights: [10, 1, 10] });
  assert.equal(index.numSequences, 6);
  assert.ok(index.datasetOf.every((d) => d === 1));
});

Deno.test("bad weights and empty mixes are DataErrors naming what is wrong", () => {
  const cases: Array<[number[], number[] | undefined, RegExp]> = [
    [[], undefined, /at least one dataset, found none/],
    [[0, 0], undefined, /Empty weighted mix: its 2 datasets hold no sequence/],
    [[4, 4], [1], /needs 2 weights, found 1/],
    [[4, 4], [1, 0], /Weight of dataset 1 must be a finite number > 0, found 0/],
    [[4, 4], [-1, 1], /Weight of dataset 0 must be a finite number > 0, found -1/],
    [[4, 4], [1, NaN], /dataset 1 .* found NaN/],
    [[4, 4], [1, Infinity], /dataset 1 .* found Infinity/],
    [[4, 4], [1e308, 1e308], /Weights sum to Infinity/],
  ];
  for (const [sizes, weights, message] of cases) {
    assert.throws(() => buildWeightedIndex(sizes, { weights }), (e: unknown) => {
      assert.ok(e instanceof DataError, String(e));
      assert.match(e.message, message);
      return true;
    });
  }
  assert.throws(() => buildWeightedIndex([1.5]), RangeError);
});

Deno.test("a batch is read as runs of consecutive sequences per dataset, rows kept in order", () => {
  // Weights 3:1 over [4, 4]: (0,0) (1,0) (0,1) (0,2) (0,3) (1,1) (0,0) (0,1).
  const index = buildWeightedIndex([4, 4], { weights: [3, 1] });
  assert.deepEqual(pairs(index), ["0:0", "1:0", "0:1", "0:2", "0:3", "1:1", "0:0", "0:1"]);
  const runs = planWeightedReads(index, { start: 0, end: 7 });
  assert.deepEqual(runs, [
    // Sequences 0 and 1 of dataset 0 appear twice: the sorted list 0,0,1,1,2,3 makes three runs.
    { dataset: 0, start: 0, end: 0, rows: [0] },
    { dataset: 0, start: 0, end: 1, rows: [6, 2] },
    { dataset: 0, start: 1, end: 3, rows: [7, 3, 4] },
    { dataset: 1, start: 0, end: 1, rows: [1, 5] },
  ]);
  assert.throws(() => planWeightedReads(index, { start: 7, end: 8 }), /out of range/);
});
