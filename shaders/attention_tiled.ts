/**
 * The attention's tiled kernels, for GPUs (profile `attention.strategy: "tiled"`): a workgroup
 * owns `rows` consecutive query rows (forward, dQ) or key rows (dK/dV) of one head, one per
 * invocation, and stages the rows they all read in workgroup memory, `staged` at a time: key and
 * value rows for the forward and dQ, query, output-gradient, lse and Δ rows for dK/dV. Each
 * staged row is read from storage once per workgroup instead of once per invocation.
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

import { dkvStep, dqStep, each, type Lane, onlineSoftmaxStep, regs } from "./attention_steps.ts";
import { main1d } from "./kernel.ts";
import type { AttentionTiling } from "./profile.ts";

const PARAMS = `struct Params { b: u32, t: u32, h: u32, kvh: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;`;

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

/** The tile of one tiled kernel: rows owned per workgroup, rows staged per barrier. */
export interface AttentionTiles {
  readonly rows: number;
  readonly staged: number;
}

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
  return { rows, staged };
}

/**
 * The workgroup's tile `tile` of `rows` row positions in one head: `bb`, `hh` (of `heads`), the
 * first position `r0` and last `rLast`, all uniform; and the invocation's own position `own`,
 * `live` when it is inside the row (the others still stage rows and meet the barriers).
 */
function tileHeader(rows: number, heads: string): string {
  return `${main1d(rows)}
  let tiles = (p.t + ${rows - 1}u) / ${rows}u;
  let tile = wid.x + wid.y * nwg.x;
  if (tile >= p.b * ${heads} * tiles) { return; }
  let r0 = (tile % tiles) * ${rows}u;
  let hh = (tile / tiles) % ${heads};
  let bb = tile / (tiles * ${heads});
  let rLast = min(r0 + ${rows}u, p.t) - 1u;
  let own = r0 + li;
  let live = own < p.t;
  let ownc = min(own, p.t - 1u);`;
}

/** A `documents` entry (`0`: start, `1`: end) read once by the workgroup, as a uniform value. */
function uniformDocument(field: 0 | 1, row: string): string {
  return `if (li == 0u) { bound = documents[2u * (bb * p.t + ${row}) + ${field}u]; }
  let tileBound = workgroupUniformLoad(&bound);`;
}

/** Declarations of the `documents` binding and the workgroup's bound, when packed. */
function documentsDecl(packed: boolean, at: number): string {
  return packed
    ? `\n@group(0) @binding(${at}) var<storage, read> documents: array<u32>;
var<workgroup> bound: u32;`
    : "";
}

/**
 * The key-tile walk shared by the forward and dQ: stage key and value rows `k0…` of kv head `g`
 * into `ks`, `vs`, then run `body` for each of the invocation's own keys in the tile, in order.
 */
function keyTileWalk(dv: number, rows: number, staged: number, packed: boolean, body: string) {
  const first = packed
    ? `${uniformDocument(0, "r0")}\n  let kFirst = tileBound;`
    : "let kFirst = 0u;";
  const ownFirst = packed ? "documents[2u * (bb * p.t + ownc)]" : "0u";
  return `let g = hh / (p.h / p.kvh);
  ${first}
  let ownFirst = ${ownFirst};
  let ownEnd = select(0u, own + 1u, live);
  for (var k0 = kFirst; k0 <= rLast; k0 += ${staged}u) {
    let kn = min(${staged}u, rLast + 1u - k0);
    workgroupBarrier();
    for (var x = li; x < kn * ${dv}u; x += ${rows}u) {
      let src = ((bb * p.t + k0 + x / ${dv}u) * p.kvh + g) * ${dv}u + x % ${dv}u;
      ks[x] = k[src];
      vs[x] = v[src];
    }
    workgroupBarrier();
    let sEnd = min(k0 + kn, ownEnd);
    for (var s = max(k0, ownFirst); s < sEnd; s++) {
      let ko = (s - k0) * ${dv}u;
      ${body}
    }
  }`;
}

const stagedK: Lane = (j) => `ks[ko + ${j}u]`;
const stagedV: Lane = (j) => `vs[ko + ${j}u]`;

/** Workgroup arrays of `staged` vec4 rows of D named `names`. */
function stagedRows(names: string[], staged: number, dv: number): string {
  return names.map((n) => `var<workgroup> ${n}: array<vec4<f32>, ${staged * dv}>;`).join("\n");
}

