import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { Sha256CounterStream, shufflePermutation } from "./shuffle.ts";

const seed = (f: (i: number) => number) => Uint8Array.from({ length: 32 }, (_, i) => f(i));

Deno.test("the stream is SHA-256(seed || u64_le(counter)) read as LE u32 words", () => {
  const s = seed((i) => i + 1);
  const stream = new Sha256CounterStream(s);
  for (const counter of [0, 1]) {
    const input = new Uint8Array(40);
    input.set(s);
    input[32] = counter;
    const digest = createHash("sha256").update(input).digest();
    for (let w = 0; w < 8; w++) assert.equal(stream.nextU32(), digest.readUInt32LE(4 * w));
  }
});

Deno.test("shufflePermutation is a deterministic permutation for any seed and size", () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.nat(300), (s, n) => {
      const perm = shufflePermutation(n, s);
      assert.deepEqual([...perm].sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i));
      assert.deepEqual(shufflePermutation(n, s), perm);
    }),
    { numRuns: 100 },
  );
});

Deno.test("different seeds give different orders", () => {
  const a = shufflePermutation(1000, seed((i) => i));
  const b = shufflePermutation(1000, seed((i) => (i === 31 ? 1 : i)));
  let same = 0;
  for (let i = 0; i < a.length; i++) same += a[i] === b[i] ? 1 : 0;
  assert.ok(same < 20, `${same} of 1000 positions agree`);
});

Deno.test("Fisher-Yates follows the documented draws (recomputed by hand)", () => {
  const s = seed((i) => i + 1);
  const n = 10;
  // Independent re-derivation: identity, then swap i with uniform(i + 1) from i = n-1 down.
  const draws = new Sha256CounterStream(s);
  const expected = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i >= 1; i--) {
    const m = i + 1;
    let x: number;
    do x = draws.nextU32(); while (x >= 2 ** 32 - (2 ** 32 % m));
    const j = x % m;
    [expected[i], expected[j]] = [expected[j], expected[i]];
  }
  assert.deepEqual(Array.from(shufflePermutation(n, s)), expected);
  // Pinned vector (docs/data.md): changing the generator breaks every client's data order.
  assert.deepEqual(expected, PINNED_SEED_1_TO_32_N10);
});

Deno.test("uniformBelow rejects out-of-range bounds and stays below them", () => {
  const stream = new Sha256CounterStream(seed(() => 7));
  assert.throws(() => stream.uniformBelow(0), RangeError);
  assert.throws(() => stream.uniformBelow(2 ** 32 + 1), RangeError);
  for (let i = 0; i < 200; i++) assert.ok(stream.uniformBelow(3) < 3);
  assert.throws(() => new Sha256CounterStream(new Uint8Array(31)), /32 bytes, found 31/);
});

const PINNED_SEED_1_TO_32_N10 = [9, 8, 7, 5, 4, 2, 6, 1, 3, 0];
