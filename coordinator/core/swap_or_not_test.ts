import assert from "node:assert/strict";
import fc from "fast-check";
import { sha256, u64le } from "./hash.ts";
import { computeShuffledIndex, shuffledPositions } from "./swap_or_not.ts";

const seq32 = Uint8Array.from({ length: 32 }, (_, i) => i);

Deno.test("computeShuffledIndex matches the consensus-specs pseudocode", () => {
  // Computed independently with the Ethereum consensus-specs `compute_shuffled_index`
  // pseudocode (Python, hashlib) for seed = bytes 0..31 and n = 10.
  const expected = [5, 2, 3, 1, 9, 6, 7, 4, 0, 8];
  assert.deepEqual(expected.map((_, i) => computeShuffledIndex(i, 10, seq32)), expected);
  assert.deepEqual(Array.from(shuffledPositions(10, seq32)), expected);
});

Deno.test("committee seed of Psyche's test round matches the pseudocode", () => {
  // sha256(sha256(u64le(12345)) || "committee"), first 12 positions of 100 (same Python check).
  const seed = sha256(sha256(u64le(12345n)), new TextEncoder().encode("committee"));
  const expected = [83, 58, 32, 29, 76, 82, 21, 88, 14, 56, 19, 90];
  assert.deepEqual(expected.map((_, i) => computeShuffledIndex(i, 100, seed)), expected);
});

Deno.test("a list of one maps 0 to 0", () => {
  assert.equal(computeShuffledIndex(0, 1, seq32), 0);
  assert.deepEqual(Array.from(shuffledPositions(1, seq32)), [0]);
  assert.deepEqual(Array.from(shuffledPositions(0, seq32)), []);
});

Deno.test("out-of-range index, size or seed throw RangeError", () => {
  assert.throws(() => computeShuffledIndex(10, 10, seq32), RangeError);
  assert.throws(() => computeShuffledIndex(-1, 10, seq32), RangeError);
  assert.throws(() => computeShuffledIndex(0, 0, seq32), RangeError);
  assert.throws(() => computeShuffledIndex(0.5, 10, seq32), RangeError);
  assert.throws(() => computeShuffledIndex(0, 10, new Uint8Array(31)), RangeError);
  assert.throws(() => shuffledPositions(-1, seq32), RangeError);
  assert.throws(() => shuffledPositions(2 ** 32, seq32), RangeError);
});

Deno.test("shuffledPositions is a permutation and equals computeShuffledIndex", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 700 }),
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      (n, seed) => {
        const all = shuffledPositions(n, seed);
        const seen = new Uint8Array(n);
        for (const p of all) {
          assert.ok(p < n);
          seen[p]++;
        }
        assert.ok(seen.every((c) => c === 1), "every position exactly once");
        // Spot-check against the one-index path, including both ends and block edges.
        for (const i of [0, n - 1, Math.min(255, n - 1), Math.min(256, n - 1), (n * 7) >> 3]) {
          assert.equal(all[i], computeShuffledIndex(i, n, seed));
        }
      },
    ),
    { numRuns: 40 },
  );
});

Deno.test("shuffledPositions equals computeShuffledIndex for every index of small lists", () => {
  for (const n of [2, 3, 5, 17, 256, 257]) {
    const seed = sha256(u64le(BigInt(n)));
    const all = shuffledPositions(n, seed);
    for (let i = 0; i < n; i++) {
      assert.equal(all[i], computeShuffledIndex(i, n, seed), `n=${n} i=${i}`);
    }
  }
});

Deno.test("10,000 positions agree with the one-index path at block edges", () => {
  const seed = sha256(u64le(10_000n));
  const all = shuffledPositions(10_000, seed);
  for (const i of [0, 255, 256, 511, 4_999, 9_727, 9_728, 9_999]) {
    assert.equal(all[i], computeShuffledIndex(i, 10_000, seed), `i=${i}`);
  }
});

Deno.test("shuffle is deterministic and seed sensitive", () => {
  const a = shuffledPositions(100, seq32);
  assert.deepEqual(shuffledPositions(100, seq32), a);
  const other = seq32.slice();
  other[31] ^= 1;
  assert.notDeepEqual(shuffledPositions(100, other), a);
});