/** Forward, tiled: bindings as `attentionForwardKernel`; one workgroup per query tile of a head. */
export function tiledForwardKernel(d: number, tiles: AttentionTiles, packed = false): string {
  const dv = d / 4, { rows, staged } = tiles;
  return `${PARAMS}
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;${documentsDecl(packed, 6)}
${stagedRows(["ks", "vs"], staged, dv)}
${tileHeader(rows, "p.h")}
  let qo = ((bb * p.t + ownc) * p.h + hh) * ${dv}u;
${regs(dv, "let", "q", (j) => `q[qo + ${j}u]`)}
${regs(dv, "var", "acc", () => "vec4<f32>()")}
  var m = -3.0e38;
  var l = 0.0;
  ${keyTileWalk(dv, rows, staged, packed, onlineSoftmaxStep(dv, stagedK, stagedV))}
  if (live) {
    let inv = 1.0 / l;
${each(dv, (j) => `out[qo + ${j}u] = acc${j} * inv;`)}
    lse[(bb * p.h + hh) * p.t + own] = m + log(l);
  }
}
`;
}

/** Backward dQ, tiled: bindings as `attentionDqKernel`; one workgroup per query tile of a head. */
export function tiledDqKernel(d: number, tiles: AttentionTiles, packed = false): string {
  const dv = d / 4, { rows, staged } = tiles;
  return `${PARAMS}
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<vec4<f32>>;${documentsDecl(packed, 8)}
${stagedRows(["ks", "vs"], staged, dv)}
${tileHeader(rows, "p.h")}
  let qo = ((bb * p.t + ownc) * p.h + hh) * ${dv}u;
  let row = (bb * p.h + hh) * p.t + ownc;
  let lrow = lse[row];
  let drow = delta[row];
${regs(dv, "let", "q", (j) => `q[qo + ${j}u]`)}
${regs(dv, "let", "do", (j) => `dout[qo + ${j}u]`)}
${regs(dv, "var", "acc", () => "vec4<f32>()")}
  ${keyTileWalk(dv, rows, staged, packed, dqStep(dv, stagedK, stagedV))}
  if (live) {
${each(dv, (j) => `dq[qo + ${j}u] = acc${j} * p.scale;`)}
  }
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
  const tileEnd = packed
    ? `${uniformDocument(1, "rLast")}\n  let qEnd = tileBound;`
    : "let qEnd = p.t;";
  const ownEnd = packed ? "documents[2u * (bb * p.t + ownc) + 1u]" : "p.t";
  return `${PARAMS}
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;
@group(0) @binding(7) var<storage, read_write> dk: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> dv: array<vec4<f32>>;${documentsDecl(packed, 9)}
${stagedRows(["qs", "dos"], staged, dv)}
var<workgroup> lses: array<f32, ${staged}>;
var<workgroup> deltas: array<f32, ${staged}>;
${tileHeader(rows, "p.kvh")}
  let g = hh;
  let rep = p.h / p.kvh;
  let ko = ((bb * p.t + ownc) * p.kvh + g) * ${dv}u;
  ${tileEnd}
  let ownEnd = select(0u, ${ownEnd}, live);
${regs(dv, "let", "k", (j) => `k[ko + ${j}u]`)}
${regs(dv, "let", "v", (j) => `v[ko + ${j}u]`)}
${regs(dv, "var", "dka", () => "vec4<f32>()")}
${regs(dv, "var", "dva", () => "vec4<f32>()")}
  for (var qh = g * rep; qh < (g + 1u) * rep; qh++) {
    for (var q0 = r0; q0 < qEnd; q0 += ${staged}u) {
      let qn = min(${staged}u, qEnd - q0);
      workgroupBarrier();
      for (var x = li; x < qn * ${dv}u; x += ${rows}u) {
        let src = ((bb * p.t + q0 + x / ${dv}u) * p.h + qh) * ${dv}u + x % ${dv}u;
        qs[x] = q[src];
        dos[x] = dout[src];
      }
      for (var x = li; x < qn; x += ${rows}u) {
        let src = (bb * p.h + qh) * p.t + q0 + x;
        lses[x] = lse[src];
        deltas[x] = delta[src];
      }
      workgroupBarrier();
      let tEnd = min(q0 + qn, ownEnd);
      for (var tq = max(q0, own); tq < tEnd; tq++) {
        let qo = (tq - q0) * ${dv}u;
        ${
    dkvStep(dv, {
      qRow: (j) => `qs[qo + ${j}u]`,
      doRow: (j) => `dos[qo + ${j}u]`,
      lseAt: "lses[tq - q0]",
      deltaAt: "deltas[tq - q0]",
    })
  }
      }
    }
  }
  if (live) {
${each(dv, (j) => `dk[ko + ${j}u] = dka${j} * p.scale;`)}
${each(dv, (j) => `dv[ko + ${j}u] = dva${j};`)}
  }
}
`;
}
