import assert from "node:assert/strict";
import { RecentSet } from "./recent_set.ts";

Deno.test("a repeated key is reported once", () => {
  const set = new RecentSet(3);
  assert.equal(set.add("a"), true);
  assert.equal(set.add("a"), false);
  assert.equal(set.size, 1);
});

Deno.test("the oldest key is evicted at capacity", () => {
  const set = new RecentSet(2);
  set.add("a");
  set.add("b");
  set.add("c");
  assert.deepEqual([set.has("a"), set.has("b"), set.has("c")], [false, true, true]);
  assert.equal(set.add("a"), true);
});

Deno.test("capacity must be positive", () => {
  assert.throws(() => new RecentSet(0), /capacity must be a positive integer, found 0/);
});
