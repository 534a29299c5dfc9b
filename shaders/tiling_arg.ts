/**
 * Kernel shapes written on a command line. A matmul tiling, `rows,cols,wx,wy,depth[,vec4[,db]]`:
 * `tiled` strategy with `depth > 0` (`tiled-vec4` with the `vec4` suffix, double-buffered in
 * workgroup memory with `vec4,db`), `register` with depth 0. An attention tiling: `rows`,
 * `tiled` (the GPU profile's tiles, at every head size) or `ROWSxSTAGED[xQUERIES]`. For benchmarks that try kernel shapes
 * on one adapter; the text has no spaces, so bench/gpu/run.sh's awk reads it as one field.
 *
 * @module
 */
import { type AttentionTiling, GPU_ATTENTION_TILES, type MatmulTiling } from "./profile.ts";

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

/**
 * Parses an attention tiling: `rows` (one invocation per query row), `tiled` (the GPU profile's
 * tiles) or `ROWSxSTAGED[xQUERIES]` (positive integers; the kernel checks them against the
 * device's limits). A tiled override runs every head size, past the GPU profile's `maxHeadDim`:
 * it is how the two families are compared. Throws a RangeError naming the text otherwise.
 */
export function parseAttentionTiling(text: string): AttentionTiling {
  if (text === "rows") return { strategy: "rows", rows: 0, staged: 0 };
  if (text === "tiled") return GPU_ATTENTION_TILES;
  const parts = text.split("x").map(Number);
  if (parts.length < 2 || parts.length > 3 || parts.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new RangeError(
      `attention tiling "${text}": expected rows, tiled or ROWSxSTAGED[xQUERIES] (positive ` +
        `integers), e.g. 64x64 or 64x64x4`,
    );
  }
  const [rows, staged, queries = 1] = parts;
  return { strategy: "tiled", rows, staged, queries };
}
