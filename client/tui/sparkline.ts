/**
 * A sparkline: the last values as one row of block characters (`▁▂▃▄▅▆▇█`), lowest value the
 * lowest block, so a falling loss reads as a falling line. One character per value, one column
 * each.
 *
 * @example
 * ```ts
 * import { sparkline } from "./sparkline.ts";
 * if (sparkline([1, 2, 3, 4, 5, 6, 7, 8], 8) !== "▁▂▃▄▅▆▇█") throw new Error("wrong blocks");
 * ```
 *
 * @module
 */

/** The blocks, lowest first. */
export const SPARK_BLOCKS = "▁▂▃▄▅▆▇█";

/**
 * The last `width` values of `values` as blocks scaled between their minimum and maximum; a
 * constant series is a row of middle blocks, and a value that is not finite (a NaN loss) a `!`.
 */
export function sparkline(values: readonly number[], width: number): string {
  if (!Number.isInteger(width) || width < 0) {
    throw new RangeError(`sparkline width must be a whole number >= 0, found ${width}`);
  }
  const shown = width === 0 ? [] : values.slice(-width);
  const finite = shown.filter(Number.isFinite);
  const min = Math.min(...finite);
  const max = Math.max(...finite);
  const top = SPARK_BLOCKS.length - 1;
  return shown.map((v) => {
    if (!Number.isFinite(v)) return "!";
    if (max === min) return SPARK_BLOCKS[top >> 1];
    return SPARK_BLOCKS[Math.round(((v - min) / (max - min)) * top)];
  }).join("");
}
