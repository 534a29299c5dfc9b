import assert from "node:assert/strict";
import { lossChart } from "./loss_chart.ts";

Deno.test("a falling loss draws falling bars, labelled with its highest and lowest loss", () => {
  const points = [5, 4, 3, 2].map((loss, i) => ({ step: i + 1, loss }));
  const lines = lossChart(points, { width: 10, height: 3 });
  assert.deepEqual(lines, [
    "5.00 ┤█   ",
    "     │██▁ ",
    "2.00 ┤███▁",
    "     └────",
    "      1  4  (step)",
  ]);
});

Deno.test("steps are grouped into columns by their mean, in step order", () => {
  // Ten steps, given out of order, into five columns of two steps each.
  const points = Array.from({ length: 10 }, (_, i) => ({ step: 10 - i, loss: 10 - i }));
  const lines = lossChart(points, { width: 5, height: 1 });
  // Columns 1.5, 3.5, 5.5, 7.5, 9.5: from one eighth (the lowest) to eight (the highest).
  assert.equal(lines[0], "9.50 ┤▁▃▅▆█");
  assert.equal(lines[0].length - "9.50 ┤".length, 5);
  assert.match(lines[2], /^ {6}1 {2}10 {2}\(step\)$/);
});

Deno.test("a flat curve, one point, and nothing to draw", () => {
  assert.equal(
    lossChart([{ step: 3, loss: 2 }, { step: 4, loss: 2 }], { height: 1 })[0],
    "2.00 ┤██",
  );
  assert.equal(lossChart([{ step: 7, loss: 1 }], { height: 1 }).at(-1), "      7  (step)");
  assert.deepEqual(lossChart([]), []);
  assert.deepEqual(lossChart([{ step: 1, loss: NaN }]), []);
  assert.throws(() => lossChart([{ step: 1, loss: 1 }], { width: 0 }), RangeError);
});
