import assert from "node:assert/strict";
import { STRAGGLER_MIN_WAIT_MS, stragglerDeadline } from "./straggler_wait.ts";

Deno.test("stragglerDeadline: nothing before a majority finished", () => {
  assert.equal(stragglerDeadline(0, [], 3), null);
  assert.equal(stragglerDeadline(0, [10], 3), null);
  assert.equal(stragglerDeadline(0, [10, 20], 4), null, "half is not a majority");
  assert.notEqual(stragglerDeadline(0, [10, 20, 30], 4), null);
});

Deno.test("stragglerDeadline: with one or two clients the majority is everyone", () => {
  assert.equal(stragglerDeadline(0, [], 1), null);
  assert.equal(stragglerDeadline(0, [5], 2), null);
  assert.equal(stragglerDeadline(0, [5, 9], 2), 9 + STRAGGLER_MIN_WAIT_MS);
});

Deno.test("stragglerDeadline: as long again as the majority took, at least the minimum", () => {
  // Seen at 1,000; the majority (2 of 3) is in at 1,400: 400 ms < the minimum.
  assert.equal(stragglerDeadline(1000, [1400, 1300], 3), 1400 + STRAGGLER_MIN_WAIT_MS);
  // A slow round: the majority took 9 s, so the rest get 9 s more.
  assert.equal(stragglerDeadline(1000, [7000, 10_000, 4000, 30_000], 5), 10_000 + 9000);
  // The order of arrival does not matter.
  assert.equal(
    stragglerDeadline(0, [30, 10, 20], 5),
    stragglerDeadline(0, [10, 20, 30], 5),
  );
});

Deno.test("stragglerDeadline: refuses impossible counts", () => {
  assert.throws(() => stragglerDeadline(0, [1, 2], 1), RangeError);
  assert.throws(() => stragglerDeadline(0, [], -1), RangeError);
  assert.throws(() => stragglerDeadline(0, [], 1.5), RangeError);
});
