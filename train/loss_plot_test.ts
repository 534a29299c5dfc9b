import assert from "node:assert/strict";
import { formatSiBytes, lossPlotSvg, niceTicks, type PlotRun, smooth } from "./loss_plot.ts";

Deno.test("smooth: trailing mean, the first points average what exists", () => {
  assert.deepEqual(smooth([4, 2, 6, 8], 2), [4, 3, 4, 7]);
  assert.deepEqual(smooth([], 3), []);
  assert.deepEqual(smooth([4, Number.NaN, 6, Infinity], 2), [4, 4, 6, 6]);
  assert.deepEqual(smooth([Number.NaN], 2), [Number.NaN]);
});

Deno.test("niceTicks: steps of 1, 2 or 5 × 10^k covering the range", () => {
  assert.deepEqual(niceTicks(0, 150, 6), [0, 50, 100, 150]);
  assert.deepEqual(niceTicks(7.08, 10.4, 5), [7, 8, 9, 10, 11]);
  assert.deepEqual(niceTicks(0.12, 0.31, 4), [0.1, 0.15, 0.2, 0.25, 0.3, 0.35]);
  assert.deepEqual(niceTicks(2, 2, 5), [1.4, 1.6, 1.8, 2, 2.2, 2.4, 2.6]);
  assert.throws(() => niceTicks(3, 1), RangeError);
});

Deno.test("formatSiBytes: decimal units, three significant digits", () => {
  assert.equal(formatSiBytes(512), "512 B");
  assert.equal(formatSiBytes(1000), "1 kB");
  assert.equal(formatSiBytes(51_234), "51.2 kB");
  assert.equal(formatSiBytes(33_600_000), "33.6 MB");
  assert.equal(formatSiBytes(1e9), "1 GB");
});

// DisTrO sends 10 bytes a step, AdamW 1000: after 1, 2, 3, 4 steps 10..40 B and 1..4 kB.
const RUNS: PlotRun[] = [
  {
    id: "distro",
    label: "DisTrO (lr 3e-3)",
    losses: [4, 3, 2, 1],
    evalLoss: 1.5,
    bytesPerStep: 10,
    bytesWhat: "compressed result",
  },
  {
    id: "adamw",
    label: "AdamW (lr 1e-3)",
    losses: [4, 3, 2, 2],
    evalLoss: 2.25,
    bytesPerStep: 1000,
    bytesWhat: "f32 gradient",
  },
];
const SVG = lossPlotSvg({
  title: "T <&>",
  subtitle: "data/x: 4 steps",
  runs: RUNS,
  smoothing: 1,
  headings: ["by step", "by bytes"],
});

function panelOf(svg: string, id: string): string {
  const start = svg.indexOf(`<g class="panel" id="${id}">`);
  assert.ok(start >= 0, `panel ${id} is missing`);
  return svg.slice(start, svg.indexOf("</g>", start));
}

/** label → coordinate of each tick label of `axis` ("x" or "y") in a panel. */
function ticks(panel: string, axis: "x" | "y"): Map<string, number> {
  const re = new RegExp(
    `<text class="${axis}-tick" x="([\\d.]+)" y="([\\d.]+)"[^>]*>([^<]+)<`,
    "g",
  );
  return new Map([...panel.matchAll(re)].map((m) => [m[3], Number(axis === "x" ? m[1] : m[2])]));
}

function points(panel: string, run: string): [number, number][] {
  const m = panel.match(new RegExp(`data-run="${run}"[^>]*points="([^"]+)"`));
  assert.ok(m, `no polyline for ${run}`);
  return m[1].split(" ").map((p) => p.split(",").map(Number) as [number, number]);
}

