import assert from "node:assert/strict";
import fc from "fast-check";
import { chunkSize, divisors, primeFactors } from "./chunking.ts";

Deno.test("primeFactors factorises with multiplicity", () => {
  assert.deepEqual(primeFactors(1), []);
  assert.deepEqual(primeFactors(12), [2, 2, 3]);
  assert.deepEqual(primeFactors(97), [97]);
  assert.deepEqual(primeFactors(1000000007), [1000000007]);
  assert.deepEqual(primeFactors(32000), [2, 2, 2, 2, 2, 2, 2, 2, 5, 5, 5]);
  assert.throws(() => primeFactors(0), RangeError);
  assert.throws(() => primeFactors(2.5), RangeError);
});

Deno.test("divisors lists every divisor ascending", () => {
  assert.deepEqual(divisors(1), [1]);
  assert.deepEqual(divisors(12), [1, 2, 3, 4, 6, 12]);
  assert.deepEqual(divisors(100), [1, 2, 4, 5, 10, 20, 25, 50, 100]);
});

Deno.test("chunkSize matches Psyche's get_smaller_split vectors", () => {
  assert.equal(chunkSize(12, 5), 4);
  assert.equal(chunkSize(100, 7), 5);
  assert.equal(chunkSize(100, 26), 25);
  assert.equal(chunkSize(100, 101), 100);
  assert.equal(chunkSize(1000000007, 5e8), 1);
  assert.equal(chunkSize(32000, 64), 64);
  assert.equal(chunkSize(2048, 64), 64);
  assert.throws(() => chunkSize(10, 0), RangeError);
  assert.throws(() => chunkSize(0, 4), RangeError);
});

Deno.test("chunkSize is the largest divisor not above the chunk (brute force)", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1, max: 300 }), (n, c) => {
      let best = 1;
      for (let d = 1; d <= Math.min(n, c); d++) if (n % d === 0) best = d;
      return chunkSize(n, c) === best;
    }),
  );
});
