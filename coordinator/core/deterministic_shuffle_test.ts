import assert from "node:assert/strict";
import { deterministicShuffle } from "./deterministic_shuffle.ts";

Deno.test("three items, seed 0: hand-derived order", () => {
  // i = 2: j = C % 3 = 1 (C = 1442695040888963407, digit sum 88) → swap(2, 1): [a, c, b].
  // i = 1: j = (C*A + C mod 2^64) % 2 = 0 (odd*odd + odd is even) → swap(1, 0): [c, a, b].
  assert.deepEqual(deterministicShuffle(["a", "b", "c"], 0n), ["c", "a", "b"]);
});

Deno.test("same seed gives the same order; different seeds differ", () => {
  const base = () => Array.from({ length: 50 }, (_, i) => i);
  assert.deepEqual(deterministicShuffle(base(), 42n), deterministicShuffle(base(), 42n));
  assert.notDeepEqual(deterministicShuffle(base(), 42n), deterministicShuffle(base(), 43n));
});

Deno.test("keeps every element and shuffles in place", () => {
  const items = Array.from({ length: 999 }, (_, i) => i + 1);
  const out = deterministicShuffle(items, 42n);
  assert.equal(out, items);
  assert.notDeepEqual(out, Array.from({ length: 999 }, (_, i) => i + 1));
  assert.deepEqual([...out].sort((a, b) => a - b), Array.from({ length: 999 }, (_, i) => i + 1));
});

Deno.test("empty and single-element lists are unchanged", () => {
  assert.deepEqual(deterministicShuffle([], 42n), []);
  assert.deepEqual(deterministicShuffle([1], 42n), [1]);
});
