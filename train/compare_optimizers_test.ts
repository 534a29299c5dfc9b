import assert from "node:assert/strict";
import { lossChartSvg, smooth } from "./compare_optimizers.ts";

Deno.test("smooth: trailing mean, the first points average what exists", () => {
  assert.deepEqual(smooth([4, 2, 6, 8], 2), [4, 3, 4, 7]);
  assert.deepEqual(smooth([], 3), []);
});

Deno.test("lossChartSvg: one polyline per run, points in step order, legend with held-out loss", () => {
  const svg = lossChartSvg([
    { optimizer: "adamw", losses: [10, 9, 8], evalLoss: 8.5, seconds: 1 },
    { optimizer: "distro", losses: [10, 9.5, 9], evalLoss: 9.25, seconds: 1 },
  ], "t");
  assert.equal(svg.match(/<polyline /g)?.length, 2);
  assert.match(svg, /adamw: held-out loss 8\.5000/);
  assert.match(svg, /distro: held-out loss 9\.2500/);
  const xs = svg.match(/points="([^"]+)"/)![1].split(" ").map((p) => Number(p.split(",")[0]));
  assert.ok(xs[0] < xs[1] && xs[1] < xs[2]);
});
