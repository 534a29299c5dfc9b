import assert from "node:assert/strict";
import fc from "fast-check";
import {
  addTime,
  fromMillis,
  isMillisecondTime,
  MAX_TIME_MS,
  MAX_TIME_SECONDS,
  timeReached,
  toMillis,
} from "./time.ts";

Deno.test("isMillisecondTime accepts whole milliseconds and whole seconds only", () => {
  for (const ok of [0, 1, 0.001, 0.1, 0.3, 2.5, 1763718509.123, Number.MAX_SAFE_INTEGER]) {
    assert.ok(isMillisecondTime(ok), `${ok}`);
  }
  for (
    const bad of [-1, -0.001, 0.0005, 1.0001, NaN, Infinity, 2 ** 53, MAX_TIME_SECONDS + 0.5]
  ) {
    assert.ok(!isMillisecondTime(bad), `${bad}`);
  }
  assert.ok(!isMillisecondTime("1" as unknown as number));
});

Deno.test("milliseconds convert to seconds and back exactly up to MAX_TIME_MS", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: MAX_TIME_MS }), (ms) => {
      const s = fromMillis(ms);
      assert.ok(isMillisecondTime(s));
      assert.equal(toMillis(s), ms);
    }),
  );
  assert.equal(toMillis(fromMillis(MAX_TIME_MS)), MAX_TIME_MS);
});

Deno.test("timeReached is exact where float addition is not", () => {
  // 0.1 + 0.2 > 0.3 in binary64: a float comparison would not fire at 0.3 s.
  assert.ok(0.1 + 0.2 > 0.3);
  assert.ok(timeReached(0.3, 0.1, 0.2));
  assert.ok(!timeReached(0.299, 0.1, 0.2));
  assert.ok(timeReached(1763718509.223, 1763718509.123, 0.1));
  assert.ok(!timeReached(1763718509.222, 1763718509.123, 0.1));
});

Deno.test("whole seconds keep integer arithmetic, even beyond the millisecond range", () => {
  const big = Number.MAX_SAFE_INTEGER - 10;
  assert.ok(timeReached(big + 10, big, 10));
  assert.ok(!timeReached(big + 9, big, 10));
  assert.equal(addTime(big, 10), big + 10);
});

Deno.test("addTime gives the first millisecond at which timeReached holds", () => {
  const time = fc.integer({ min: 0, max: 2 ** 42 }).map(fromMillis);
  fc.assert(
    fc.property(time, fc.integer({ min: 1, max: 10 ** 7 }).map(fromMillis), (start, dur) => {
      const deadline = addTime(start, dur);
      assert.ok(timeReached(deadline, start, dur));
      assert.ok(!timeReached(fromMillis(toMillis(deadline) - 1), start, dur));
    }),
  );
});
