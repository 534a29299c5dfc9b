/**
 * A matmul tiling written on a command line, `rows,cols,wx,wy,depth[,vec4[,db]]`: `tiled`
 * strategy with `depth > 0` (`tiled-vec4` with the `vec4` suffix, double-buffered in workgroup
 * memory with `vec4,db`), `register` with depth 0. For benchmarks that try kernel shapes on one
 * adapter; the text has no spaces, so bench/gpu/run.sh's awk reads it as one field.
 *
 * @module
 */
import type { MatmulTiling } from "./profile.ts";

/** Parses `rows,cols,wx,wy,depth[,vec4[,db]]`; throws a RangeError naming the text otherwise. */
export function parseTiling(text: string): MatmulTiling {
  const fields = text.split(",");
  const flags = fields.slice(5).join(",");
  const vec4 = flags === "vec4" || flags === "vec4,db";
  const double = flags === "vec4,db";
  const parts = fields.slice(0, 5).map(Number);
  const flagsOk = flags === "" || vec4;
  const depthOk = !vec4 || parts[4] > 0;
  if (
    parts.length !== 5 || parts.some((v) => !Number.isInteger(v) || v < 0) || !flagsOk ||
    !depthOk
  ) {
    throw new RangeError(
      `tiling "${text}": expected rows,cols,wx,wy,depth (non-negative integers) and an optional ` +
        `",vec4" or ",vec4,db" (double-buffered) with depth > 0, e.g. 4,4,16,16,16 or ` +
        `8,8,16,16,8,vec4,db`,
    );
  }
  const [rows, cols, wx, wy, depth] = parts;
  const strategy = depth === 0 ? "register" : vec4 ? "tiled-vec4" : "tiled";
  const tiling: MatmulTiling = { strategy, rows, cols, workgroup: [wx, wy], depth };
  return double ? { ...tiling, buffers: 2 } : tiling;
}

/** The tiling as {@link parseTiling} reads it. */
export function formatTiling(t: MatmulTiling): string {
  const fields = [t.rows, t.cols, t.workgroup[0], t.workgroup[1], t.depth].join(",");
  if (t.strategy !== "tiled-vec4") return fields;
  return (t.buffers ?? 1) === 2 ? `${fields},vec4,db` : `${fields},vec4`;
}
