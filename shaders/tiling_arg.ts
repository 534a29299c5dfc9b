/**
 * A matmul tiling written on a command line, `rows,cols,wx,wy,depth[,vec4]`: `tiled` strategy
 * with `depth > 0` (`tiled-vec4` with the `vec4` suffix), `register` with depth 0. For benchmarks
 * that try kernel shapes on one adapter.
 *
 * @module
 */
import type { MatmulTiling } from "./profile.ts";

/** Parses `rows,cols,wx,wy,depth[,vec4]`; throws a RangeError naming the text otherwise. */
export function parseTiling(text: string): MatmulTiling {
  const fields = text.split(",");
  const vec4 = fields.length === 6 && fields[5] === "vec4";
  const parts = (vec4 ? fields.slice(0, 5) : fields).map(Number);
  const depthOk = !vec4 || parts[4] > 0;
  if (parts.length !== 5 || parts.some((v) => !Number.isInteger(v) || v < 0) || !depthOk) {
    throw new RangeError(
      `tiling "${text}": expected rows,cols,wx,wy,depth (non-negative integers) and an optional ` +
        `",vec4" with depth > 0, e.g. 4,4,16,16,16 or 8,8,16,16,8,vec4`,
    );
  }
  const [rows, cols, wx, wy, depth] = parts;
  const strategy = depth === 0 ? "register" : vec4 ? "tiled-vec4" : "tiled";
  return { strategy, rows, cols, workgroup: [wx, wy], depth };
}

/** The tiling as {@link parseTiling} reads it. */
export function formatTiling(t: MatmulTiling): string {
  const fields = [t.rows, t.cols, t.workgroup[0], t.workgroup[1], t.depth].join(",");
  return t.strategy === "tiled-vec4" ? `${fields},vec4` : fields;
}
