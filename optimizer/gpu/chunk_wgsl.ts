/**
 * WGSL of the per-chunk decode kernels: the sender's error feedback (`δ −= decode(own result)`,
 * momentum, weight decay) and the consensus apply (`θ −= lr·sign(X)`, X the exact integer decode
 * of exact.ts behind a float filter). Both sum k-sparse chunks of DCT coefficients back to
 * parameter space, `Σ_e w_e·C₁[u_e][i]·C₂[v_e][j]`.
 *
 * One workgroup per chunk, `n2/width` invocations, each owning `width` (8 or 4) consecutive columns
 * of the chunk as one or two vec4 and walking its rows `rows` at a time. The chunk's entries, their
 * `(u, v)` and the row basis values `C₁[u][i]` depend only on the workgroup, so a GPU loads them
 * once per workgroup; only `C₂[v][j..j+width)` differs per invocation. On llvmpipe, which gathers
 * every load per lane, the cost is per entry and row block, so wide blocks pay: 8 columns × 16 rows
 * beat 4 × 16, which beat 4 × 8 (docs/benchmarks.md, "Behind the code").
 *
 * Both read the `Spec` uniform of distro_wgsl.ts; n2 (a multiple of 4, at most 256), `rows`
 * (dividing n1) and `width` (dividing n2) are baked in. Dispatch one workgroup per chunk
 * ({@link chunkGrid}).
 *
 * @module
 */

import {
  aggregateBase,
  applyBindings,
  FEEDBACK_HYPER,
  SPEC_WGSL,
  TABLE_ROW,
  tableSpecWgsl,
} from "./distro_wgsl.ts";
import { grid1d } from "../../shaders/mod.ts";

/** Rows per block for chunk height `n1`: 16, 8, 4, 2 or 1, the largest dividing it. */
export function chunkRows(n1: number): number {
  return [16, 8, 4, 2, 1].find((r) => n1 % r === 0)!;
}

/** Whether chunks of width `n2` take the per-chunk kernels (a multiple of 4, at most 256). */
export function hasChunkKernels(n2: number): boolean {
  return n2 % 4 === 0 && n2 >= 4 && n2 <= 256;
}

/**
 * Loop iterations one invocation may run, in all, on Mesa's llvmpipe (its guard against
 * endless loops, `LP_MAX_TGSI_LOOP_ITERATIONS`, counts every loop of the invocation together
 * and ends them silently past this).
 */
export const MAX_LOOP_ITERATIONS = 65535;

/**
 * Worst-case loop iterations of {@link chunkApplyKernel} with `entries` entries per chunk
 * (`Infinity` when the chunk has more than 32 row blocks: the kernel's block mask is one u32).
 */
export function chunkApplyIterations(n1: number, entries: number): number {
  const blocks = n1 / chunkRows(n1);
  return blocks > 32 ? Infinity : (2 * blocks + 1) * (entries + 1);
}

/** Columns per invocation for chunk width `n2` (a multiple of 4): 8 where it divides n2, else 4. */
export function chunkWidth(n2: number): ChunkWidth {
  return n2 % 8 === 0 ? 8 : 4;
}

/** Columns one invocation owns: one vec4 or two. */
export type ChunkWidth = 4 | 8;

/**
 * Chunks per workgroup for chunk width `n2`, columns per invocation `width` and the profile's
 * workgroup size `wg`: as many as fill `wg` invocations (at least 1). A chunk needs only `n2/width`
 * invocations (8 for 64-wide chunks); llvmpipe pays a fixed cost per workgroup (a flat pass is
 * slower in workgroups of 8 than of 64: docs/benchmarks.md, "Behind the code") and a GPU would
 * leave most of each warp idle, so several chunks share a workgroup.
 */
export function chunksPerWorkgroup(n2: number, width: ChunkWidth, wg: number): number {
  return Math.max(1, Math.floor(wg / (n2 / width)));
}

/** Workgroup grid of a per-chunk kernel: `group` chunks per workgroup. */
export function chunkGrid(chunks: number, group = 1): [number, number] {
  return grid1d(Math.ceil(chunks / group));
}

