/**
 * WGSL of the per-chunk decode kernels: the sender's error feedback (`δ −= decode(own result)`,
 * momentum, weight decay) and the consensus apply (`θ −= lr·sign(X)`, X the exact integer decode
 * of exact.ts behind a float filter). Both sum k-sparse chunks of DCT coefficients back to
 * parameter space, `Σ_e w_e·C₁[u_e][i]·C₂[v_e][j]`.
 *
 * One workgroup per chunk, `n2/4` invocations, each owning 4 consecutive columns of the chunk
 * and walking its rows `rows` at a time. The chunk's entries, their `(u, v)` and the row basis
 * values `C₁[u][i]` then depend only on the workgroup, so adapters load them once per
 * workgroup (CPU adapters: scalar loads instead of per-lane gathers); only `C₂[v][j..j+3]`
 * differs per invocation. Per entry and row block that is one vec4 load for `4·rows` elements.
 *
 * Both read the `Spec` uniform of distro_wgsl.ts; n2 (a multiple of 4, at most 256) and `rows`
 * (dividing n1) are baked in. Dispatch one workgroup per chunk ({@link chunkGrid}).
 *
 * @module
 */

import { grid1d } from "../../shaders/kernel.ts";
import { SPEC_WGSL } from "./distro_wgsl.ts";

