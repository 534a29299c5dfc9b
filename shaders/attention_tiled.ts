/**
 * The attention's tiled kernels, for GPUs (profile `attention.strategy: "tiled"`): a workgroup
 * owns `rows` consecutive query rows (forward, dQ) or key rows (dK/dV) of one head, one per
 * invocation, and stages the rows they all read in workgroup memory, `staged` at a time: key and
 * value rows for the forward and dQ, query, output-gradient, lse and Δ rows for dK/dV. Each
 * staged row is read from storage once per workgroup instead of once per invocation. With the
 * `queries` option (forward and dQ, no profile sets it) an invocation owns that many consecutive
 * query rows, so each staged row is also read from workgroup memory once per invocation instead
 * of once per query row; each row still walks its own keys in order.
 *
 * Same bits as the row kernels of shaders/attention.ts: each invocation walks exactly the rows it
 * walked there, in the same order (keys `first(t)…t`; queries `s…end(s)−1` per head of the
 * group), adding the same terms (the step bodies are the same functions, only their row reads
 * come from workgroup memory), so no tile size changes a result. Packed documents are supported
 * directly: the workgroup stages from its first row's document start (forward, dQ) or to its
 * last row's document end (dK/dV), and each invocation skips staged rows outside its own walk.
 * The lockstep alignment of the row kernels' dK/dV walk has no counterpart here: every
 * invocation reads the same staged row at once already.
 *
 * Workgroup memory: forward and dQ `2·staged·D·4` bytes, dK/dV `staged·(2·D + 2)·4` bytes, plus 4
 * for the document bound when packed. {@link attentionTiles} shrinks `staged` to fit the device.
 *
 * @module
 */

import { dkvBindings, dqBindings, forwardBindings } from "./attention_bindings.ts";
import * as steps from "./attention_steps.ts";
import { main1d } from "./kernel.ts";
import type { AttentionTiling } from "./profile.ts";

/** The three tiled passes. */
export type TiledPass = "forward" | "dq" | "dkv";

/** Bytes of workgroup memory per staged row of `pass` at head size `d`. */
export function stagedRowBytes(pass: TiledPass, d: number): number {
  return pass === "dkv" ? (2 * d + 2) * 4 : 2 * d * 4;
}

/** Workgroup memory of one tiled kernel: its staged rows, and the document bound when packed. */
export function tiledWorkgroupBytes(
  pass: TiledPass,
  d: number,
  staged: number,
  packed: boolean,
): number {
  return staged * stagedRowBytes(pass, d) + (packed ? 4 : 0);
}

/**
 * The tile of one tiled kernel: invocations per workgroup, rows staged per barrier, and query
 * rows per invocation (forward and dQ; 1 for dK/dV).
 */
export interface AttentionTiles {
  readonly rows: number;
  readonly staged: number;
  readonly queries: number;
  /** Each staged row its own workgroup array (AttentionTiling's `rowArrays`). */
  readonly rowArrays: boolean;
}

/** Most query rows one invocation may own: each holds its rows in registers. */
export const MAX_QUERIES_PER_INVOCATION = 8;

/**
 * The tile `pass` runs with at head size `d`: the profile's, with `staged` shrunk until the
 * workgroup memory fits `limits.maxComputeWorkgroupStorageSize`. Throws a `RangeError` naming the
 * pass, D and the limit when not even one row fits, or when `rows` exceeds the device's
 * invocations per workgroup.
 *
 * @example
 * ```ts
 * import { attentionTiles } from "./attention_tiled.ts";
 * const tiling = { strategy: "tiled", rows: 64, staged: 64 } as const;
 * const limits = { maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256 };
 * // D = 64: K and V rows take 512 bytes, so 32 fit in 16 KiB.
 * if (attentionTiles(tiling, "forward", 64, false, limits).staged !== 32) throw new Error();
 * ```
 */
