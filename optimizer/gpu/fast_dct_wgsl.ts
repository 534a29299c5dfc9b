/**
 * WGSL of the fast blocked DCT (sender side): the straight-line plans of optimizer/fast_dct.ts
 * unrolled into two kernels, one transform line per invocation and no workgroup memory (CPU
 * adapters run each invocation as a SIMD lane; a GPU runs many lines at once).
 *
 * - `fast-dct-cols` (length n1): invocation `(br, col)` transforms column `col` of block row
 *   `br` of X (`rows × cols`, parameter-shaped) into T (same shape):
 *   `T[br·n1 + u][col] = Σ_i C₁[u][i]·X[br·n1 + i][col]`; lanes read neighbouring columns.
 * - `fast-dct-rows` (length n2): invocation `(r, bc)` transforms row `r` of chunk column `bc`
 *   of T into chunk-major Y: `Y[c][u·n2 + v] = Σ_j T[r][bc·n2 + j]·C₂[v][j]`,
 *   `c = (r / n1)·colChunks + bc`, `u = r mod n1`.
 *
 * Both read the `Spec` uniform of distro_wgsl.ts. The length is baked into the code, so there
 * is one pipeline per length.
 *
 * @module
 */

import { type FastDctPlan, fastDctPlan, fastIdctPlan } from "../fast_dct.ts";
import { FEEDBACK_HYPER, SPEC_WGSL, specAndMain } from "./distro_wgsl.ts";
import { main1d } from "../../shaders/mod.ts";

/** An f32 literal that parses back to exactly `Math.fround(c)`. */
function f32Literal(c: number): string {
  const f = Math.fround(c);
  if (!Number.isFinite(f)) throw new RangeError(`f32Literal: ${c} is not a finite f32`);
  return `${f.toPrecision(9)}f`;
}

/**
 * Straight-line WGSL of `plan`: statements defining `v0..v(n-1)` from `load(i)` and then every
 * operation; returns the statements and the variable name of each output coefficient.
 */
export function fastDctStatements(
  plan: FastDctPlan,
  load: (i: number) => string,
  prefix = "v",
): { code: string; outputs: string[] } {
  const lines: string[] = [];
  const v = (k: number) => `${prefix}${k}`;
  for (let i = 0; i < plan.n; i++) lines.push(`  let ${v(i)} = ${load(i)};`);
  for (const o of plan.ops) {
    const rhs = o.op === "mul"
      ? `${v(o.a)} * ${f32Literal(o.c)}`
      : `${v(o.a)} ${o.op === "add" ? "+" : "-"} ${v(o.b)}`;
    lines.push(`  let ${v(o.dst)} = ${rhs};`);
  }
  return { code: lines.join("\n"), outputs: plan.outputs.map(v) };
}

/**
 * Fast DCT down the columns of each block row (length n1 = `n`). Bindings: 0 spec, 1 X, 2 T (w).
 * Dispatch `(rows / n1)·cols` invocations.
 */
export function fastDctColsKernel(wg: number, n: number): string {
  const { code, outputs } = fastDctStatements(fastDctPlan(n), (i) => `x[base + ${i}u * cols]`);
  const stores = outputs.map((v, u) => `  t[base + ${u}u * cols] = ${v};`).join("\n");
  return /* wgsl */ `${SPEC_WGSL}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> t: array<f32>;
${main1d(wg)}
  let cols = spec.cols;
  if (i >= (spec.rows / ${n}u) * cols) { return; }
  let br = i / cols;
  let base = br * ${n}u * cols + (i - br * cols);
${code}
${stores}
}
`;
}

/**
 * Error feedback, momentum and the column pass of the fast DCT in one walk down each chunk
 * column (length n1 = `n`), for power-of-two chunks:
 * `δ = decay·(δ − sent) + lr·clip·g`, then `T[br·n1 + u][col] = Σ_i C₁[u][i]·δ[br·n1 + i][col]`.
 *
 * `sent` is this column of the client's previous own result decoded to parameter space. Column j of
 * a chunk's `C₁ᵀ·W·C₂` is `C₁ᵀ·z` with `z[u] = Σ_{e: u_e = u} w_e·C₂[v_e][j]`: the k entries fill a
 * private `z` (C₂ read once per entry), and the fast inverse DCT turns it into the whole column,
 * about 12 operations per value whatever k is. The per-chunk kernel (chunk_wgsl.ts) instead gathers
 * basis values for every entry and row block, and streams δ and g in a chunk-shaped walk that
 * llvmpipe runs slower than this kernel's column walk (docs/benchmarks.md, "Behind the code"),
 * which also reads δ once for both jobs. Like the whole forward DCT this is sender-private: the
 * fast inverse rounds differently from the reference's dense decode, within the same bounds.
 *
 * Each invocation walks `width` neighbouring columns as one vector (`cols` and n2 multiples of
 * `width`). Bindings: 0 spec, 1 hyper (`FEEDBACK_HYPER`), 2 g, 3 δ (rw), 4 f32 basis, 5 own
 * indices, 6 own values, 7 T (w); g, δ and T as `array<vecW<f32>>`. Dispatch
 * `(rows / n1)·cols / width` invocations.
 */