/** Rows per block for chunk height `n1`: 8, 4, 2 or 1, the largest dividing it. */
export function chunkRows(n1: number): number {
  return [8, 4, 2, 1].find((r) => n1 % r === 0)!;
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

/** Workgroup grid of a per-chunk kernel: one workgroup per chunk. */
export function chunkGrid(chunks: number): [number, number] {
  return grid1d(chunks);
}

function check(n2: number, rows: number): void {
  if (!hasChunkKernels(n2)) throw new RangeError(`per-chunk kernels: bad chunk width ${n2}`);
  if (![1, 2, 4, 8].includes(rows)) throw new RangeError(`per-chunk kernels: bad rows ${rows}`);
}

/** `line(r)` for every row r of a block (rows are unrolled: no private arrays). */
function unroll(rows: number, line: (r: number) => string): string {
  return Array.from({ length: rows }, (_, r) => line(r)).join("\n");
}

/** Entry point: `c` (chunk), `j0` (first column in the chunk), `base4` (vec4 index of row 0). */
function chunkMain(n2: number): string {
  return `@compute @workgroup_size(${n2 / 4})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let c = wid.x + wid.y * nwg.x;
  if (c >= spec.chunks) { return; }
  let br = c / spec.col_chunks;
  let j0 = li * 4u;
  let cols4 = spec.cols / 4u;
  let base4 = (br * spec.n1 * spec.cols + (c - br * spec.col_chunks) * ${n2}u) / 4u + li;`;
}

/**
 * Error feedback, momentum and weight decay, per chunk:
 * `δ = decay·(δ − Σ_e val_e·C₁[u_e][i]·C₂[v_e][j]) + lr·clip·g; θ = θ·wdFactor` over the
 * client's previous own result (k entries per chunk at `entry + c·k`, skipped when
 * `has_prev = 0`). Bindings: 0 spec, 1 hyper `{lr, wd_factor, decay, max_norm, has_prev}`,
 * 2 grad sum of squares `[1]`, 3 θ (vec4, rw), 4 g (vec4), 5 δ (vec4, rw), 6 f32 basis,
 * 7 own indices, 8 own values.
 */
export function chunkFeedbackKernel(n2: number, rows: number): string {
  check(n2, rows);
  return /* wgsl */ `${SPEC_WGSL}
struct Hyper { lr: f32, wd_factor: f32, decay: f32, max_norm: f32, has_prev: u32 };
@group(0) @binding(1) var<storage, read> hyper: Hyper;
@group(0) @binding(2) var<storage, read> grad_sumsq: array<f32>;
@group(0) @binding(3) var<storage, read_write> theta: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> grads: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> delta: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> fbasis: array<f32>;
@group(0) @binding(7) var<storage, read> own_idx: array<u32>;
@group(0) @binding(8) var<storage, read> own_val: array<f32>;
${chunkMain(n2)}
  var scale = 1.0;
  if (hyper.max_norm > 0.0) {
    scale = min(1.0, hyper.max_norm / (sqrt(grad_sumsq[0]) + 1e-6));
  }
  let e0 = spec.entry + c * spec.k;
  let e1 = select(e0, e0 + spec.k, hyper.has_prev != 0u);
  for (var rb = 0u; rb < spec.n1; rb += ${rows}u) {
${unroll(rows, (r) => `    var s${r} = vec4<f32>(0.0);`)}
    for (var e = e0; e < e1; e++) {
      let uv = split_uv(own_idx[e]);
      let w = own_val[e];
      let o = spec.fb2 + uv.y * spec.n2 + j0;
      let b = vec4<f32>(fbasis[o], fbasis[o + 1u], fbasis[o + 2u], fbasis[o + 3u]);
      let a = spec.fb1 + uv.x * spec.n1 + rb;
${unroll(rows, (r) => `      s${r} += (w * fbasis[a + ${r}u]) * b;`)}
    }
${
    unroll(rows, (r) =>
      `    let at${r} = base4 + (rb + ${r}u) * cols4;
    delta[at${r}] = hyper.decay * (delta[at${r}] - s${r}) + hyper.lr * (scale * grads[at${r}]);
    theta[at${r}] = theta[at${r}] * hyper.wd_factor;`)
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
 * its sign is X's. A row block with any `|X_f32| ≤ T` is recomputed exactly with the 64-bit
 * integer emulation of distro_wgsl.ts `applyVec4Kernel`: the update is bit-identical to
 * exact.ts `updateSigns` on every adapter.
 *
 * An invocation loops at most `(2·n1/rows + 1)·E` times ({@link chunkApplyIterations}); Mesa's
 * llvmpipe silently stops an invocation's loops after {@link MAX_LOOP_ITERATIONS} in all, so
 * callers take the one-pass integer kernel where the count could exceed it.
 *
 * Entries of chunk c: `[meta.entry + c·k, +k)` when `meta.stride_k` is set (own result), else
 * `[offsets[meta.offsets + c], offsets[meta.offsets + c + 1])`. Bindings: 0 spec, 1 hyper
 * `{lr}`, 2 meta `[param]{offsets, entry, stride_k, _}`, 3 θ (vec4, rw), 4 fixed basis (i32),
 * 5 indices, 6 q (i32), 7 offsets, 8 fixed basis as f32 (same offsets).
 */
export function chunkApplyKernel(n2: number, rows: number): string {
  check(n2, rows);
  return /* wgsl */ `${SPEC_WGSL}
struct Meta { offsets: u32, entry: u32, stride_k: u32, _p: u32 };
@group(0) @binding(1) var<storage, read> hyper: array<f32>;
@group(0) @binding(2) var<storage, read> metas: array<Meta>;
@group(0) @binding(3) var<storage, read_write> theta: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> qbasis: array<i32>;
@group(0) @binding(5) var<storage, read> idx: array<u32>;
@group(0) @binding(6) var<storage, read> qv: array<i32>;
@group(0) @binding(7) var<storage, read> offsets: array<u32>;
@group(0) @binding(8) var<storage, read> fixedf: array<f32>;

${chunkMain(n2)}
  let m = metas[spec.param];
  var start: u32;
  var end: u32;
  if (m.stride_k != 0u) {
    start = m.entry + c * m.stride_k;
    end = start + m.stride_k;
  } else {
    start = offsets[m.offsets + c];
    end = offsets[m.offsets + c + 1u];
  }
  var sum_abs = 0u;
  for (var e = start; e < end; e++) { sum_abs += u32(abs(qv[e])); }
  let bound = vec4<f32>((f32(sum_abs) * spec.qm12) * (f32(end - start + 3u) * ${2 ** -23}));
  let lr = hyper[0];
  // Blocks whose sign the filter cannot certify: bit rb / rows, done exactly after the loop
  // (llvmpipe pays for a large divergent branch even when no lane takes it).
  var uncertain = 0u;
  for (var rb = 0u; rb < spec.n1; rb += ${rows}u) {
${unroll(rows, (r) => `    var x${r} = vec4<f32>(0.0);`)}
    for (var e = start; e < end; e++) {
      let uv = split_uv(idx[e]);
      let qf = f32(qv[e]);
      let o = spec.qb2 + uv.y * spec.n2 + j0;
      let b = vec4<f32>(fixedf[o], fixedf[o + 1u], fixedf[o + 2u], fixedf[o + 3u]);
      let a = spec.qb1 + uv.x * spec.n1 + rb;
${unroll(rows, (r) => `      x${r} += (qf * fixedf[a + ${r}u]) * b;`)}
    }
    let unsure = ${unroll(rows, (r) => `any(abs(x${r}) <= bound)`).replaceAll("\n", " || ")};
    uncertain |= select(0u, 1u << (rb / ${rows}u), unsure);
${
    unroll(rows, (r) =>
      `    let at${r} = base4 + (rb + ${r}u) * cols4;
    theta[at${r}] = select(theta[at${r}] - lr * sign(x${r}), theta[at${r}], unsure);`)
  }
  }
  for (var rb = 0u; uncertain != 0u && rb < spec.n1; rb += ${rows}u) {
    if ((uncertain & (1u << (rb / ${rows}u))) == 0u) { continue; }
    // Exact signs of the block: 64-bit two's complement sums of exactly split i32 products
    // (|Q₁Q₂| ≤ 2^28 = ph·2^16 + pl, |q·pl| < 2^31, |q·ph| ≤ 2^27).
${
    unroll(rows, (r) =>
      `    var lo${r} = vec4<u32>(0u);
    var hi${r} = vec4<i32>(0);`)
  }
    for (var e = start; e < end; e++) {
      let uv = split_uv(idx[e]);
      let q = qv[e];
      let o = spec.qb2 + uv.y * spec.n2 + j0;
      let b = vec4<i32>(qbasis[o], qbasis[o + 1u], qbasis[o + 2u], qbasis[o + 3u]);
      let a = spec.qb1 + uv.x * spec.n1 + rb;
${
    unroll(rows, (r) =>
      `      let p${r} = qbasis[a + ${r}u] * b;
      let low${r} = q * (p${r} & vec4<i32>(0xffff));
      let high${r} = q * (p${r} >> vec4<u32>(16u));
      let l${r} = bitcast<vec4<u32>>(low${r});
      let m${r} = lo${r} + l${r};
      let h${r} = bitcast<vec4<u32>>(high${r}) << vec4<u32>(16u);
      let n${r} = m${r} + h${r};
      hi${r} += (low${r} >> vec4<u32>(31u)) + vec4<i32>(m${r} < l${r}) +
        (high${r} >> vec4<u32>(16u)) + vec4<i32>(n${r} < h${r});
      lo${r} = n${r};`)
  }
    }
${
    unroll(rows, (r) =>
      `    let pos${r} = (hi${r} > vec4<i32>(0)) | ((hi${r} == vec4<i32>(0)) & (lo${r} != vec4<u32>(0u)));
    let at${r} = base4 + (rb + ${r}u) * cols4;
    theta[at${r}] = theta[at${r}] - lr * select(vec4<f32>(pos${r}), vec4<f32>(-1.0), hi${r} < vec4<i32>(0));`)
  }
  }
}
`;
}
