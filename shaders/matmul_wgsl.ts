/**
 * WGSL generators for the matmul family. Tiling parameters vary per adapter, so sources are
 * generated with the loops fully unrolled over each invocation's output block.
 *
 * Every kernel shares one uniform block, `MatmulParams` (8 u32 words):
 * `m, n, k, accumulate (0 overwrite, 1 add, 2 chain), alpha (f32 bits), strideA, strideB, strideC`
 * (strides in elements, one matrix per `z` workgroup index), and the bindings `1: a`, `2: b`, `3: c` (read-write).
 *
 * Layouts (row-major): `nn` C[M,N] = A[M,K]·B[K,N]; `nt` C = A[M,K]·B[N,K]ᵀ;
 * `tn` C = A[K,M]ᵀ·B[K,N]. The result is `alpha·(A·B) + (accumulate ? C : 0)`.
 *
 * @module
 */

import { main1d } from "./kernel.ts";
import { splitSumWgsl } from "./split_sum_wgsl.ts";
import type { MatmulTiling } from "./profile.ts";

/** Operand layout: which of A and B are stored transposed. */
export type MatmulLayout = "nn" | "nt" | "tn";

/**
 * Storage type of the operands A and B (C is always f32). f16 needs `shader-f16`; bf16 (bfloat16:
 * the top half of an f32) has no WGSL type and is stored as u32 words of two elements, element
 * `2i` in the low half, widened by a shift or mask (`bitcast<f32>(w << 16u)`).
 */
export type MatmulInputType = "f32" | "f16" | "bf16";

/** Storage types of A and B: one for both, or each its own (f16 weights times f32 gradients). */
export type MatmulOperandTypes = MatmulInputType | {
  readonly a: MatmulInputType;
  readonly b: MatmulInputType;
};

/** The storage types of A and B. */
export function operandTypes(
  types: MatmulOperandTypes,
): { a: MatmulInputType; b: MatmulInputType } {
  return typeof types === "string" ? { a: types, b: types } : { a: types.a, b: types.b };
}

/**
 * WGSL spellings for operand binding `name` of a storage type: the array element types of scalar
 * (`t`) and vec4 (`t4`) bindings, and loads of element `i` widened to f32 (`s`: scalar binding,
 * `v`: vec4 `i` of a vec4 binding).
 */
function spell(type: MatmulInputType, name: string) {
  switch (type) {
    case "f32":
      return {
        t: "f32",
        t4: "vec4<f32>",
        s: (i: string) => `${name}[${i}]`,
        v: (i: string) => `${name}[${i}]`,
      };
    case "f16":
      return {
        t: "f16",
        t4: "vec4<f16>",
        s: (i: string) => `f32(${name}[${i}])`,
        v: (i: string) => `vec4<f32>(${name}[${i}])`,
      };
    case "bf16":
      // Four bf16 are two words (vec2<u32>), so vec4 indices are the same as f32's.
      return {
        t: "u32",
        t4: "vec2<u32>",
        s: (i: string) => `bf16_at(${name}[(${i}) / 2u], ${i})`,
        v: (i: string) => `bf16x4(${name}[${i}])`,
      };
  }
}

/** Widening of bf16 words: element `i` of its pair in `w`, and the four elements of `w`. */
const BF16_LOADS = `fn bf16_at(w: u32, i: u32) -> f32 {
  return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u));
}
fn bf16x4(w: vec2<u32>) -> vec4<f32> {
  return bitcast<vec4<f32>>(vec4<u32>(w.x << 16u, w.x & 0xffff0000u, w.y << 16u, w.y & 0xffff0000u));
}
`;

/** Spellings of A (`a`) and B (`b`), and the header: `enable f16;`, the bf16 loads. */
function elem(types: MatmulOperandTypes) {
  const t = operandTypes(types);
  const any = (x: MatmulInputType) => t.a === x || t.b === x;
  return {
    a: spell(t.a, "a"),
    b: spell(t.b, "b"),
    header: (any("f16") ? "enable f16;\n" : "") + (any("bf16") ? BF16_LOADS : ""),
  };
}

const PARAMS = `struct MatmulParams {
  m: u32, n: u32, k: u32, accumulate: u32,
  alpha: f32, stride_a: u32, stride_b: u32, stride_c: u32,
}
@group(0) @binding(0) var<uniform> p: MatmulParams;`;

/**
 * Uniform block of the split-K tiled kernel: `m, n, k, slices, slice_k, strideA, strideB` and a
 * pad word (C's stride is the reduction's business).
 */
const SPLIT_PARAMS = `struct MatmulParams {
  m: u32, n: u32, k: u32, slices: u32,
  slice_k: u32, stride_a: u32, stride_b: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> p: MatmulParams;`;

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/**
 * The final write of one output: scale, add the old value when accumulating (1), store. In chain
 * mode (2) the accumulator already started from the old value and alpha is 1.
 */
function storeExpr(target: string, value: string): string {
  return `{ var v = ${value} * p.alpha; if (p.accumulate == 1u) { v += ${target}; } ${target} = v; }`;
}

/** Chain mode (2): start `acc` from the output it will be stored to (`index` is clamped). */
function chainStart(acc: string, index: string): string {
  return `if (p.accumulate == 2u) { ${acc} = c[${index}]; }`;
}

/**
 * Register-blocked kernel for `nn` and `tn` with `n % 4 == 0`: each invocation holds
 * `rows × cols` outputs as `rows × cols/4` vec4 accumulators, reading B and C as vec4 rows and A
 * as scalars broadcast across the vec4.
 */
