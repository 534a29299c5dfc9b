import assert from "node:assert/strict";
import { Lcg, LCG_A, LCG_C } from "./lcg.ts";

Deno.test("first output is seed * A + C", () => {
  // seed 0 → C; seed 1 → A + C = 6364136223846793005 + 1442695040888963407.
  assert.equal(new Lcg(0n).next(), 1442695040888963407n);
  assert.equal(new Lcg(1n).next(), 7806831264735756412n);
});

Deno.test("state wraps modulo 2^64", () => {
  // seed 2^64 - 1 ≡ -1 → C - A + 2^64 = 1442695040888963407 - 6364136223846793005 + 18446744073709551616.
  assert.equal(new Lcg((1n << 64n) - 1n).next(), 13525302890751722018n);
});

Deno.test("initial state is the seed and next() returns the new state", () => {
  const lcg = new Lcg(12345n);
  assert.equal(lcg.state, 12345n);
  const first = lcg.next();
  assert.equal(lcg.state, first);
  assert.equal(lcg.next(), (first * LCG_A + LCG_C) % (1n << 64n));
});

Deno.test("same seed, same sequence; successive outputs differ", () => {
  const a = new Lcg(12345n);
  const b = new Lcg(12345n);
  let prev = -1n;
  for (let i = 0; i < 100; i++) {
    const x = a.next();
    assert.equal(x, b.next());
    assert.notEqual(x, prev);
    prev = x;
  }
});

Deno.test("nextRange stays in range and reaches every value", () => {
  const lcg = new Lcg(12345n);
  const counts = new Array(10).fill(0);
  for (let i = 0; i < 10_000; i++) counts[lcg.nextRange(10)]++;
  assert.ok(counts.every((c) => c > 0));
  assert.equal(new Lcg(7n).nextRange(1), 0);
});

Deno.test("nextRange is next() % max", () => {
  // seed 0: first output C = 1442695040888963407, digit sum 88, so C % 3 = 1 and C % 10 = 7.
  assert.equal(new Lcg(0n).nextRange(3), 1);
  assert.equal(new Lcg(0n).nextRange(10), 7);
});

Deno.test("invalid seeds and ranges throw RangeError", () => {
  assert.throws(() => new Lcg(-1n), RangeError);
  assert.throws(() => new Lcg(1n << 64n), RangeError);
  assert.throws(() => new Lcg(0n).nextRange(0), RangeError);
  assert.throws(() => new Lcg(0n).nextRange(1.5), RangeError);
});