Deno.test("lossPlotSvg: title and subtitle escaped, both panels with axis titles", () => {
  assert.match(SVG, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.match(SVG, /class="title"[^>]*>T &lt;&amp;&gt;</);
  assert.match(SVG, /class="subtitle"[^>]*>data\/x: 4 steps</);
  const steps = panelOf(SVG, "loss-by-step"), bytes = panelOf(SVG, "loss-by-bytes");
  assert.match(steps, /class="heading"[^>]*>by step</);
  assert.match(bytes, /class="heading"[^>]*>by bytes</);
  assert.match(steps, /class="x-title"[^>]*>training step</);
  assert.match(steps, /class="y-title"[^>]*>training loss \(nats per token\)</);
  assert.match(bytes, /class="x-title"[^>]*>bytes one client has sent its peers \(cumulative, log/);
  assert.match(bytes, /class="y-title"[^>]*>training loss/);
});

Deno.test("lossPlotSvg: both legends name each run with its learning rate", () => {
  const steps = panelOf(SVG, "loss-by-step"), bytes = panelOf(SVG, "loss-by-bytes");
  assert.match(steps, /class="legend"[^>]*>DisTrO \(lr 3e-3\): held-out loss 1\.500</);
  assert.match(steps, /class="legend"[^>]*>AdamW \(lr 1e-3\): held-out loss 2\.250</);
  assert.match(bytes, /class="legend"[^>]*>DisTrO \(lr 3e-3\): compressed result, 10 B per step</);
  assert.match(bytes, /class="legend"[^>]*>AdamW \(lr 1e-3\): f32 gradient, 1 kB per step</);
});

Deno.test("lossPlotSvg: ticks on both axes of both panels; bytes on whole decades", () => {
  const steps = panelOf(SVG, "loss-by-step"), bytes = panelOf(SVG, "loss-by-bytes");
  assert.deepEqual([...ticks(steps, "y").keys()], ["1", "2", "3", "4"]);
  assert.deepEqual([...ticks(bytes, "y").keys()], [...ticks(steps, "y").keys()]);
  assert.deepEqual([...ticks(steps, "x").keys()], ["0", "1", "2", "3", "4"]);
  assert.deepEqual([...ticks(bytes, "x").keys()], ["10 B", "100 B", "1 kB", "10 kB"]);
  // Loss rises up the page; steps and bytes grow to the right.
  const y = [...ticks(steps, "y").values()], x = [...ticks(bytes, "x").values()];
  assert.ok(y.every((v, i) => i === 0 || v < y[i - 1]), `y ticks ${y}`);
  assert.ok(x.every((v, i) => i === 0 || v > x[i - 1]), `x ticks ${x}`);
});

Deno.test("lossPlotSvg: each point sits on the ticks of its values", () => {
  const steps = panelOf(SVG, "loss-by-step"), bytes = panelOf(SVG, "loss-by-bytes");
  const sx = ticks(steps, "x"), sy = ticks(steps, "y");
  const distro = points(steps, "distro");
  assert.deepEqual(distro, [
    [sx.get("1"), sy.get("4")],
    [sx.get("2"), sy.get("3")],
    [sx.get("3"), sy.get("2")],
    [sx.get("4"), sy.get("1")],
  ]);
  assert.deepEqual(points(steps, "adamw")[3], [sx.get("4"), sy.get("2")]);
  // Loss by bytes: step 1 of DisTrO at 10 B, of AdamW at 1 kB; later steps between decades.
  const bx = ticks(bytes, "x"), by = ticks(bytes, "y");
  const d = points(bytes, "distro"), a = points(bytes, "adamw");
  assert.deepEqual(d[0], [bx.get("10 B"), by.get("4")]);
  assert.deepEqual(a[0], [bx.get("1 kB"), by.get("4")]);
  const decade = bx.get("100 B")! - bx.get("10 B")!;
  assert.ok(Math.abs(d[3][0] - (bx.get("10 B")! + Math.log10(4) * decade)) < 0.1);
  assert.ok(Math.abs(a[3][0] - (bx.get("1 kB")! + Math.log10(4) * decade)) < 0.1);
  // DisTrO's whole curve lies left of AdamW's first point.
  assert.ok(Math.max(...d.map(([x]) => x)) < Math.min(...a.map(([x]) => x)));
});

Deno.test("lossPlotSvg: smoothing is applied and named on the loss axis", () => {
  const svg = lossPlotSvg({ title: "t", subtitle: "s", runs: RUNS, smoothing: 2 });
  const steps = panelOf(svg, "loss-by-step");
  assert.match(steps, /mean of last 2 steps/);
  const y = ticks(steps, "y");
  assert.equal(points(steps, "distro")[1][1], y.get("3.5"));
});

Deno.test("lossPlotSvg: a diverged step is left out; bad input is refused by name", () => {
  const nan = [{ ...RUNS[0], losses: [4, Number.NaN, 2, 1] }, RUNS[1]];
  const svg = lossPlotSvg({ title: "t", subtitle: "s", runs: nan, smoothing: 1 });
  assert.equal(points(panelOf(svg, "loss-by-step"), "distro").length, 3);
  const raw = lossPlotSvg({
    title: "t",
    subtitle: "s",
    runs: [{ ...RUNS[0], losses: [Number.NaN, 2] }],
    smoothing: 1,
  });
  assert.equal(points(panelOf(raw, "loss-by-step"), "distro").length, 1);
  assert.doesNotMatch(svg, /NaN/);
  const plot = (runs: PlotRun[], smoothing = 1) =>
    lossPlotSvg({ title: "t", subtitle: "s", runs, smoothing });
  assert.throws(() => plot([]), /at least one run/);
  assert.throws(() => plot([{ ...RUNS[0], losses: [] }]), /"distro" has no losses/);
  assert.throws(() => plot([{ ...RUNS[0], bytesPerStep: 0 }]), /"distro" sends 0 bytes/);
  assert.throws(() => plot(RUNS, 0), /smoothing/);
});
