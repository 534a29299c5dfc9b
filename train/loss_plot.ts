/**
 * The loss plot of `deno task compare-optimizers` as an SVG string: pure (data in, text out), so
 * tests read the axes, the legends and the coordinates straight from what it returns.
 *
 * Two panels share the loss axis:
 * - training loss by step (linear x axis);
 * - training loss by the bytes one client has sent to its peers so far (log x axis): DisTrO's
 *   compressed result against the f32 gradient a plain data-parallel step sends.
 *
 * Each point is the mean of the last `smoothing` steps. Every element a test needs is tagged:
 * `<g class="panel" id=...>`, `class="x-tick"`/`"y-tick"` labels, `class="legend"` entries and
 * `<polyline data-run=...>`.
 *
 * @module
 */

/** One optimizer's curve. */
export interface PlotRun {
  /** Short name for `data-run` (`distro`, `adamw`). */
  readonly id: string;
  /** Legend text, e.g. `DisTrO (lr 3e-3)`. */
  readonly label: string;
  /** Training loss of each step, step 1 first. */
  readonly losses: readonly number[];
  /** Held-out loss after the last step; NaN when not evaluated. */
  readonly evalLoss: number;
  /** Bytes one client sends its peers per step. */
  readonly bytesPerStep: number;
  /** What those bytes are, for the legend (`compressed result`, `f32 gradient`). */
  readonly bytesWhat: string;
}

/** Everything one plot shows. */
export interface LossPlot {
  readonly title: string;
  /** The data used: model, corpus, steps, tokens. */
  readonly subtitle: string;
  readonly runs: readonly PlotRun[];
  /** Width of the trailing mean, in steps (1: raw losses). */
  readonly smoothing: number;
  /** A line above each panel: loss by step, loss by bytes sent. */
  readonly headings?: readonly [string, string];
}

/**
 * Mean over a trailing window of `width` values (the first points average what exists). A
 * non-finite value (a diverged step) is left out of the means; a window of only such values is
 * NaN.
 */
export function smooth(values: readonly number[], width: number): number[] {
  return values.map((_, i) => {
    const window = values.slice(Math.max(0, i + 1 - width), i + 1).filter(Number.isFinite);
    return window.length === 0 ? Number.NaN : window.reduce((a, b) => a + b, 0) / window.length;
  });
}

/**
 * Round tick values covering [lo, hi]: about `count` steps of 1, 2 or 5 × 10^k, the first at or
 * below `lo` and the last at or above `hi`.
 */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!Number.isFinite(lo) || !Number.isFinite(hi) || hi < lo) {
    throw new RangeError(`ticks need finite lo <= hi, found ${lo} and ${hi}`);
  }
  if (hi === lo) [lo, hi] = [lo - 0.5, hi + 0.5];
  const raw = (hi - lo) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const first = Math.floor(lo / step + 1e-9), last = Math.ceil(hi / step - 1e-9);
  // Multiplying integers by the step (not adding steps) keeps 0.1 + 0.2 noise out of the labels.
  return Array.from(
    { length: last - first + 1 },
    (_, i) => Number(((first + i) * step).toPrecision(12)),
  );
}