function check(n2: number, rows: number, width: number): void {
  if (!hasChunkKernels(n2)) throw new RangeError(`per-chunk kernels: bad chunk width ${n2}`);
  if ((width !== 4 && width !== 8) || n2 % width !== 0) {
    throw new RangeError(`per-chunk kernels: width ${width} does not divide ${n2}`);
  }
  if (![1, 2, 4, 8, 16].includes(rows)) throw new RangeError(`per-chunk kernels: bad rows ${rows}`);
}

/** `line(r, h)` for every row r of a block and vec4 half h of the lane (no private arrays). */
function unroll(rows: number, halves: number, line: (r: number, h: number) => string): string {
  const out: string[] = [];
  for (let r = 0; r < rows; r++) for (let h = 0; h < halves; h++) out.push(line(r, h));
  return out.join("\n");
}

/**
 * Row factors `w_r = scale·table[a + r]` for the rows of a block, from a `vec4` view of an f32
 * table (`a` is a multiple of 4 when `rows` is: tables start at multiples of 4, n1 is a multiple
 * of rows): one vec4 load per 4 rows, as CPU adapters gather every load lane by lane.
 */
function rowFactors(rows: number, table: string, scale: string): string {
  if (rows % 4 === 0) {
    const lines: string[] = [];
    for (let g = 0; g < rows / 4; g++) lines.push(`      let c${g} = ${table}[(a >> 2u) + ${g}u];`);
    for (let r = 0; r < rows; r++) {
      lines.push(`      let w${r} = ${scale} * c${r >> 2}[${r & 3}];`);
    }
    return lines.join("\n");
  }
  return unroll(
    rows,
    1,
    (r) => `      let w${r} = ${scale} * ${table}[(a + ${r}u) >> 2u][(a + ${r}u) & 3u];`,
  );
}

/**
 * Whether {@link chunkApplyKernel} reads the fixed-point basis packed two to a word
 * ({@link packBasis16}): for 8-column lanes and row blocks of 8 or 16, whose table reads start
 * at multiples of 8. llvmpipe gathers every load lane by lane, so halving the words the apply's
 * entry loop reads is what pays; the values, and so the sums, are the same.
 */
export function appliesPacked(rows: number, width: ChunkWidth): boolean {
  return width === 8 && rows % 8 === 0;
}

/**
 * Fixed-point basis values (|Q| <= 2^14, so each fits an i16) packed two to a u32 so that one
 * vec4 of words holds 8 consecutive values: word `k` of each group of 4 holds value `k` in its
 * low half and value `k + 4` in its high half, and the two halves unpack to two vec4 in order.
 * `table.length` must be a multiple of 8.
 */
export function packBasis16(table: Int32Array): Uint32Array {
  if (table.length % 8 !== 0) throw new RangeError(`packBasis16: ${table.length} values`);
  const out = new Uint32Array(table.length / 2);
  for (let g = 0; g < table.length; g += 8) {
    for (let k = 0; k < 4; k++) {
      const lo = table[g + k], hi = table[g + k + 4];
      if (Math.abs(lo) > 0x7fff || Math.abs(hi) > 0x7fff) {
        throw new RangeError(`packBasis16: value beyond 16 bits at ${g + k}`);
      }
      out[g / 2 + k] = ((lo & 0xffff) | (hi << 16)) >>> 0;
    }
  }
  return out;
}

/** Low and high i16 halves of a vec4 of packed words, as two exact vec4<f32>. */
function unpack16(p: string): [string, string] {
  return [
    `vec4<f32>(bitcast<vec4<i32>>(${p} << vec4<u32>(16u)) >> vec4<u32>(16u))`,
    `vec4<f32>(bitcast<vec4<i32>>(${p}) >> vec4<u32>(16u))`,
  ];
}

/** The lane's 8 column values `b0`, `b1` from one vec4 of packed words at value offset `o`. */
function packedColumns(): string {
  const [lo, hi] = unpack16("pb");
  return `      let pb = packed[o >> 3u];
      let b0 = ${lo};
      let b1 = ${hi};`;
}