export function attentionTiles(
  tiling: AttentionTiling,
  pass: TiledPass,
  d: number,
  packed: boolean,
  limits: Pick<
    GPUSupportedLimits,
    "maxComputeWorkgroupStorageSize" | "maxComputeInvocationsPerWorkgroup"
  >,
): AttentionTiles {
  const { rows } = tiling;
  if (!Number.isInteger(rows) || rows < 1 || rows > limits.maxComputeInvocationsPerWorkgroup) {
    throw new RangeError(
      `attention ${pass}: tiled rows must be an integer in 1..${limits.maxComputeInvocationsPerWorkgroup} ` +
        `(maxComputeInvocationsPerWorkgroup), got ${rows}`,
    );
  }
  if (!Number.isInteger(tiling.staged) || tiling.staged < 1) {
    throw new RangeError(
      `attention ${pass}: tiled staged must be a positive integer, got ${tiling.staged}`,
    );
  }
  const { queries = 1 } = tiling;
  if (!Number.isInteger(queries) || queries < 1 || queries > MAX_QUERIES_PER_INVOCATION) {
    throw new RangeError(
      `attention ${pass}: tiled queries must be an integer in 1..${MAX_QUERIES_PER_INVOCATION}, ` +
        `got ${queries}`,
    );
  }
  const limit = limits.maxComputeWorkgroupStorageSize;
  const fit = Math.floor((limit - (packed ? 4 : 0)) / stagedRowBytes(pass, d));
  const staged = Math.min(tiling.staged, fit);
  if (staged < 1) {
    throw new RangeError(
      `attention ${pass}: one staged row of head size D = ${d} needs ` +
        `${tiledWorkgroupBytes(pass, d, 1, packed)} bytes of workgroup memory, over the ` +
        `device's maxComputeWorkgroupStorageSize ${limit}: use the "rows" attention strategy`,
    );
  }
  return {
    rows,
    staged,
    queries: pass === "dkv" ? 1 : queries,
    rowArrays: tiling.rowArrays === true,
  };
}

/**
 * The register prefixes of an invocation's `queries` query rows: none for one row (the kernels
 * then read as they always did), `r0_`, `r1_`, ... for several.
 */
function queryPrefixes(queries: number): string[] {
  return queries === 1 ? [""] : Array.from({ length: queries }, (_, j) => `r${j}_`);
}

/**
 * The workgroup's tile `tile` of `rows · queries` row positions in one head: `bb`, `hh` (of
 * `heads`), the first position `r0` and last `rLast`, all uniform; and per row the invocation
 * owns (`queries` consecutive ones, register prefixes {@link queryPrefixes}) its position
 * `own`, `live` when it is inside the row (the others still stage rows and meet the barriers).
 */
function tileHeader(rows: number, heads: string, queries = 1): string {
  const span = rows * queries;
  const owned = queryPrefixes(queries).map((r, j) => {
    const at = queries === 1 ? "r0 + li" : `r0 + li * ${queries}u + ${j}u`;
    return `
  let ${r}own = ${at};
  let ${r}live = ${r}own < p.t;
  let ${r}ownc = min(${r}own, p.t - 1u);`;
  });
  return `${main1d(rows)}
  let tiles = (p.t + ${span - 1}u) / ${span}u;
  let tile = wid.x + wid.y * nwg.x;
  if (tile >= p.b * ${heads} * tiles) { return; }
  let r0 = (tile % tiles) * ${span}u;
  let hh = (tile / tiles) % ${heads};
  let bb = tile / (tiles * ${heads});
  let rLast = min(r0 + ${span}u, p.t) - 1u;${owned.join("")}`;
}

/** A `documents` entry (`0`: start, `1`: end) read once by the workgroup, as a uniform value. */
function uniformDocument(field: 0 | 1, row: string): string {
  return `if (li == 0u) { bound = documents[2u * (bb * p.t + ${row}) + ${field}u]; }
  let tileBound = workgroupUniformLoad(&bound);`;
}

/** The workgroup's document bound, read once by {@link uniformDocument}, when packed. */
function boundDecl(packed: boolean): string {
  return packed ? "\nvar<workgroup> bound: u32;" : "";
}

/**
 * The walk over staged rows shared by every tiled kernel: positions `from…to−1` (uniform over
 * the workgroup) are staged `staged` at a time by `stage` (a tile of `tn` rows from `t0`,
 * between barriers), and `body` runs for each of the invocation's own positions
 * `s` in `ownFrom…ownTo−1` of the tile, in order, its staged row at `so` (`layout`'s handle).
 */
function stagedWalk(
  staged: number,
  walk: { from: string; to: string; ownFrom: string; ownTo: string; stage: string; body: string },
  layout: RowLayout,
): string {
  return `for (var t0 = ${walk.from}; t0 < ${walk.to}; t0 += ${staged}u) {
      let tn = min(${staged}u, ${walk.to} - t0);
      workgroupBarrier();
      ${walk.stage}
      workgroupBarrier();
      let sEnd = min(t0 + tn, ${walk.ownTo});
      for (var s = max(t0, ${walk.ownFrom}); s < sEnd; s++) {
        let so = ${layout.so};
        ${walk.body}
      }
    }`;
}

/**
 * The workgroup's `rows` invocations copy the tile's `count` entries into workgroup memory,
 * entry `x` (at `cell` of each staged array) from index `src` of each storage array: `copies` maps
 * staged array to storage array.
 */
function stageEntries(
  rows: number,
  count: string,
  src: string,
  copies: Record<string, string>,
  cell = "[x]",
): string {
  const assign = Object.entries(copies).map(([to, from]) => `${to}${cell} = ${from}[src];`);
  return `for (var x = li; x < ${count}; x += ${rows}u) {
        let src = ${src};
        ${assign.join("\n        ")}
      }`;
}