/** Decimal (SI) bytes with up to three significant digits: `51.2 kB`, `1 GB`. */
export function formatSiBytes(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB", "PB"];
  let v = bytes, u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${Number(v.toPrecision(3))} ${units[u]}`;
}

function escapeXml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

/** Decimals that tell `ticks` apart. */
function decimals(ticks: readonly number[]): number {
  const step = ticks.length > 1 ? ticks[1] - ticks[0] : 1;
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

const W = 760, LEFT = 78, RIGHT = 24;
const PANEL_H = 300, GAP = 100, FIRST_TOP = 88;
const COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"];
const f = (v: number) => v.toFixed(1);

interface Axis {
  readonly at: (v: number) => number;
  readonly ticks: readonly { value: number; label: string }[];
  readonly minor?: readonly number[];
}

/** One panel: frame, grid, tick labels, axis titles, one polyline per run, a legend. */
function panel(
  id: string,
  box: { top: number; bottom: number; heading?: string },
  axes: { x: Axis; y: Axis; xTitle: string; yTitle: string },
  curves: readonly { run: PlotRun; color: string; points: [number, number][]; legend: string }[],
): string[] {
  const { top, bottom } = box;
  const { x, y } = axes;
  const out = [`<g class="panel" id="${id}">`];
  if (box.heading !== undefined) {
    out.push(
      `<text class="heading" x="${LEFT}" y="${top - 10}" font-weight="bold">` +
        `${escapeXml(box.heading)}</text>`,
    );
  }
  out.push(
    `<rect x="${LEFT}" y="${top}" width="${W - LEFT - RIGHT}" height="${bottom - top}" ` +
      `fill="none" stroke="#333"/>`,
  );
  for (const t of y.ticks) {
    const py = f(y.at(t.value));
    out.push(
      `<line x1="${LEFT}" x2="${W - RIGHT}" y1="${py}" y2="${py}" stroke="#e4e4e4"/>`,
      `<line x1="${LEFT - 5}" x2="${LEFT}" y1="${py}" y2="${py}" stroke="#333"/>`,
      `<text class="y-tick" x="${LEFT - 8}" y="${py}" dy="4" text-anchor="end">${t.label}</text>`,
    );
  }
  for (const v of x.minor ?? []) {
    const px = f(x.at(v));
    out.push(`<line x1="${px}" x2="${px}" y1="${bottom}" y2="${bottom + 3}" stroke="#333"/>`);
  }
  for (const t of x.ticks) {
    const px = f(x.at(t.value));
    out.push(
      `<line x1="${px}" x2="${px}" y1="${top}" y2="${bottom}" stroke="#e4e4e4"/>`,
      `<line x1="${px}" x2="${px}" y1="${bottom}" y2="${bottom + 6}" stroke="#333"/>`,
      `<text class="x-tick" x="${px}" y="${bottom + 20}" text-anchor="middle">${t.label}</text>`,
    );
  }
  const middle = (top + bottom) / 2;
  out.push(
    `<text class="x-title" x="${(LEFT + W - RIGHT) / 2}" y="${bottom + 42}" ` +
      `text-anchor="middle">${escapeXml(axes.xTitle)}</text>`,
    `<text class="y-title" x="20" y="${middle}" transform="rotate(-90 20 ${middle})" ` +
      `text-anchor="middle">${escapeXml(axes.yTitle)}</text>`,
  );
  curves.forEach(({ run, color, points, legend }, k) => {
    const xy = points.map(([px, py]) => `${f(x.at(px))},${f(y.at(py))}`).join(" ");
    out.push(
      `<polyline data-run="${escapeXml(run.id)}" fill="none" stroke="${color}" ` +
        `stroke-width="2" points="${xy}"/>`,
    );
    const ly = top + 18 + k * 20;
    out.push(
      `<rect x="${W - RIGHT - 330}" y="${ly - 6}" width="18" height="4" fill="${color}"/>`,
      `<text class="legend" x="${W - RIGHT - 306}" y="${ly}">${escapeXml(legend)}</text>`,
    );
  });
  out.push("</g>");
  return out;
}

/**
 * The plot as a standalone SVG document. Throws `RangeError` when a run has no losses or a
 * byte count that is not a positive number.
 */
export function lossPlotSvg(plot: LossPlot): string {
  if (plot.runs.length === 0) throw new RangeError("a loss plot needs at least one run");
  for (const run of plot.runs) {
    if (run.losses.length === 0) throw new RangeError(`run "${run.id}" has no losses to plot`);
    if (!(run.bytesPerStep > 0) || !Number.isFinite(run.bytesPerStep)) {
      throw new RangeError(`run "${run.id}" sends ${run.bytesPerStep} bytes per step`);
    }
  }
  if (!Number.isInteger(plot.smoothing) || plot.smoothing < 1) {
    throw new RangeError(`smoothing must be a whole number of steps >= 1, found ${plot.smoothing}`);
  }
  // Smoothed [step, loss] pairs; a diverged step (NaN, Infinity) is left out, not plotted as 0.
  const curves = plot.runs.map((run) =>
    smooth(run.losses, plot.smoothing).map((v, i) => [i + 1, v] as [number, number])
      .filter(([, v]) => Number.isFinite(v))
  );
  const values = curves.flat().map(([, v]) => v);
  if (values.length === 0) throw new RangeError("every loss is NaN or infinite: nothing to plot");
  const steps = Math.max(...plot.runs.map((r) => r.losses.length));

  const yValues = niceTicks(Math.min(...values), Math.max(...values), 5);
  const yDigits = decimals(yValues);
  const boxes = [0, 1].map((i) => {
    const top = FIRST_TOP + i * (PANEL_H + GAP);
    return { top, bottom: top + PANEL_H, heading: plot.headings?.[i] };
  });
  const yAxis = (box: { top: number; bottom: number }): Axis => {
    const lo = yValues[0], hi = yValues[yValues.length - 1];
    return {
      at: (v) => box.bottom - ((v - lo) / (hi - lo)) * (box.bottom - box.top),
      ticks: yValues.map((v) => ({ value: v, label: v.toFixed(yDigits) })),
    };
  };
  const xPixels = W - LEFT - RIGHT;

  const stepTicks = niceTicks(0, steps, 6);
  const stepMax = stepTicks[stepTicks.length - 1];
  const stepAxis: Axis = {
    at: (s) => LEFT + (s / stepMax) * xPixels,
    ticks: stepTicks.map((s) => ({ value: s, label: String(s) })),
  };

  // Cumulative bytes after step s: s × bytes per step, on whole decades.
  const lowest = Math.min(...plot.runs.map((r) => r.bytesPerStep));
  const highest = Math.max(...plot.runs.map((r) => r.bytesPerStep * r.losses.length));
  const d0 = Math.floor(Math.log10(lowest) + 1e-9),
    d1 = Math.max(d0 + 1, Math.ceil(Math.log10(highest) - 1e-9));
  const decades = Array.from({ length: d1 - d0 + 1 }, (_, i) => d0 + i);
  const bytesAxis: Axis = {
    at: (b) => LEFT + ((Math.log10(b) - d0) / (d1 - d0)) * xPixels,
    ticks: decades.map((d) => ({ value: 10 ** d, label: formatSiBytes(10 ** d) })),
    minor: decades.slice(0, -1).flatMap((d) => [2, 3, 4, 5, 6, 7, 8, 9].map((m) => m * 10 ** d)),
  };

  const yTitle = plot.smoothing === 1
    ? "training loss (nats per token)"
    : `training loss (nats per token, mean of last ${plot.smoothing} steps)`;
  const colored = plot.runs.map((run, k) => ({ run, color: COLORS[k % COLORS.length] }));
  const held = (r: PlotRun) =>
    Number.isFinite(r.evalLoss) ? `: held-out loss ${r.evalLoss.toFixed(3)}` : "";
  const H = boxes[1].bottom + 56;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" ` +
    `viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text class="title" x="${W / 2}" y="26" text-anchor="middle" font-size="16">` +
    `${escapeXml(plot.title)}</text>`,
    `<text class="subtitle" x="${W / 2}" y="48" text-anchor="middle" fill="#444">` +
    `${escapeXml(plot.subtitle)}</text>`,
    ...panel(
      "loss-by-step",
      boxes[0],
      { x: stepAxis, y: yAxis(boxes[0]), xTitle: "training step", yTitle },
      colored.map(({ run, color }, k) => ({
        run,
        color,
        points: curves[k],
        legend: `${run.label}${held(run)}`,
      })),
    ),
    ...panel(
      "loss-by-bytes",
      boxes[1],
      {
        x: bytesAxis,
        y: yAxis(boxes[1]),
        xTitle: "bytes one client has sent its peers (cumulative, log scale; 1 kB = 1000 B)",
        yTitle,
      },
      colored.map(({ run, color }, k) => ({
        run,
        color,
        points: curves[k].map(([s, v]) => [s * run.bytesPerStep, v] as [number, number]),
        legend: `${run.label}: ${run.bytesWhat}, ${formatSiBytes(run.bytesPerStep)} per step`,
      })),
    ),
    "</svg>",
  ];
  return parts.join("\n") + "\n";
}
