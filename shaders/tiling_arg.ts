/**
 * A matmul tiling written on a command line, `rows,cols,wx,wy,depth`: `tiled` strategy with
 * `depth > 0`, `register` with depth 0. For benchmarks that try kernel shapes on one adapter.
 *
 * @module
 */
import type { MatmulTiling } from "./profile.ts";

/** Parses `rows,cols,wx,wy,depth`; throws a RangeError naming the text otherwise. */
export function parseTiling(text: string): MatmulTiling {
  const parts = text.split(",").map(Number);
  if (parts.length !== 5 || parts.some((v) => !Number.isInteger(v) || v < 0)) {
    throw new RangeError(
      `tiling "${text}": expected rows,cols,wx,wy,depth (non-negative integers), e.g. 4,4,16,16,16`,
    );
  }
  const [rows, cols, wx, wy, depth] = parts;
  return { strategy: depth > 0 ? "tiled" : "register", rows, cols, workgroup: [wx, wy], depth };
}

/** The tiling as {@link parseTiling} reads it. */
export function formatTiling(t: MatmulTiling): string {
  return [t.rows, t.cols, t.workgroup[0], t.workgroup[1], t.depth].join(",");
}