/**
 * {@link stageEntries} for the tile's `tn` D-rows from position `t0` of head `head` (of `heads`
 * per position) in row `bb`, as `[B, T, heads, D]` storage arrays hold them.
 */
function stageRows(
  dv: number,
  rows: number,
  at: { heads: string; head: string },
  copies: Record<string, string>,
  layout: RowLayout,
): string {
  const src = `((bb * p.t + t0 + x / ${dv}u) * ${at.heads} + ${at.head}) * ${dv}u + x % ${dv}u`;
  return stageEntries(rows, `tn * ${dv}u`, src, copies, layout.cell);
}

/** One key of a query walk for the row of register prefix `r`, its key and value rows given. */
type QueryStep = (r: string, kRow: steps.Lane, vRow: steps.Lane) => string;

/**
 * The key walk shared by the forward and dQ: key and value rows of kv head `g` staged into `ks`,
 * `vs` from the tile's first key (or its document's start) to its last, `step` run for each of
 * the invocation's own keys `first(own)…own`. With several query rows per invocation the walk
 * spans all their keys; each staged row is loaded into registers once and each query row takes
 * exactly its own keys, in order: the same terms as one row per invocation.
 */
function keyTileWalk(dv: number, tiles: AttentionTiles, packed: boolean, step: QueryStep) {
  const first = packed
    ? `${uniformDocument(0, "r0")}\n  let kFirst = tileBound;`
    : "let kFirst = 0u;";
  const firstOf = (r: string) => packed ? `documents[2u * (bb * p.t + ${r}ownc)]` : "0u";
  const endOf = (r: string) => `select(0u, ${r}own + 1u, ${r}live)`;
  const layout = rowLayout(dv, tiles.rowArrays);
  const stage = stageRows(
    dv,
    tiles.rows,
    { heads: "p.kvh", head: "g" },
    { ks: "k", vs: "v" },
    layout,
  );
  const [stagedK, stagedV] = [layout.lane("ks"), layout.lane("vs")];
  const walk = (ownFirst: string, ownEnd: string, body: string) =>
    `let g = hh / (p.h / p.kvh);
  ${first}
  let ownFirst = ${ownFirst};
  let ownEnd = ${ownEnd};
  ${
      stagedWalk(tiles.staged, {
        from: "kFirst",
        to: "rLast + 1u",
        ownFrom: "ownFirst",
        ownTo: "ownEnd",
        stage,
        body,
      }, layout)
    }`;
  if (tiles.queries === 1) return walk(firstOf(""), endOf(""), step("", stagedK, stagedV));
  const rs = queryPrefixes(tiles.queries);
  const bounds = rs.map((r) => `let ${r}first = ${firstOf(r)};\n  let ${r}end = ${endOf(r)};`);
  const fold = (f: string, name: string) =>
    rs.slice(1).reduce((acc, r) => `${f}(${acc}, ${r}${name})`, `${rs[0]}${name}`);
  const body = `${steps.regs(dv, "let", "sk", stagedK)}
${steps.regs(dv, "let", "sv", stagedV)}
${
    rs.map((r) =>
      `    if (s >= ${r}first && s < ${r}end) {
    ${step(r, (j) => `sk${j}`, (j) => `sv${j}`)}
    }`
    ).join("\n")
  }`;
  return `${bounds.join("\n  ")}
  ${walk(fold("min", "first"), fold("max", "end"), body)}`;
}

/**
 * How a kernel's staged D-rows (`dv` = D/4 vec4 each) lie in workgroup memory: one flat array,
 * or with `rowArrays` a workgroup array per row, so that a read's one dynamic index, the row's,
 * is clamped once for all of the row's reads (naga clamps every dynamic workgroup index).
 */
interface RowLayout {
  /** Workgroup arrays `names` of `staged` rows each. */
  declare(names: readonly string[], staged: number): string;
  /** Where staging entry `x` (vec4 `x mod dv` of row `x / dv`) goes. */
  readonly cell: string;
  /** `so`: staged row `s − t0` as its lanes read it. */
  readonly so: string;
  /** Vec4 `j` of the staged row at `so` of workgroup array `name`. */
  lane(name: string): steps.Lane;
}

function rowLayout(dv: number, rowArrays: boolean): RowLayout {
  const type = (staged: number) =>
    rowArrays ? `array<array<vec4<f32>, ${dv}>, ${staged}>` : `array<vec4<f32>, ${staged * dv}>`;
  return {
    declare: (names, staged) =>
      names.map((n) => `var<workgroup> ${n}: ${type(staged)};`).join("\n"),
    cell: rowArrays ? `[x / ${dv}u][x % ${dv}u]` : "[x]",
    so: rowArrays ? "s - t0" : `(s - t0) * ${dv}u`,
    lane: (name) => (j) => rowArrays ? `${name}[so][${j}u]` : `${name}[so + ${j}u]`,
  };
}