export function fastFeedbackColsKernel(
  wg: number,
  n: number,
  width: 1 | 2 | 4 = 1,
  table = 0,
): string {
  const { spec, main } = specAndMain(wg, table);
  const type = width === 1 ? "f32" : `vec${width}<f32>`;
  const inverse = fastDctStatements(fastIdctPlan(n), (u) => `z[${u}]`, "s");
  const forward = fastDctStatements(fastDctPlan(n), (i) => `d${i}`);
  const update = Array.from(
    { length: n },
    (_, i) =>
      `  let d${i} = hyper.decay * (delta[base + ${i}u * stride] - ${inverse.outputs[i]}) +
    lr * grads[base + ${i}u * stride];
  delta[base + ${i}u * stride] = d${i};`,
  ).join("\n");
  const stores = forward.outputs.map((v, u) => `  t[base + ${u}u * stride] = ${v};`).join("\n");
  const basis = width === 1
    ? "fbasis[o]"
    : `${type}(${Array.from({ length: width }, (_, k) => `fbasis[o + ${k}u]`).join(", ")})`;
  return /* wgsl */ `${spec}
${FEEDBACK_HYPER}
@group(0) @binding(2) var<storage, read> grads: array<${type}>;
@group(0) @binding(3) var<storage, read_write> delta: array<${type}>;
@group(0) @binding(4) var<storage, read> fbasis: array<f32>;
@group(0) @binding(5) var<storage, read> own_idx: array<u32>;
@group(0) @binding(6) var<storage, read> own_val: array<f32>;
@group(0) @binding(7) var<storage, read_write> t: array<${type}>;
${main}
  let stride = spec.cols / ${width}u;
  if (i >= (spec.rows / ${n}u) * stride) { return; }
  let br = i / stride;
  let col = (i - br * stride) * ${width}u;
  let base = ${table === 0 ? "" : `spec._s1 / ${width}u + `}br * ${n}u * stride + col / ${width}u;
  let bc = col / spec.n2;
  let j = col - bc * spec.n2;
  let scale = clip_scale();
  let lr = hyper.lr * scale;
  var z: array<${type}, ${n}>;
  if (hyper.has_prev != 0u) {
    let e0 = spec.entry + (br * spec.col_chunks + bc) * spec.k;
    for (var e = e0; e < e0 + spec.k; e++) {
      let uv = split_uv(own_idx[e]);
      let o = spec.fb2 + uv.y * spec.n2 + j;
      z[uv.x] += own_val[e] * ${basis};
    }
  }
${inverse.code}
${update}
${forward.code}
${stores}
}
`;
}

/**
 * Fast DCT along each chunk row (length n2 = `n`) into chunk-major coefficients. Bindings: 0 spec,
 * 1 T, 2 Y (w); both `array<vec4<f32>>` when n is a multiple of 4 (each invocation's row is
 * contiguous, and on llvmpipe 16 vec4 loads and stores beat 64 scalar ones: docs/benchmarks.md,
 * "Behind the code"). With `rowMax` (n a multiple of 4), binding 3 (u32, w) also receives the
 * largest top-k key (`bits & 0x7fffffff`) of each coefficient row, at `c·n1 + u`, for
 * distro_wgsl.ts `topkRowsKernel`. Dispatch `rows·colChunks` invocations.
 */
export function fastDctRowsKernel(wg: number, n: number, rowMax = false, table = 0): string {
  const { spec, main } = specAndMain(wg, table);
  // A table dispatch's block: T and Y at its element `_s1`, its row maxima at word `_s2`.
  const at = table === 0 ? "dst" : "(spec._s1 + dst)";
  const vec = n % 4 === 0;
  if (rowMax && !vec) {
    throw new RangeError(`fastDctRowsKernel: row maxima need n % 4 = 0, not ${n}`);
  }
  const loads: string[] = [];
  if (vec) { for (let q = 0; q < n / 4; q++) loads.push(`  let a${q} = t[src / 4u + ${q}u];`); }
  const { code, outputs } = fastDctStatements(
    fastDctPlan(n),
    (j) => (vec ? `a${j >> 2}[${j & 3}]` : `t[src + ${j}u]`),
  );
  const stores = vec
    ? Array.from(
      { length: n / 4 },
      (_, q) =>
        `  let o${q} = vec4<f32>(${outputs.slice(4 * q, 4 * q + 4).join(", ")});
  y[${at} / 4u + ${q}u] = o${q};`,
    )
    : outputs.map((v, u) => `  y[${at} + ${u}u] = ${v};`);
  if (rowMax) {
    const key = (q: number) => `(bitcast<vec4<u32>>(o${q}) & vec4<u32>(0x7fffffffu))`;
    stores.push(`  var m = ${key(0)};`);
    for (let q = 1; q < n / 4; q++) stores.push(`  m = max(m, ${key(q)});`);
    const row = table === 0 ? `dst / ${n}u` : `spec._s2 + dst / ${n}u`;
    stores.push(`  row_max[${row}] = max(max(m.x, m.y), max(m.z, m.w));`);
  }
  const type = vec ? "vec4<f32>" : "f32";
  return /* wgsl */ `${spec}
@group(0) @binding(1) var<storage, read> t: array<${type}>;
@group(0) @binding(2) var<storage, read_write> y: array<${type}>;
${rowMax ? "@group(0) @binding(3) var<storage, read_write> row_max: array<u32>;" : ""}
${main}
  let cc = spec.col_chunks;
  if (i >= spec.rows * cc) { return; }
  let r = i / cc;
  let bc = i - r * cc;
  let br = r / spec.n1;
  let src = ${table === 0 ? "" : "spec._s1 + "}r * spec.cols + bc * ${n}u;
  let dst = (br * cc + bc) * spec.totalk + (r - br * spec.n1) * ${n}u;
${loads.join("\n")}
${code}
${stores.join("\n")}
}
`;
}