export function outerKernel(
  layout: "nn" | "tn",
  t: MatmulTiling,
  type: MatmulOperandTypes = "f32",
): string {
  const e = elem(type);
  const tm = t.rows, tnv = t.cols / 4;
  const [wx, wy] = t.workgroup;
  const I = range(tm), J = range(tnv);
  const rowOff = layout === "nn" ? (i: number) => `min(r0 + ${i}u, p.m - 1u) * p.k` : (
    i: number,
  ) => `min(r0 + ${i}u, p.m - 1u)`;
  const aLoad = layout === "nn"
    ? (i: number) => e.a.s(`ab + ra${i} + kk`)
    : (i: number) => e.a.s(`ak + ra${i}`);
  return `${e.header}${PARAMS}
@group(0) @binding(1) var<storage, read> a: array<${e.a.t}>;
@group(0) @binding(2) var<storage, read> b: array<${e.b.t4}>;
@group(0) @binding(3) var<storage, read_write> c: array<vec4<f32>>;

@compute @workgroup_size(${wx}, ${wy})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let nv = p.n / 4u;
  let c0 = g.x * ${tnv}u;
  let r0 = g.y * ${tm}u;
  if (c0 >= nv || r0 >= p.m) { return; }
  let ab = g.z * p.stride_a;
  let bb = g.z * (p.stride_b / 4u);
  let cb = g.z * (p.stride_c / 4u);
${I.map((i) => `  let ra${i} = ${rowOff(i)};`).join("\n")}
${J.map((j) => `  let cc${j} = min(c0 + ${j}u, nv - 1u);`).join("\n")}
${I.flatMap((i) => J.map((j) => `  var acc${i}_${j} = vec4<f32>();`)).join("\n")}
${
    I.flatMap((i) =>
      J.map((j) =>
        `  ${chainStart(`acc${i}_${j}`, `cb + min(r0 + ${i}u, p.m - 1u) * nv + cc${j}`)}`
      )
    ).join("\n")
  }
  for (var kk = 0u; kk < p.k; kk++) {
    let bk = bb + kk * nv;
    let ak = ab + kk * p.m;
${J.map((j) => `    let b${j} = ${e.b.v(`bk + cc${j}`)};`).join("\n")}
${
    I.map((i) =>
      `    { let s = vec4<f32>(${aLoad(i)});\n` +
      J.map((j) => `      acc${i}_${j} = fma(s, b${j}, acc${i}_${j});`).join("\n") + "\n    }"
    ).join("\n")
  }
  }
${
    I.map((i) =>
      `  if (r0 + ${i}u < p.m) {\n    let o = cb + (r0 + ${i}u) * nv + c0;\n` +
      J.map((j) => `    if (c0 + ${j}u < nv) ${storeExpr(`c[o + ${j}u]`, `acc${i}_${j}`)}`)
        .join("\n") +
      "\n  }"
    ).join("\n")
  }
}
`;
}

/**
 * Register-blocked kernel for `nt` with `k % 4 == 0`: each invocation holds `rows × cols/4`
 * vec4 partial dot products along K, reduced once at the end.
 */
export function dotKernel(t: MatmulTiling, type: MatmulOperandTypes = "f32"): string {
  const e = elem(type);
  const tm = t.rows, tn = t.cols / 4;
  const [wx, wy] = t.workgroup;
  const I = range(tm), J = range(tn);
  return `${e.header}${PARAMS}
@group(0) @binding(1) var<storage, read> a: array<${e.a.t4}>;
@group(0) @binding(2) var<storage, read> b: array<${e.b.t4}>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

@compute @workgroup_size(${wx}, ${wy})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let kv = p.k / 4u;
  let c0 = g.x * ${tn}u;
  let r0 = g.y * ${tm}u;
  if (c0 >= p.n || r0 >= p.m) { return; }
  let ab = g.z * (p.stride_a / 4u);
  let bb = g.z * (p.stride_b / 4u);
  let cb = g.z * p.stride_c;
${I.map((i) => `  let ra${i} = ab + min(r0 + ${i}u, p.m - 1u) * kv;`).join("\n")}
${J.map((j) => `  let rb${j} = bb + min(c0 + ${j}u, p.n - 1u) * kv;`).join("\n")}
${I.flatMap((i) => J.map((j) => `  var acc${i}_${j} = vec4<f32>();`)).join("\n")}
  for (var kk = 0u; kk < kv; kk++) {
${J.map((j) => `    let b${j} = ${e.b.v(`rb${j} + kk`)};`).join("\n")}
${
    I.map((i) =>
      `    { let s = ${e.a.v(`ra${i} + kk`)};\n` +
      J.map((j) => `      acc${i}_${j} = fma(s, b${j}, acc${i}_${j});`).join("\n") + "\n    }"
    ).join("\n")
  }
  }
${
    I.map((i) =>
      `  if (r0 + ${i}u < p.m) {\n    let o = cb + (r0 + ${i}u) * p.n + c0;\n` +
      J.map((j) =>
        `    if (c0 + ${j}u < p.n) ${
          storeExpr(`c[o + ${j}u]`, `dot(acc${i}_${j}, vec4<f32>(1.0))`)
        }`
      ).join("\n") + "\n  }"
    ).join("\n")
  }
}
`;
}

function aIndex(layout: MatmulLayout, row: string, k: string): string {
  return layout === "tn" ? `${k} * p.m + ${row}` : `${row} * p.k + ${k}`;
}

function bIndex(layout: MatmulLayout, k: string, col: string): string {
  return layout === "nt" ? `${col} * p.k + ${k}` : `${k} * p.n + ${col}`;
}

/**
 * Scalar register-blocked kernel for any shape and layout (no divisibility needed): each
 * invocation computes `rows × 4` outputs, reading scalars with clamped indices.
 */
export function scalarKernel(
  layout: MatmulLayout,
  t: MatmulTiling,
  type: MatmulOperandTypes = "f32",
): string {
  const e = elem(type);
  const tm = t.rows, tn = 4;
  const [wx, wy] = t.workgroup;
  const I = range(tm), J = range(tn);
  return `${e.header}${PARAMS}
@group(0) @binding(1) var<storage, read> a: array<${e.a.t}>;
@group(0) @binding(2) var<storage, read> b: array<${e.b.t}>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

@compute @workgroup_size(${wx}, ${wy})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let c0 = g.x * ${tn}u;
  let r0 = g.y * ${tm}u;
  if (c0 >= p.n || r0 >= p.m) { return; }
  let ab = g.z * p.stride_a;
  let bb = g.z * p.stride_b;
  let cb = g.z * p.stride_c;
${I.map((i) => `  let ri${i} = min(r0 + ${i}u, p.m - 1u);`).join("\n")}
${J.map((j) => `  let q${j} = min(c0 + ${j}u, p.n - 1u);`).join("\n")}
${I.flatMap((i) => J.map((j) => `  var acc${i}_${j} = 0.0;`)).join("\n")}
${
    I.flatMap((i) => J.map((j) => `  ${chainStart(`acc${i}_${j}`, `cb + ri${i} * p.n + q${j}`)}`))
      .join("\n")
  }
  for (var kk = 0u; kk < p.k; kk++) {
${J.map((j) => `    let b${j} = ${e.b.s(`bb + ${bIndex(layout, "kk", `q${j}`)}`)};`).join("\n")}
${
    I.map((i) =>
      `    { let s = ${e.a.s(`ab + ${aIndex(layout, `ri${i}`, "kk")}`)};\n` +
      J.map((j) => `      acc${i}_${j} = fma(s, b${j}, acc${i}_${j});`).join("\n") + "\n    }"
    ).join("\n")
  }
  }
${
    I.map((i) =>
      `  if (r0 + ${i}u < p.m) {\n    let o = cb + (r0 + ${i}u) * p.n + c0;\n` +
      J.map((j) => `    if (c0 + ${j}u < p.n) ${storeExpr(`c[o + ${j}u]`, `acc${i}_${j}`)}`)
        .join("\n") +
      "\n  }"
    ).join("\n")
  }
}
`;
}

/**
 * The start of a tiled kernel, up to its body: the uniforms and bindings, the workgroup memory
 * `shared` declares, the entry point, the tile's first row and column (`row0`, `col0`), which
 * matrices and K range workgroup `wid` sums (`ab`, `bb`, `k_lo`, `k_hi`) and where its outputs go
 * (`cb`); and how an output is stored: the plain sum into the partials with `split`, else scaled
 * and accumulated ({@link storeExpr}).
 */
function tiledPrologue(
  e: ReturnType<typeof elem>,
  t: MatmulTiling,
  split: boolean,
  shared: string,
  vec4Operands = false,
) {
  const [wx, wy] = t.workgroup;
  const bases = split
    ? `  let bz = wid.z / p.slices;
  let ab = bz * p.stride_a;
  let bb = bz * p.stride_b;
  let cb = wid.z * p.m * p.n;
  let k_lo = (wid.z % p.slices) * p.slice_k;
  let k_hi = min(k_lo + p.slice_k, p.k);`
    : `  let ab = wid.z * p.stride_a;
  let bb = wid.z * p.stride_b;
  let cb = wid.z * p.stride_c;
  let k_lo = 0u;
  let k_hi = p.k;`;
  const store = (target: string, value: string) =>
    split ? `${target} = ${value};` : storeExpr(target, value);
  const head = `${e.header}${split ? SPLIT_PARAMS : PARAMS}
@group(0) @binding(1) var<storage, read> a: array<${vec4Operands ? e.a.t4 : e.a.t}>;
@group(0) @binding(2) var<storage, read> b: array<${vec4Operands ? e.b.t4 : e.b.t}>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
${shared}

@compute @workgroup_size(${wx}, ${wy})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let row0 = wid.y * ${t.rows * wy}u;
  let col0 = wid.x * ${t.cols * wx}u;
${bases}`;
  return { head, store };
}

/**
 * Workgroup-tiled kernel for GPUs, any shape and layout: the workgroup stages a
 * `depth × (rows·wy)` slice of A and a `depth × (cols·wx)` slice of B in workgroup memory (zero
 * padded at the edges); invocation `(x, y)` owns outputs `(y + i·wy, x + j·wx)` of the tile, so
 * neighbouring invocations read neighbouring words.
 *
 * With `split` (split-K, shaders/split_k.ts) the uniform block is {@link SPLIT_PARAMS} and
 * workgroup `z = batch entry · slices + slice` sums only K indices
 * `[slice · slice_k, min((slice + 1) · slice_k, k))`, from 0 and in K order as the unsplit kernel
 * does, and stores the plain sum into binding 3, the partials `[batch, slices, m, n]`: no alpha,
 * no accumulation ({@link splitReduceKernel} applies both).
 */
export function tiledKernel(
  layout: MatmulLayout,
  t: MatmulTiling,
  type: MatmulOperandTypes = "f32",
  split = false,
): string {
  const e = elem(type);
  const [wx, wy] = t.workgroup;
  const tm = t.rows, tn = t.cols, bk = t.depth;
  const bm = tm * wy, bn = tn * wx, threads = wx * wy;
  const I = range(tm), J = range(tn);
  // Coalesced staging: consecutive invocations read consecutive words of the operand.
  const aMajorK = layout !== "tn";
  const bMajorK = layout === "nt";
  const shared = `var<workgroup> As: array<f32, ${bk * bm}>;
var<workgroup> Bs: array<f32, ${bk * bn}>;`;
  const { head, store } = tiledPrologue(e, t, split, shared);
  return `${head}
${I.flatMap((i) => J.map((j) => `  var acc${i}_${j} = 0.0;`)).join("\n")}
${
    split ? "" : I.flatMap((i) =>
      J.map((j) =>
        `  ${
          chainStart(
            `acc${i}_${j}`,
            `cb + min(row0 + lid.y + ${i * wy}u, p.m - 1u) * p.n + ` +
              `min(col0 + lid.x + ${j * wx}u, p.n - 1u)`,
          )
        }`
      )
    ).join("\n")
  }
  for (var k0 = k_lo; k0 < k_hi; k0 += ${bk}u) {
    for (var e = li; e < ${bm * bk}u; e += ${threads}u) {
      let mm = ${aMajorK ? `e / ${bk}u` : `e % ${bm}u`};
      let kk = ${aMajorK ? `e % ${bk}u` : `e / ${bm}u`};
      let r = row0 + mm;
      let k = k0 + kk;
      var v = 0.0;
      if (r < p.m && k < k_hi) { v = ${e.a.s(`ab + ${aIndex(layout, "r", "k")}`)}; }
      As[kk * ${bm}u + mm] = v;
    }
    for (var e = li; e < ${bn * bk}u; e += ${threads}u) {
      let nn = ${bMajorK ? `e / ${bk}u` : `e % ${bn}u`};
      let kk = ${bMajorK ? `e % ${bk}u` : `e / ${bn}u`};
      let q = col0 + nn;
      let k = k0 + kk;
      var v = 0.0;
      if (q < p.n && k < k_hi) { v = ${e.b.s(`bb + ${bIndex(layout, "k", "q")}`)}; }
      Bs[kk * ${bn}u + nn] = v;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < ${bk}u; kk++) {
${I.map((i) => `      let a${i} = As[kk * ${bm}u + lid.y + ${i * wy}u];`).join("\n")}
${J.map((j) => `      let b${j} = Bs[kk * ${bn}u + lid.x + ${j * wx}u];`).join("\n")}
${
    I.flatMap((i) => J.map((j) => `      acc${i}_${j} = fma(a${i}, b${j}, acc${i}_${j});`)).join(
      "\n",
    )
  }
    }
    workgroupBarrier();
  }
${
    I.map((i) =>
      `  { let r = row0 + lid.y + ${i * wy}u;\n    if (r < p.m) {\n` +
      J.map((j) =>
        `      { let q = col0 + lid.x + ${j * wx}u; if (q < p.n) { ${
          store("c[cb + r * p.n + q]", `acc${i}_${j}`)
        } } }`
      ).join("\n") + "\n    }\n  }"
    ).join("\n")
  }
}
`;
}

/**
 * Workgroup-tiled kernel with 4×4 output blocks (strategy `tiled-vec4`, GPUs), any shape and
 * layout, the same bits as {@link tiledKernel}: each output still adds its products one at a time
 * in K order with `fma`. It differs in how the work reaches the FMAs:
 * - invocation `(x, y)` owns `rows/4 × cols/4` blocks of 4×4 outputs, block `(g, h)` at tile rows
 *   `4·(g·wy + y)…+3` and columns `4·(h·wx + x)…+3`, so one step of K reads `rows/4 + cols/4`
 *   vec4 from workgroup memory for `rows·cols` FMAs (the scalar tiled kernel reads
 *   `rows + cols` scalars) and neighbouring invocations read neighbouring vec4;
 * - the next K slice is loaded from storage into registers while the current one is multiplied
 *   (register double buffering), so memory latency hides behind the FMAs;
 * - a staged row whose consecutive invocations write along K is padded by one vec4, so their
 *   writes fall in different banks;
 * - with `buffers: 2` (double buffering) workgroup memory holds two slices: the prefetched slice
 *   is staged into the buffer not being read, after the FMAs of the current one, so one barrier
 *   per slice publishes the next slice and frees the current buffer at once (with one buffer,
 *   one barrier publishes the slice and a second keeps it until every invocation has read it).
 * - with `unrollK` the K loop over a staged slice is written out `depth` times, each block's
 *   workgroup-memory offsets folded into constants;
 * - with `kRows` workgroup memory is one array per staged K row (`As[k][i]`, not `As[k·row + i]`):
 *   naga clamps every dynamic workgroup index (wgpu's `Restrict` bounds policy), and with one flat
 *   index each read's clamp differs by its K step, so it costs integer work per read; with a
 *   constant K row (unrolled) the only dynamic index, the invocation's own, is the same for every
 *   K step, so its clamp is computed once and each read's offset can fold into the load;
 * - with `vec4Loads` (`depth` a multiple of 4) each fetch from storage is one vec4 of four elements
 *   along the operand's stored-contiguous axis, the operands bound as vec4 arrays: for calls whose
 *   rows, strides and K ends are whole vec4 (`loadsFor` in shaders/matmul.ts picks the scalar
 *   fetch for the others), so a vec4 is all in range or all out and one check guards it. Four
 *   elements along a tile row or column are staged as one vec4 write; four along K as one lane of
 *   four staged rows.
 * Neither changes a staged value or the order of any FMA. `rows` and `cols` are multiples of 4.
 * With `split` it sums one K slice into the partials, as {@link tiledKernel} does.
 */
export function tiledVec4Kernel(
  layout: MatmulLayout,
  t: MatmulTiling,
  type: MatmulOperandTypes = "f32",
  split = false,
): string {
  const e = elem(type);
  const [wx, wy] = t.workgroup;
  const bk = t.depth, bm = t.rows * wy, bn = t.cols * wx, threads = wx * wy;
  const G = range(t.rows / 4), H = range(t.cols / 4), R = range(4), L = ["x", "y", "z", "w"];
  // Coalesced staging: consecutive invocations read consecutive words of the operand.
  const aMajorK = layout !== "tn";
  const bMajorK = layout === "nt";
  // vec4 per staged K row, padded by one where consecutive invocations write along K.
  const aRow = bm / 4 + (aMajorK ? 1 : 0), bRow = bn / 4 + (bMajorK ? 1 : 0);
  const g4 = t.vec4Loads === true;
  // Elements one fetch brings: four consecutive along the stored-contiguous axis with g4.
  const per = g4 ? 4 : 1;
  const aLoads = range(Math.ceil((bm * bk) / per / threads));
  const bLoads = range(Math.ceil((bn * bk) / per / threads));
  const whole = (count: number) => count % threads === 0;
  const double = (t.buffers ?? 1) === 2;
  const kRows = t.kRows === true;
  // vec4 per buffer; with two, `ra`/`rb` is the offset of the one being read.
  const aSlice = bk * aRow, bSlice = bk * bRow;
  const shared = kRows
    ? `var<workgroup> As: array<array<vec4<f32>, ${aRow}>, ${bk}>;
var<workgroup> Bs: array<array<vec4<f32>, ${bRow}>, ${bk}>;`
    : `var<workgroup> As: array<vec4<f32>, ${aSlice * (double ? 2 : 1)}>;
var<workgroup> Bs: array<vec4<f32>, ${bSlice * (double ? 2 : 1)}>;`;
  // The vec4 at K row `k` (an expression), position `i` of staged array `s` (`row` vec4 a row).
  const cell = (s: string, base: string, k: string, row: number, i: string) =>
    kRows ? `${s}[${k}][${i}]` : `${s}[${base}${k} * ${row}u + ${i}]`;
  const { head, store } = tiledPrologue(e, t, split, shared, g4);
  // Fetch `li + i·threads` of a staged slice: its tile row (`mm`) or column and its K index (with
  // g4, those of the first of its four elements, which run along K where `majorK`).
  const slot = (i: number, extent: number, majorK: boolean, name: string, k: string) => {
    const idx = `(li + ${i * threads}u)`;
    if (g4) {
      const along = majorK ? bk / 4 : extent / 4;
      return `  let ${name}${i} = ${majorK ? `${idx} / ${along}u` : `(${idx} % ${along}u) * 4u`};
  let ${k}${i} = ${majorK ? `(${idx} % ${along}u) * 4u` : `${idx} / ${along}u`};`;
    }
    return `  let ${name}${i} = ${majorK ? `${idx} / ${bk}u` : `${idx} % ${extent}u`};
  let ${k}${i} = ${majorK ? `${idx} % ${bk}u` : `${idx} / ${extent}u`};`;
  };
  // Fetches per staged slice.
  const total = (extent: number) => (extent * bk) / per;
  const zero = g4 ? "vec4<f32>()" : "0.0";
  // With g4 the element index of a fetch's first element is a multiple of 4 (loadsFor in
  // shaders/matmul.ts runs it only then), and its four elements are all in range or all out.
  const at = (index: string) => g4 ? `(${index}) / 4u` : index;
  const aFetch = (i: number) => {
    const guard = whole(total(bm)) ? "" : ` && li + ${i * threads}u < ${total(bm)}u`;
    const load = g4 ? e.a.v : e.a.s;
    return `    { let r = row0 + am${i}; let k = k1 + ak${i}; pa${i} = ${zero};
      if (r < p.m && k < k_hi${guard}) { pa${i} = ${
      load(at(`ab + ${aIndex(layout, "r", "k")}`))
    }; } }`;
  };
  const bFetch = (i: number) => {
    const guard = whole(total(bn)) ? "" : ` && li + ${i * threads}u < ${total(bn)}u`;
    const load = g4 ? e.b.v : e.b.s;
    return `    { let q = col0 + bq${i}; let k = k1 + bkk${i}; pb${i} = ${zero};
      if (q < p.n && k < k_hi${guard}) { pb${i} = ${
      load(at(`bb + ${bIndex(layout, "k", "q")}`))
    }; } }`;
  };
  const stage = (
    s: string,
    i: number,
    row: number,
    pos: string,
    kk: string,
    v: string,
    count: number,
    majorK: boolean,
    base = "",
  ) => {
    let write: string;
    if (!g4) {
      write = `${cell(s, base, `${kk}${i}`, row, `${pos}${i} / 4u`)}[${pos}${i} % 4u] = ${v}${i};`;
    } else if (majorK) {
      // Four K rows of one tile row or column: one lane of each row's vec4.
      write = R.map((c) =>
        `${
          cell(s, base, `(${kk}${i} + ${c}u)`, row, `${pos}${i} / 4u`)
        }[${pos}${i} % 4u] = ${v}${i}.${L[c]};`
      ).join(" ");
    } else {
      // Four tile rows or columns of one K row, starting on a multiple of 4: one whole vec4.
      write = `${cell(s, base, `${kk}${i}`, row, `${pos}${i} / 4u`)} = ${v}${i};`;
    }
    return whole(count) ? `    ${write}` : `    if (li + ${i * threads}u < ${count}u) { ${write} }`;
  };
  const acc = (g: number, r: number, h: number) => `acc${g}_${r}_${h}`;
  const row = (g: number, r: number) => `row0 + ${4 * g * wy}u + lid.y * 4u + ${r}u`;
  const col = (h: number, l: number) => `col0 + ${4 * h * wx}u + lid.x * 4u + ${l}u`;
  const accs = G.flatMap((g) => R.flatMap((r) => H.map((h) => ({ g, r, h }))));
  const chain = split
    ? []
    : accs.map(({ g, r, h }) =>
      `  if (p.accumulate == 2u) { let o = cb + min(${row(g, r)}, p.m - 1u) * p.n; ${
        acc(g, r, h)
      } = vec4<f32>(${R.map((l) => `c[o + min(${col(h, l)}, p.n - 1u)]`).join(", ")}); }`
    );
  const stageAll = (aBase = "", bBase = "") =>
    [
      ...aLoads.map((i) => stage("As", i, aRow, "am", "ak", "pa", total(bm), aMajorK, aBase)),
      ...bLoads.map((i) => stage("Bs", i, bRow, "bq", "bkk", "pb", total(bn), bMajorK, bBase)),
    ].join("\n");
  const fetchAll = [...aLoads.map(aFetch), ...bLoads.map(bFetch)].join("\n");
  const fmas = accs.map(({ g, r, h }) =>
    `      ${acc(g, r, h)} = fma(vec4<f32>(a${g}.${L[r]}), b${h}, ${acc(g, r, h)});`
  ).join("\n");
  // The FMAs of one staged slice, reading A and B at offsets `ra`, `rb` ("" with one buffer).
  const rolled = (ra: string, rb: string) =>
    `    for (var kk = 0u; kk < ${bk}u; kk++) {
${G.map((g) => `      let a${g} = ${cell("As", ra, "kk", aRow, `${g * wy}u + lid.y`)};`).join("\n")}
${H.map((h) => `      let b${h} = ${cell("Bs", rb, "kk", bRow, `${h * wx}u + lid.x`)};`).join("\n")}
${fmas}
    }`;
  // The same, one block per K step with its offsets folded into constants (`unrollK`).
  const unrolled = (ra: string, rb: string) =>
    range(bk).map((kk) =>
      `    {
${
        G.map((g) =>
          `      let a${g} = ${
            kRows ? `As[${kk}u][${g * wy}u + lid.y]` : `As[${ra}${kk * aRow + g * wy}u + lid.y]`
          };`
        ).join("\n")
      }
${
        H.map((h) =>
          `      let b${h} = ${
            kRows ? `Bs[${kk}u][${h * wx}u + lid.x]` : `Bs[${rb}${kk * bRow + h * wx}u + lid.x]`
          };`
        ).join("\n")
      }
${fmas}
    }`
    ).join("\n");
  const multiply = t.unrollK ? unrolled : rolled;
  // One buffer: stage, barrier, prefetch, multiply, barrier (the slice stays until all read it).
  const single = `  for (var k0 = k_lo; k0 < k_hi; k0 += ${bk}u) {
${stageAll()}
    workgroupBarrier();
    k1 = k0 + ${bk}u;
${fetchAll}
${multiply("", "")}
    workgroupBarrier();
  }`;
  // Two buffers: slice k0 sits in the buffer at `ra`/`rb`; slice k0 + depth is fetched, then
  // staged into the other buffer after the FMAs, which the previous barrier freed (every
  // invocation passed it after reading that buffer's last slice). The barrier then publishes it.
  const twin = `${stageAll()}
  workgroupBarrier();
  var ra = 0u;
  var rb = 0u;
  for (var k0 = k_lo; k0 < k_hi; k0 += ${bk}u) {
    k1 = k0 + ${bk}u;
${fetchAll}
${multiply("ra + ", "rb + ")}
    let wa = ${aSlice}u - ra;
    let wb = ${bSlice}u - rb;
${stageAll("wa + ", "wb + ")}
    workgroupBarrier();
    ra = wa;
    rb = wb;
  }`;
  return `${head}
${aLoads.map((i) => slot(i, bm, aMajorK, "am", "ak")).join("\n")}
${bLoads.map((i) => slot(i, bn, bMajorK, "bq", "bkk")).join("\n")}
${aLoads.map((i) => `  var pa${i} = ${zero};`).join("\n")}
${bLoads.map((i) => `  var pb${i} = ${zero};`).join("\n")}
${accs.map(({ g, r, h }) => `  var ${acc(g, r, h)} = vec4<f32>();`).join("\n")}
${chain.join("\n")}
  var k1 = k_lo;
${fetchAll}
${double ? twin : single}
${
    G.flatMap((g) =>
      R.map((r) =>
        `  { let r = ${row(g, r)};\n    if (r < p.m) {\n` +
        H.flatMap((h) =>
          R.map((l) =>
            `      { let q = ${col(h, l)}; if (q < p.n) { ${
              store("c[cb + r * p.n + q]", `${acc(g, r, h)}.${L[l]}`)
            } } }`
          )
        ).join("\n") + "\n    }\n  }"
      )
    ).join("\n")
  }
}
`;
}

/**
 * Second half of split-K: `c = alpha·(Σ_s partials[s]) (+ c)`, one invocation per output, over a
 * `grid1d` grid of `workgroupSize`-wide workgroups. Uniform `count (m·n), slices, accumulate (0
 * overwrite, 1 add), alpha (f32 bits), strideC, batch` and two pad words; bindings
 * `1: partials [batch, slices, m, n]`, `2: c`. Each output adds its partials in slice order,
 * 0, 1, …, S−1, starting from slice 0's: a fixed order, so the same bits on every run.
 */
export function splitReduceKernel(workgroupSize: number): string {
  return `struct ReduceParams {
  count: u32, slices: u32, accumulate: u32, alpha: f32,
  stride_c: u32, batch: u32, pad0: u32, pad1: u32,
}
@group(0) @binding(0) var<uniform> p: ReduceParams;
@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;

${main1d(workgroupSize)}
  if (i >= p.count * p.batch) { return; }
  let bz = i / p.count;
  let e = i % p.count;
  let base = bz * p.slices * p.count + e;
  ${
    splitSumWgsl({
      sum: "sum",
      partials: "partials",
      first: "base",
      stride: "p.count",
      slices: "p.slices",
    })
  }
  ${storeExpr("c[bz * p.stride_c + e]", "sum")}
}
`;
}

/** Most products one {@link splitReduceTableKernel} dispatch reduces (its table's entries). */
export const SPLIT_REDUCE_TABLE_ENTRIES = 32;

/**
 * {@link splitReduceKernel} for several split products in one dispatch: workgroup row `z` of the
 * grid reduces product `z` of a uniform table of {@link SPLIT_REDUCE_TABLE_ENTRIES} entries, two
 * vec4 of u32 each, `(partials offset, c offset, count (m·n), slices)` and `(accumulate, alpha
 * (f32 bits), strideC, batch)`, offsets in elements of the two bindings `1: partials`, `2: c`.
 * Each output is computed by the same expressions as the single reduce's (the sum is
 * {@link splitSumWgsl}'s), so the same bits.
 */
export function splitReduceTableKernel(workgroupSize: number): string {
  return `@group(0) @binding(0) var<uniform> table: array<vec4<u32>, ${
    2 * SPLIT_REDUCE_TABLE_ENTRIES
  }>;
@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;

@compute @workgroup_size(${workgroupSize})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let i = (wid.x + wid.y * nwg.x) * ${workgroupSize}u + li;
  let h = table[2u * wid.z];
  let g = table[2u * wid.z + 1u];
  let p = ReduceEntry(h.z, h.w, g.x, bitcast<f32>(g.y), g.z, g.w);
  if (i >= p.count * p.batch) { return; }
  let bz = i / p.count;
  let e = i % p.count;
  let base = h.x + bz * p.slices * p.count + e;
  ${
    splitSumWgsl({
      sum: "sum",
      partials: "partials",
      first: "base",
      stride: "p.count",
      slices: "p.slices",
    })
  }
  ${storeExpr("c[h.y + bz * p.stride_c + e]", "sum")}
}

struct ReduceEntry {
  count: u32, slices: u32, accumulate: u32, alpha: f32, stride_c: u32, batch: u32,
}
`;
}

/**
 * Batched transpose of `[rows, cols]` matrices (both multiples of 4) in 4×4 blocks of vec4:
 * uniform `rows, cols, strideIn, strideOut` (elements), bindings `1: src`, `2: dst` `[cols, rows]`.
 * The CPU profile runs `nt` as this transpose of B followed by the `nn` outer kernel, which is
 * about 1.4× faster on llvmpipe than dot products along K.
 */
export function transposeKernel(
  workgroup: readonly [number, number],
  type: MatmulInputType = "f32",
): string {
  const e = spell(type, "src");
  const [wx, wy] = workgroup;
  const rows = [0, 1, 2, 3];
  const lanes = ["x", "y", "z", "w"];
  // Output row i of the block gathers lane i of the four input rows. bf16 vec4s are two words:
  // lane i is half i % 2 of word i / 2, and the gathered lanes are packed back in pairs.
  const half = (r: number, i: number) => {
    const w = `r${r}.${i < 2 ? "x" : "y"}`;
    return i % 2 === 0 ? `(${w} & 0xffffu)` : `(${w} >> 16u)`;
  };
  const gather = (l: string, i: number) =>
    type === "bf16"
      ? `vec2<u32>(${half(0, i)} | (${half(1, i)} << 16u), ${half(2, i)} | (${half(3, i)} << 16u))`
      : `${e.t4}(r0.${l}, r1.${l}, r2.${l}, r3.${l})`;
  return `${
    type === "f16" ? "enable f16;\n" : ""
  }struct TransposeParams { rows: u32, cols: u32, stride_in: u32, stride_out: u32 }
@group(0) @binding(0) var<uniform> p: TransposeParams;
@group(0) @binding(1) var<storage, read> src: array<${e.t4}>;
@group(0) @binding(2) var<storage, read_write> dst: array<${e.t4}>;

@compute @workgroup_size(${wx}, ${wy})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let cv = p.cols / 4u;
  let rv = p.rows / 4u;
  if (g.x >= cv || g.y >= rv) { return; }
  let sb = g.z * (p.stride_in / 4u);
  let db = g.z * (p.stride_out / 4u);
${rows.map((r) => `  let r${r} = src[sb + (g.y * 4u + ${r}u) * cv + g.x];`).join("\n")}
${lanes.map((l, i) => `  dst[db + (g.x * 4u + ${i}u) * rv + g.y] = ${gather(l, i)};`).join("\n")}
}
`;
}

/**
 * Register-blocked kernel that reads both operands as vec4 (all layouts; CPU adapters). On
 * llvmpipe every load whose address differs between invocations is a loop over the SIMD lanes,
 * one scalar load per lane, but one iteration of that loop fetches all four components of a vec4:
 * a vec4 load costs far less than four scalar loads, so loads, not FMAs, bound the kernel and
 * both operands are read four elements at a time. Per four steps of K an invocation loads
 * `rows + cols` vec4 and issues `4·rows·cols` FMAs:
 * - A: `nn`/`nt` a vec4 along K of each row (`k % 4 == 0`); `tn` a vec4 along M (`m % 4 == 0`,
 *   `rows % 4 == 0`);
 * - B: `nn`/`tn` a vec4 along N of each K row; `nt` a vec4 along K of each column
 *   (`k % 4 == 0`);
 * - C: vec4 rows (`n % 4 == 0`).
 * Each output's accumulator takes its products one at a time in K order (`fma`), as `outer` and
 * `scalar` do, so the variants give the same bits.
 */
export function vec4Kernel(
  layout: MatmulLayout,
  t: MatmulTiling,
  type: MatmulOperandTypes = "f32",
): string {
  const e = elem(type);
  const tm = t.rows, tnv = t.cols / 4;
  const [wx, wy] = t.workgroup;
  const I = range(tm), J = range(tnv), T = range(4), L = ["x", "y", "z", "w"];
  const kStep = layout === "tn" ? 1 : 4;
  // Loads of one step of the K loop, and the scalar `a(i, t)` / vec4 `b(j, t)` of K index kk + t.
  let loads: string[];
  let aAt: (i: number, t: number) => string;
  let bAt: (j: number, t: number) => string;
  let setup: string[];
  let stepLoads: (t: number) => string[] = () => [];
  if (layout === "tn") {
    // One K index per step: A[k, m] gives rows as vec4 lanes, B[k, n] columns as vec4 lanes.
    setup = range(tm / 4).map((q) => `  let ra${q} = min(r0 / 4u + ${q}u, mv - 1u);`);
    loads = [
      ...range(tm / 4).map((q) => `let a${q} = ${e.a.v(`ab + kk * mv + ra${q}`)};`),
      ...J.map((j) => `let b${j}_0 = ${e.b.v(`bb + kk * nv + cc${j}`)};`),
    ];
    aAt = (i) => `a${Math.floor(i / 4)}.${L[i % 4]}`;
    bAt = (j) => `b${j}_0`;
  } else {
    setup = I.map((i) => `  let ra${i} = ab + min(r0 + ${i}u, p.m - 1u) * kv;`);
    loads = I.map((i) => `let a${i} = ${e.a.v(`ra${i} + kk / 4u`)};`);
    aAt = (i, t) => `a${i}.${L[t]}`;
    if (layout === "nn") {
      // Loaded just before the FMAs of their K index: fewer values live at once.
      stepLoads = (t) =>
        J.map((j) => `let b${j}_${t} = ${e.b.v(`bb + (kk + ${t}u) * nv + cc${j}`)};`);
      bAt = (j, t) => `b${j}_${t}`;
    } else {
      // nt: B[n, k], one vec4 along K per output column q = 4·cc + l.
      setup.push(
        ...J.flatMap((j) =>
          T.map((l) => `  let rb${j}_${l} = bb + min(cc${j} * 4u + ${l}u, p.n - 1u) * kv;`)
        ),
      );
      loads.push(
        ...J.flatMap((j) => T.map((l) => `let q${j}_${l} = ${e.b.v(`rb${j}_${l} + kk / 4u`)};`)),
      );
      bAt = (j, t) => `vec4<f32>(${T.map((l) => `q${j}_${l}.${L[t]}`).join(", ")})`;
    }
  }
  const steps = layout === "tn" ? [0] : T;
  return `${e.header}${PARAMS}
@group(0) @binding(1) var<storage, read> a: array<${e.a.t4}>;
@group(0) @binding(2) var<storage, read> b: array<${e.b.t4}>;
@group(0) @binding(3) var<storage, read_write> c: array<vec4<f32>>;

@compute @workgroup_size(${wx}, ${wy})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let nv = p.n / 4u;
  let kv = p.k / 4u;
  let mv = p.m / 4u;
  let c0 = g.x * ${tnv}u;
  let r0 = g.y * ${tm}u;
  if (c0 >= nv || r0 >= p.m) { return; }
  let ab = g.z * (p.stride_a / 4u);
  let bb = g.z * (p.stride_b / 4u);
  let cb = g.z * (p.stride_c / 4u);
${J.map((j) => `  let cc${j} = min(c0 + ${j}u, nv - 1u);`).join("\n")}
${setup.join("\n")}
${I.flatMap((i) => J.map((j) => `  var acc${i}_${j} = vec4<f32>();`)).join("\n")}
${
    I.flatMap((i) =>
      J.map((j) =>
        `  ${chainStart(`acc${i}_${j}`, `cb + min(r0 + ${i}u, p.m - 1u) * nv + cc${j}`)}`
      )
    ).join("\n")
  }
  for (var kk = 0u; kk < p.k; kk += ${kStep}u) {
${loads.map((l) => `    ${l}`).join("\n")}
${
    steps.flatMap((s) => [
      ...stepLoads(s).map((l) => `    ${l}`),
      ...I.flatMap((i) =>
        J.map((j) => `    acc${i}_${j} = fma(vec4<f32>(${aAt(i, s)}), ${bAt(j, s)}, acc${i}_${j});`)
      ),
    ]).join("\n")
  }
  }
${
    I.map((i) =>
      `  if (r0 + ${i}u < p.m) {\n    let o = cb + (r0 + ${i}u) * nv + c0;\n` +
      J.map((j) => `    if (c0 + ${j}u < nv) ${storeExpr(`c[o + ${j}u]`, `acc${i}_${j}`)}`)
        .join("\n") +
      "\n  }"
    ).join("\n")
  }
}
`;
}