/**
 * The start of a query-tile kernel (forward, dQ): `bindings`, the staged key and value rows
 * `ks`, `vs`, the tile's positions and each owned query row's offset `qo`.
 */
function queryTile(bindings: string, dv: number, tiles: AttentionTiles, packed: boolean): string {
  const offsets = queryPrefixes(tiles.queries).map((r) =>
    `  let ${r}qo = ((bb * p.t + ${r}ownc) * p.h + hh) * ${dv}u;`
  );
  return `${bindings}${boundDecl(packed)}
${rowLayout(dv, tiles.rowArrays).declare(["ks", "vs"], tiles.staged)}
${tileHeader(tiles.rows, "p.h", tiles.queries)}
${offsets.join("\n")}`;
}

/** Forward, tiled: bindings as `attentionForwardKernel`; one workgroup per query tile of a head. */
export function tiledForwardKernel(d: number, tiles: AttentionTiles, packed = false): string {
  const dv = d / 4, rs = queryPrefixes(tiles.queries);
  const outputs = rs.map((r) =>
    `  if (${r}live) {
${steps.forwardOutput(dv, "    ", r)}
    lse[(bb * p.h + hh) * p.t + ${r}own] = ${r}m + log(${r}l);
  }`
  );
  return `${queryTile(forwardBindings(packed), dv, tiles, packed)}
${rs.map((r) => steps.forwardRegisters(dv, r)).join("\n")}
  ${keyTileWalk(dv, tiles, packed, (r, k, v) => steps.onlineSoftmaxStep(dv, k, v, r))}
${outputs.join("\n")}
}
`;
}

/** Backward dQ, tiled: bindings as `attentionDqKernel`; one workgroup per query tile of a head. */
export function tiledDqKernel(d: number, tiles: AttentionTiles, packed = false): string {
  const dv = d / 4, rs = queryPrefixes(tiles.queries);
  const outputs = rs.map((r) =>
    `  if (${r}live) {
${steps.dqOutput(dv, "    ", r)}
  }`
  );
  return `${queryTile(dqBindings(packed), dv, tiles, packed)}
${rs.map((r) => steps.dqRegisters(dv, `${r}ownc`, r)).join("\n")}
  ${keyTileWalk(dv, tiles, packed, (r, k, v) => steps.dqStep(dv, k, v, r))}
${outputs.join("\n")}
}
`;
}

/**
 * Backward dK and dV, tiled: bindings as `attentionDkvKernel`; one workgroup per key tile of a
 * kv head. For each query head of the group, query rows from the tile's first key to its last
 * key's end (T, or the document's end) are staged with their lse and Δ; key `s` adds those in
 * `s…end(s)−1`.
 */
export function tiledDkvKernel(d: number, tiles: AttentionTiles, packed = false): string {
  const dv = d / 4, { rows, staged } = tiles;
  const layout = rowLayout(dv, tiles.rowArrays);
  const tileEnd = packed
    ? `${uniformDocument(1, "rLast")}\n  let qEnd = tileBound;`
    : "let qEnd = p.t;";
  const ownEnd = packed ? "documents[2u * (bb * p.t + ownc) + 1u]" : "p.t";
  const stage = `${
    stageRows(dv, rows, { heads: "p.h", head: "qh" }, { qs: "q", dos: "dout" }, layout)
  }
      ${
    stageEntries(rows, "tn", "(bb * p.h + qh) * p.t + t0 + x", { lses: "lse", deltas: "delta" })
  }`;
  const body = steps.dkvStep(dv, {
    qRow: layout.lane("qs"),
    doRow: layout.lane("dos"),
    lseAt: "lses[s - t0]",
    deltaAt: "deltas[s - t0]",
  });
  return `${dkvBindings(packed)}${boundDecl(packed)}
${layout.declare(["qs", "dos"], staged)}
var<workgroup> lses: array<f32, ${staged}>;
var<workgroup> deltas: array<f32, ${staged}>;
${tileHeader(rows, "p.kvh")}
  let g = hh;
  let rep = p.h / p.kvh;
  let ko = ((bb * p.t + ownc) * p.kvh + g) * ${dv}u;
  ${tileEnd}
  let ownEnd = select(0u, ${ownEnd}, live);
${steps.dkvRegisters(dv)}
  for (var qh = g * rep; qh < (g + 1u) * rep; qh++) {
    ${
    stagedWalk(
      staged,
      { from: "r0", to: "qEnd", ownFrom: "own", ownTo: "ownEnd", stage, body },
      layout,
    )
  }
  }
  if (live) {
${steps.dkvOutput(dv, "    ")}
  }
}
`;
}
