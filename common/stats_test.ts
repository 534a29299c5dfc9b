import assert from "node:assert/strict";
import fc from "fast-check";
import { median, quantile } from "./stats.ts";

Deno.test("median of odd and even lists; empty list rejected", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.throws(() => median([]), RangeError);
});

Deno.test("median of extreme values stays finite and between them", () => {
  assert.equal(median([-1.7e293, -Number.MAX_VALUE]), -Number.MAX_VALUE / 2 - 1.7e293 / 2);
  assert.equal(median([Number.MIN_VALUE, Number.MIN_VALUE]), Number.MIN_VALUE);
  assert.ok(Object.is(median([0, -0, 1]), 0) && Object.is(median([1, -0, 0]), 0));
});

Deno.test("median is order-independent and lies between the extremes", () => {
  fc.assert(
    fc.property(
      fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { minLength: 1 }),
      (xs) => {
        const m = median(xs);
        assert.ok(m >= Math.min(...xs) && m <= Math.max(...xs));
        assert.equal(median([...xs].reverse()), m);
      },
    ),
  );
});

Deno.test("quantile is the nearest rank and rejects empty input", () => {
  assert.equal(quantile([5, 1, 3, 2, 4], 0.5), 3);
  assert.equal(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9), 9);
  assert.equal(quantile([7], 0), 7);
  assert.throws(() => quantile([], 0.5), RangeError);
  assert.throws(() => quantile([1], 1.5), /must be in 0\.\.1, found 1\.5/);
  fc.assert(fc.property(
    fc.array(fc.integer(), { minLength: 1 }),
    fc.double({ min: 0, max: 1, noNaN: true }),
    (xs, q) => {
      const v = quantile(xs, q);
      const atOrBelow = xs.filter((x) => x <= v).length;
      return xs.includes(v) && atOrBelow >= q * xs.length &&
        xs.filter((x) => x < v).length < Math.max(1, Math.ceil(q * xs.length));
    },
  ));
});
