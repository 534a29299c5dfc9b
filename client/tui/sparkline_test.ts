import assert from "node:assert/strict";
import { SPARK_BLOCKS, sparkline } from "./sparkline.ts";

Deno.test("sparkline: known values map to the blocks, lowest to highest", () => {
  assert.equal(sparkline([1, 2, 3, 4, 5, 6, 7, 8], 8), "▁▂▃▄▅▆▇█");
  assert.equal(sparkline([6.3, 6.1, 5.9, 5.5, 5.6, 5.2], 10), "█▇▅▃▄▁");
  assert.equal(sparkline([10, 0, 5], 3), "█▁▅");
});

Deno.test("sparkline: keeps the last `width` values, scaled among themselves", () => {
  assert.equal(sparkline([100, 1, 2, 3], 3), "▁▅█");
  assert.equal(sparkline([1, 2, 3], 0), "");
  assert.equal(sparkline([], 5), "");
});

Deno.test("sparkline: a constant series is a row of middle blocks; a NaN is a '!'", () => {
  assert.equal(sparkline([2, 2, 2], 3), SPARK_BLOCKS[3].repeat(3));
  assert.equal(sparkline([1, NaN, 3], 3), "▁!█");
  assert.equal(sparkline([Infinity], 1), "!");
});

Deno.test("sparkline: a width that is not a whole number >= 0 is refused", () => {
  assert.throws(() => sparkline([1], -1), RangeError);
  assert.throws(() => sparkline([1], 1.5), /whole number/);
});