/** Row factors `w_r = qf·Q₁[u][rb + r]` from `rows / 8` vec4 of packed words at offset `a`. */
function packedRowFactors(rows: number): string {
  const lines: string[] = [];
  for (let g = 0; g < rows / 8; g++) {
    const [lo, hi] = unpack16(`pr${g}`);
    lines.push(`      let pr${g} = packed[(a >> 3u) + ${g}u];`);
    lines.push(`      let rl${g} = ${lo};`, `      let rh${g} = ${hi};`);
  }
  for (let r = 0; r < rows; r++) {
    const g = r >> 3, k = r & 7;
    lines.push(`      let w${r} = qf * ${k < 4 ? "rl" : "rh"}${g}[${k & 3}];`);
  }
  return lines.join("\n");
}

/** 4 consecutive values of `arr` from index `o + 4h`, as `vec4<type>`. */
function load4(arr: string, type: string, o: string, h: number): string {
  const at = (d: number) => `${arr}[${o} + ${4 * h + d}u]`;
  return `vec4<${type}>(${at(0)}, ${at(1)}, ${at(2)}, ${at(3)})`;
}

/**
 * Entry point: `c` (chunk), `j0` (first column in the chunk), `base` (vec4 index of the lane's
 * first half in row 0 of the chunk), `stride` (one parameter row in vec4). With `table` rows (a
 * table dispatch: distro_wgsl.ts `tableSpecWgsl`) the workgroup first looks up its block, whose
 * chunks it counts from that block's first workgroup, and `base` starts at the block's element.
 */
function chunkMain(n2: number, width: ChunkWidth, group: number, table = 0): string {
  const lanes = n2 / width;
  const workgroup = table === 0 ? "(wid.x + wid.y * nwg.x)" : "tw";
  const first = table === 0 ? "" : "spec._s1 / 4u + ";
  return `@compute @workgroup_size(${group * lanes})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {${table === 0 ? "" : TABLE_ROW}
  let c = ${workgroup} * ${group}u + li / ${lanes}u;
  if (c >= spec.chunks) { return; }
  let br = c / spec.col_chunks;
  let j0 = (li % ${lanes}u) * ${width}u;
  let stride = spec.cols / 4u;
  let base = ${first}(br * spec.n1 * spec.cols + (c - br * spec.col_chunks) * ${n2}u + j0) / 4u;`;
}

/**
 * Error feedback and momentum, per chunk: `δ = decay·(δ − Σ_e val_e·C₁[u_e][i]·C₂[v_e][j]) +
 * lr·clip·g` over the client's previous own result (k entries per chunk at `entry + c·k`, skipped
 * when `has_prev = 0`). The weight decay of θ is a separate streaming pass (distro_wgsl.ts
 * `weightDecayKernel`): on llvmpipe the two θ streams cost more inside this kernel's chunk-shaped
 * walk than in a flat pass (docs/benchmarks.md, "Behind the code"). Bindings: 0 spec, 1 hyper
 * (distro_wgsl.ts `FEEDBACK_HYPER`), 2 g (vec4), 3 δ (vec4, rw), 4 f32 basis (vec4 view), 5 own
 * indices, 6 own values.
 */
export function chunkFeedbackKernel(
  n2: number,
  rows: number,
  width: ChunkWidth,
  group = 1,
): string {
  check(n2, rows, width);
  const H = width / 4;
  return /* wgsl */ `${SPEC_WGSL}
${FEEDBACK_HYPER}
@group(0) @binding(2) var<storage, read> grads: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> delta: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> fbasis: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> own_idx: array<u32>;
@group(0) @binding(6) var<storage, read> own_val: array<f32>;
${chunkMain(n2, width, group)}
  let scale = clip_scale();
  let e0 = spec.entry + c * spec.k;
  let e1 = select(e0, e0 + spec.k, hyper.has_prev != 0u);
  for (var rb = 0u; rb < spec.n1; rb += ${rows}u) {
${unroll(rows, H, (r, h) => `    var s${r}_${h} = vec4<f32>(0.0);`)}
    for (var e = e0; e < e1; e++) {
      let uv = split_uv(own_idx[e]);
      let w = own_val[e];
      let o = spec.fb2 + uv.y * spec.n2 + j0;
${unroll(1, H, (_, h) => `      let b${h} = fbasis[(o >> 2u) + ${h}u];`)}
      let a = spec.fb1 + uv.x * spec.n1 + rb;
${rowFactors(rows, "fbasis", "w")}
${unroll(rows, H, (r, h) => `      s${r}_${h} += w${r} * b${h};`)}
    }
${
    unroll(rows, H, (r, h) =>
      `    let at${r}_${h} = base + (rb + ${r}u) * stride + ${h}u;
    delta[at${r}_${h}] = hyper.decay * (delta[at${r}_${h}] - s${r}_${h}) +
      hyper.lr * (scale * grads[at${r}_${h}]);`)
  }
  }
}
`;
}

