/**
 * Kernel shapes written on a command line. A matmul tiling, `rows,cols,wx,wy,depth[,vec4[,FLAG…]]`:
 * `tiled` strategy with `depth > 0` (`tiled-vec4` with the `vec4` suffix), `register` with depth
 * 0. After `vec4`, each at most once and in any order (written back in this one): `db`
 * (double-buffered in workgroup memory), `u` (K loop unrolled), `g4` (vec4 storage loads). An
 * attention tiling: `rows`, `tiled` (the GPU profile's tiles, at every head size) or
 * `ROWSxSTAGED[xQUERIES]`. For benchmarks that try kernel shapes on one adapter; the text has no
 * spaces, so bench/gpu/run.sh's awk reads it as one field.
 *
 * @module
 */
import { type AttentionTiling, GPU_ATTENTION_TILES, type MatmulTiling } from "./profile.ts";

/** The `tiled-vec4` flags after `vec4`, in the order {@link formatTiling} writes them. */
const VEC4_FLAGS = ["db", "u", "g4", "kr"] as const;

const TILING_HELP = `expected rows,cols,wx,wy,depth (non-negative integers) and an optional ` +
  `",vec4" with depth > 0, then any of ",db" (double-buffered), ",u" (K loop unrolled), ` +
  `",g4" (vec4 storage loads) and ",kr" (a workgroup array per K row), each once, e.g. ` +
  `4,4,16,16,16 or 8,8,16,16,8,vec4,u,g4`;

/**
 * Parses `rows,cols,wx,wy,depth[,vec4[,db][,u][,g4][,kr]]`; throws a RangeError naming the text (and
 * the flag at fault, if one is) otherwise.
 */
export function parseTiling(text: string): MatmulTiling {
  const fields = text.split(",");
  const bad = (why: string) => new RangeError(`tiling "${text}": ${why}${TILING_HELP}`);
  const parts = fields.slice(0, 5).map(Number);
  if (parts.length !== 5 || parts.some((v) => !Number.isInteger(v) || v < 0)) throw bad("");
  const [rows, cols, wx, wy, depth] = parts;
  const [kind, ...flags] = fields.slice(5);
  if (kind === undefined) {
    const strategy = depth === 0 ? "register" : "tiled";
    return { strategy, rows, cols, workgroup: [wx, wy], depth };
  }
  if (kind !== "vec4") throw bad(`"${kind}" where "vec4" or nothing was expected; `);
  if (depth === 0) throw bad("vec4 needs depth > 0; ");
  for (const [i, flag] of flags.entries()) {
    if (!(VEC4_FLAGS as readonly string[]).includes(flag)) throw bad(`unknown flag "${flag}"; `);
    if (flags.indexOf(flag) !== i) throw bad(`flag "${flag}" twice; `);
  }
  const tiling: MatmulTiling = {
    strategy: "tiled-vec4",
    rows,
    cols,
    workgroup: [wx, wy],
    depth,
  };
  return {
    ...tiling,
    ...(flags.includes("db") ? { buffers: 2 } : {}),
    ...(flags.includes("u") ? { unrollK: true } : {}),
    ...(flags.includes("g4") ? { vec4Loads: true } : {}),
    ...(flags.includes("kr") ? { kRows: true } : {}),
  };
}

/** The tiling as {@link parseTiling} reads it, flags in one fixed order. */
export function formatTiling(t: MatmulTiling): string {
  const fields = [t.rows, t.cols, t.workgroup[0], t.workgroup[1], t.depth].join(",");
  if (t.strategy !== "tiled-vec4") return fields;
  const on = {
    db: (t.buffers ?? 1) === 2,
    u: t.unrollK === true,
    g4: t.vec4Loads === true,
    kr: t.kRows === true,
  };
  return [fields, "vec4", ...VEC4_FLAGS.filter((f) => on[f])].join(",");
}

/**
 * Parses an attention tiling: `rows` (one invocation per query row), `tiled` (the GPU profile's
 * tiles) or `ROWSxSTAGED[xQUERIES]` (positive integers; the kernel checks them against the
 * device's limits). A tiled override runs every head size, past the GPU profile's `maxHeadDim`:
 * it is how the two families are compared. Throws a RangeError naming the text otherwise.
 */
export function parseAttentionTiling(text: string): AttentionTiling {
  if (text === "rows") return { strategy: "rows", rows: 0, staged: 0 };
  const [tiles, flag, ...rest] = text.split(",");
  const bad = () =>
    new RangeError(
      `attention tiling "${text}": expected rows, tiled or ROWSxSTAGED[xQUERIES] (positive ` +
        `integers), tiles optionally followed by ",ra" (a workgroup array per staged row), e.g. ` +
        `64x64, 64x64x4 or tiled,ra`,
    );
  if ((flag !== undefined && flag !== "ra") || rest.length > 0) throw bad();
  const rowArrays = flag === "ra" ? { rowArrays: true as const } : {};
  if (tiles === "tiled") return { ...GPU_ATTENTION_TILES, ...rowArrays };
  const parts = tiles.split("x").map(Number);
  if (parts.length < 2 || parts.length > 3 || parts.some((v) => !Number.isInteger(v) || v < 1)) {
    throw bad();
  }
  const [rows, staged, queries = 1] = parts;
  return { strategy: "tiled", rows, staged, queries, ...rowArrays };
}
