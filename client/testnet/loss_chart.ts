/**
 * A loss curve as text, for a terminal: one column per group of steps (their mean loss), bars
 * drawn with eighth-blocks so that a fall of a few percent still shows. Pure.
 *
 * @module
 */

/** One point of the curve. */
export interface LossPoint {
  readonly step: number;
  readonly loss: number;
}

/** Options of {@linkcode lossChart}. */
export interface LossChartOptions {
  /** Columns of bars at most (default 60); steps are grouped to fit. */
  readonly width?: number;
  /** Rows of bars (default 8). */
  readonly height?: number;
}

const EIGHTHS = [" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

/**
 * The curve of `points` (any order; non-finite losses are left out) as lines of text: the
 * highest loss labels the top row, the lowest the bottom row, the first and last step the
 * axis. Empty when there is no finite point.
 *
 * @example
 * ```ts
 * import { lossChart } from "./loss_chart.ts";
 * const lines = lossChart([{ step: 1, loss: 5 }, { step: 2, loss: 3 }], { height: 2 });
 * if (lines.length !== 4) throw new Error("two rows of bars, the axis and its labels");
 * ```
 */
export function lossChart(points: readonly LossPoint[], options: LossChartOptions = {}): string[] {
  const width = options.width ?? 60;
  const height = options.height ?? 8;
  if (!Number.isInteger(width) || width < 1) throw new RangeError(`width ${width}`);
  if (!Number.isInteger(height) || height < 1) throw new RangeError(`height ${height}`);
  const sorted = points.filter((p) => Number.isFinite(p.loss)).sort((a, b) => a.step - b.step);
  if (sorted.length === 0) return [];
  const columns = groupMeans(sorted.map((p) => p.loss), width);
  const top = Math.max(...columns), bottom = Math.min(...columns);
  // The lowest column keeps one eighth of a row, so that every column shows.
  const span = top - bottom;
  const eighths = columns.map((v) =>
    span === 0 ? height * 8 : 1 + Math.round(((v - bottom) / span) * (height * 8 - 1))
  );
  const topLabel = top.toFixed(2), bottomLabel = bottom.toFixed(2);
  const labelWidth = Math.max(topLabel.length, bottomLabel.length);
  const lines: string[] = [];
  for (let row = height - 1; row >= 0; row--) {
    const label = row === height - 1 ? topLabel : row === 0 ? bottomLabel : "";
    const bars = eighths.map((e) => EIGHTHS[Math.max(0, Math.min(8, e - row * 8))]).join("");
    lines.push(`${label.padStart(labelWidth)} ${label === "" ? "│" : "┤"}${bars}`);
  }
  const first = String(sorted[0].step), last = String(sorted[sorted.length - 1].step);
  lines.push(`${" ".repeat(labelWidth)} └${"─".repeat(columns.length)}`);
  const gap = Math.max(1, columns.length - first.length - last.length);
  const steps = first === last ? first : `${first}${" ".repeat(gap)}${last}`;
  lines.push(`${" ".repeat(labelWidth + 2)}${steps}  (step)`);
  return lines;
}

/** `values` in at most `width` consecutive groups, each as its mean. */
function groupMeans(values: readonly number[], width: number): number[] {
  const groups = Math.min(width, values.length);
  const out: number[] = [];
  for (let g = 0; g < groups; g++) {
    const from = Math.floor((g * values.length) / groups);
    const to = Math.floor(((g + 1) * values.length) / groups);
    let sum = 0;
    for (let i = from; i < to; i++) sum += values[i];
    out.push(sum / (to - from));
  }
  return out;
}