/**
 * Exact apply behind a float filter, per chunk: `θ −= lr·sign(X)`,
 * `X = Σ_e q_e·Q₁[u_e][i]·Q₂[v_e][j]` (exact.ts `decodeFixed`).
 *
 * X is summed in f32 from the fixed-point tables stored as f32 (integers below 2^15, exact),
 * and `S = Σ_e |q_e|` in u32. With E entries in the chunk and `qm12 ≥ max|Q₁|·max|Q₂|`,
 * `T = fl(fl(f32(S)·qm12)·(E+3)·2^-23) ≥ |X_f32 − X|` for every summation order, with or
 * without FMA contraction (docs/protocol.md, "DisTrO determinism"), so where `|X_f32| > T`
 * its sign is X's. A row block with any `|X_f32| ≤ T` is recomputed after the main loop with
 * the exact 64-bit integer emulation of distro_wgsl.ts `applyVec4Kernel` (inside the loop, the
 * large branch slowed llvmpipe down even when no lane took it): the update is bit-identical to
 * exact.ts `updateSigns` on every adapter.
 *
 * An invocation loops at most `(2·n1/rows + 1)·(E + 1)` times ({@link chunkApplyIterations});
 * Mesa's llvmpipe silently stops an invocation's loops after {@link MAX_LOOP_ITERATIONS} in
 * all, so callers take the one-pass integer kernel where the count could exceed it.
 *
 * Entries of chunk c: `[meta.entry + c·k, +k)` when `meta.stride_k` is set (own result), else
 * `[offsets[meta.offsets + c], offsets[meta.offsets + c + 1])`. Bindings: 0 spec, 1 hyper `{lr}`, 2
 * meta `[param]{offsets, entry, stride_k, _}`, 3 θ (vec4, rw), 4 fixed basis (i32), 5 indices, 6 q
 * (i32), 7 offsets, 8 fixed basis as f32 (same offsets, vec4 view), or as i16 pairs where {@link
 * appliesPacked} (a faster apply on llvmpipe: docs/benchmarks.md, "Behind the code").
 */
export function chunkApplyKernel(
  n2: number,
  rows: number,
  width: ChunkWidth,
  group = 1,
  table = 0,
): string {
  check(n2, rows, width);
  const aggBase = aggregateBase(table);
  const H = width / 4;
  const v4 = (t: string, x: string) => `vec4<${t}>(${x})`;
  const packed = appliesPacked(rows, width);
  const basis = packed ? "packed: array<vec4<u32>>" : "fixedf: array<vec4<f32>>";
  return /* wgsl */ `${table === 0 ? SPEC_WGSL : tableSpecWgsl(table)}
${applyBindings("vec4<f32>")}@group(0) @binding(8) var<storage, read> ${basis};
${chunkMain(n2, width, group, table)}
  let m = metas[spec.param];
  var start: u32;
  var end: u32;
  if (m.stride_k != 0u) {
    start = m.entry + c * m.stride_k;
    end = start + m.stride_k;
  } else {
    start = ${aggBase}offsets[m.offsets + c];
    end = ${aggBase}offsets[m.offsets + c + 1u];
  }
  var sum_abs = 0u;
  for (var e = start; e < end; e++) { sum_abs += u32(abs(qv[e])); }
  let bound = vec4<f32>((f32(sum_abs) * spec.qm12) * (f32(end - start + 3u) * ${2 ** -23}));
  let lr = hyper[0];
  // Blocks whose sign the filter cannot certify: bit rb / rows, done exactly after the loop.
  var uncertain = 0u;
  for (var rb = 0u; rb < spec.n1; rb += ${rows}u) {
${unroll(rows, H, (r, h) => `    var x${r}_${h} = vec4<f32>(0.0);`)}
    for (var e = start; e < end; e++) {
      let uv = split_uv(idx[e]);
      let qf = f32(qv[e]);
      let o = spec.qb2 + uv.y * spec.n2 + j0;
${packed ? packedColumns() : unroll(1, H, (_, h) => `      let b${h} = fixedf[(o >> 2u) + ${h}u];`)}
      let a = spec.qb1 + uv.x * spec.n1 + rb;
${packed ? packedRowFactors(rows) : rowFactors(rows, "fixedf", "qf")}
${unroll(rows, H, (r, h) => `      x${r}_${h} += w${r} * b${h};`)}
    }
    let unsure = ${
    unroll(rows, H, (r, h) => `any(abs(x${r}_${h}) <= bound)`).replaceAll("\n", " || ")
  };
    uncertain |= select(0u, 1u << (rb / ${rows}u), unsure);
${
    unroll(rows, H, (r, h) =>
      `    let at${r}_${h} = base + (rb + ${r}u) * stride + ${h}u;
    theta[at${r}_${h}] = select(theta[at${r}_${h}] - lr * sign(x${r}_${h}), theta[at${r}_${h}], unsure);`)
  }
  }
  for (var rb = 0u; uncertain != 0u && rb < spec.n1; rb += ${rows}u) {
    if ((uncertain & (1u << (rb / ${rows}u))) == 0u) { continue; }
    // Exact signs of the block: 64-bit two's complement sums of exactly split i32 products
    // (|Q₁Q₂| ≤ 2^28 = ph·2^16 + pl, |q·pl| < 2^31, |q·ph| ≤ 2^27).
${
    unroll(rows, H, (r, h) =>
      `    var lo${r}_${h} = vec4<u32>(0u);\n    var hi${r}_${h} = vec4<i32>(0);`)
  }
    for (var e = start; e < end; e++) {
      let uv = split_uv(idx[e]);
      let q = qv[e];
      let o = spec.qb2 + uv.y * spec.n2 + j0;
${unroll(1, H, (_, h) => `      let b${h} = ${load4("qbasis", "i32", "o", h)};`)}
      let a = spec.qb1 + uv.x * spec.n1 + rb;
${
    unroll(rows, H, (r, h) => {
      const x = `${r}_${h}`;
      return `      let p${x} = qbasis[a + ${r}u] * b${h};
      let low${x} = q * (p${x} & ${v4("i32", "0xffff")});
      let high${x} = q * (p${x} >> ${v4("u32", "16u")});
      let l${x} = bitcast<vec4<u32>>(low${x});
      let m${x} = lo${x} + l${x};
      let h${x} = bitcast<vec4<u32>>(high${x}) << ${v4("u32", "16u")};
      let n${x} = m${x} + h${x};
      hi${x} += (low${x} >> ${v4("u32", "31u")}) + vec4<i32>(m${x} < l${x}) +
        (high${x} >> ${v4("u32", "16u")}) + vec4<i32>(n${x} < h${x});
      lo${x} = n${x};`;
    })
  }
    }
${
    unroll(rows, H, (r, h) => {
      const x = `${r}_${h}`;
      return `    let pos${x} = (hi${x} > vec4<i32>(0)) | ((hi${x} == vec4<i32>(0)) & (lo${x} != vec4<u32>(0u)));
    let at${x} = base + (rb + ${r}u) * stride + ${h}u;
    theta[at${x}] = theta[at${x}] - lr * select(vec4<f32>(pos${x}), vec4<f32>(-1.0), hi${x} < vec4<i32>(0));`;
    })
  }
  }
}
`;
}
