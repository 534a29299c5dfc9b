/**
 * RMSNorm as in Hugging Face Llama: `y = x · rstd · w`, `rstd = 1 / sqrt(mean(x²) + eps)`.
 *
 * Shapes: x `[N, C]`, weight `[C]`, out `[N, C]`, rstd `[N]` (saved for the backward).
 *
 * Backward, with `dot = Σ_j dy_j·w_j·x_j` per row:
 * `dx_i = rstd·w_i·dy_i − (rstd³/C)·x_i·dot` and `dw_i += Σ_n dy[n, i]·x[n, i]·rstd[n]`.
 * CPU adapters (`rowReduction: "invocation"`) give y and dx one invocation per row and dw one per
 * column, each summing in order. GPUs (`"workgroup"`) give each row, and each column of dw, a
 * workgroup: its invocations stride over the row, then add their partial sums in a fixed tree. A
 * row per invocation left an H200 idle at the 1B's shapes (128 rows of 2048: one workgroup, each
 * invocation walking its row alone; 75% of the step). Every element's own arithmetic (the split
 * sum, the residual add, y, dx) is the same expression either way; only the row sums (mean of
 * squares, the backward's dot) add in another order, so the two differ in rstd's last bits and
 * what follows from it, and each always gives the same bits on one adapter. No atomics.
 *
 * @module
 */

import { f32Bits, type GpuRuntime, type TensorView } from "./gpu.ts";
import {
  bindTensors,
  dispatch,
  dispatch1d,
  grid1d,
  main1d,
  requireDims,
  requireLength,
  sumTreeWgsl,
} from "./kernel.ts";
import type { SplitPartials } from "./matmul.ts";
import type { TuningProfile } from "./profile.ts";
import { splitSumWgsl } from "./split_sum_wgsl.ts";

// `zero` is always 0: XORed into a value's bits it hides the value's origin from the shader
// compiler (see rmsnormBackwardInputKernel).
const PARAMS = `struct Params { n: u32, c: u32, eps: f32, zero: u32 }
@group(0) @binding(0) var<uniform> p: Params;`;

// The parameters of a kernel that sums split-K partials: their number, whether the product adds
// into the tensor's old value (`add_old`, the product's `accumulate`), and the number of a second
// product's that adds onto the first's (`slices2`).
const SPLIT_PARAMS = `struct Params {
  n: u32, c: u32, eps: f32, zero: u32, slices: u32, add_old: u32, slices2: u32, pad0: u32,
}
@group(0) @binding(0) var<uniform> p: Params;`;

/**
 * The entry point and row loops of a row kernel: one invocation per row, or (`wide`) one
 * workgroup of `wg` (a power of two) per row, its invocations striding over the columns and
 * summing `sum` in a fixed tree. `first(j)` runs per element and adds to `sum`; `row` then sees
 * the row's total as `total` (the per-invocation sum when not wide); `second(j)` runs per element
 * again; `last` runs once per row.
 */
function rowKernel(wg: number, wide: boolean, body: {
  sum: string;
  first: string;
  row: string;
  second: string;
  last: string;
}): string {
  const loop = (inner: string) =>
    wide
      ? `for (var j = li; j < p.c; j += ${wg}u) { ${inner} }`
      : `for (var j = 0u; j < p.c; j++) { ${inner} }`;
  const head = wide
    ? `var<workgroup> sums: array<f32, ${wg}>;

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let i = wid.x + wid.y * nwg.x;`
    : main1d(wg);
  const total = wide
    ? `sums[li] = ${body.sum};
  workgroupBarrier();
${sumTreeWgsl(wg, "sums")}
  let total = sums[0];`
    : `let total = ${body.sum};`;
  return `${head}
  if (i >= p.n) { return; }
  let base = i * p.c;
  var ${body.sum} = 0.0;
  ${loop(body.first)}
  ${total}
  ${body.row}
  ${loop(body.second)}
  ${wide ? `if (li == 0u) { ${body.last} }` : body.last}
}
`;
}

/**
 * Forward, a row per invocation or (`wide`) per workgroup. With `add`, the residual connection
 * before the norm is fused in: `x += add` is written back in place and normalised, one dispatch
 * instead of two; the sum is the one f32 addition the separate add made, so the bits are the
 * same. With `split` (and `add`), x is a split-K product not yet reduced (shaders/matmul.ts's
 * `encodeUnreduced`): each element is first summed from the partials (binding 6, `slices` of
 * `n·c` each) by the reduce's own expression, then the residual added and the result written to
 * x, so x and the norm get the bits of a reduce followed by the add, without the reduce's
 * dispatch. The sum passes through a XOR with `zero` (see rmsnormBackwardInputKernel) so no
 * compiler regroups it with the add. An invocation reads back only the elements it wrote.
 */
export function rmsnormForwardKernel(wg: number, add = false, split = false, wide = false): string {
  if (split && !add) throw new RangeError("rmsnorm forward: split partials need add");
  const sum = splitSumWgsl({
    sum: "d",
    partials: "partials",
    first: "base + j",
    stride: "p.n * p.c",
    slices: "p.slices",
  });
  const load = split
    ? `${sum}
    let v = bitcast<f32>(bitcast<u32>(d) ^ p.zero) + resid[base + j]; x[base + j] = v;`
    : add
    ? "let v = x[base + j] + resid[base + j]; x[base + j] = v;"
    : "let v = x[base + j];";
  return `${split ? SPLIT_PARAMS : PARAMS}
@group(0) @binding(1) var<storage, ${add ? "read_write" : "read"}> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> rstd: array<f32>;
${add ? "@group(0) @binding(5) var<storage, read> resid: array<f32>;\n" : ""}${
    split ? "@group(0) @binding(6) var<storage, read> partials: array<f32>;\n" : ""
  }${
    rowKernel(wg, wide, {
      sum: "ss",
      first: `${load} ss += v * v;`,
      row: "let r = inverseSqrt(total / f32(p.c) + p.eps);",
      second: "y[base + j] = (x[base + j] * r) * w[j];",
      last: "rstd[i] = r;",
    })
  }`;
}

/**
 * Backward input gradient, a row per invocation or (`wide`) per workgroup. With `accumulate`, `dx +=` instead of `dx =`:
 * the residual connection's gradient added in the same dispatch. To give the same bits as a
 * separate add, the gradient must be rounded to f32 exactly as when it is stored; a compiler
 * free to contract `dx + (a·b − c·d)` regroups it (lavapipe's did, and the model's gradients
 * changed), so the gradient passes through a bit XOR with the uniform `zero` it cannot see
 * through, and the add gets the stored value.
 */
export function rmsnormBackwardInputKernel(
  wg: number,
  accumulate = false,
  products: 0 | 1 | 2 = 0,
  wide = false,
): string {
  const grad = "r * w[j] * dy[base + j] - k * x[base + j]";
  const split = products > 0;
  const sum = (d: string, partials: string, slices: string) =>
    splitSumWgsl({ sum: d, partials, first: "base + j", stride: "p.n * p.c", slices });
  // As the reduces: each product's sum (times alpha 1), the first's plus dy's old value when it
  // accumulates, the second's plus the first's result.
  const second = products === 2
    ? `${sum("d2", "partials2", "p.slices2")}
    g = bitcast<f32>(bitcast<u32>(d2) ^ p.zero) + g;
    `
    : "";
  const reduce = `${sum("d", "partials", "p.slices")}
    var g = bitcast<f32>(bitcast<u32>(d) ^ p.zero);
    if (p.add_old == 1u) { g += dy[base + j]; }
    ${second}dy[base + j] = g;
    `;
  return `${split ? SPLIT_PARAMS : PARAMS}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, ${split ? "read_write" : "read"}> dy: array<f32>;
@group(0) @binding(4) var<storage, read> rstd: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;
${split ? "@group(0) @binding(6) var<storage, read> partials: array<f32>;\n" : ""}${
    products === 2 ? "@group(0) @binding(7) var<storage, read> partials2: array<f32>;\n" : ""
  }${
    rowKernel(wg, wide, {
      sum: "dot",
      first: `${split ? reduce : ""}dot += dy[base + j] * w[j] * x[base + j];`,
      row: `let r = rstd[i];
  let k = r * r * r * total / f32(p.c);`,
      second: accumulate
        ? `let g = bitcast<f32>(bitcast<u32>(${grad}) ^ p.zero);
    dx[base + j] = dx[base + j] + g;`
        : `dx[base + j] = ${grad};`,
      last: "",
    })
  }`;
}

/** Backward weight gradient (accumulated), one invocation per column. */
export function rmsnormBackwardWeightKernel(wg: number): string {
  return `${PARAMS}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read> rstd: array<f32>;
@group(0) @binding(4) var<storage, read_write> dw: array<f32>;
${main1d(wg)}
  if (i >= p.c) { return; }
  var s = 0.0;
  for (var r = 0u; r < p.n; r++) { s += dy[r * p.c + i] * x[r * p.c + i] * rstd[r]; }
  dw[i] = dw[i] + s;
}
`;
}

/**
 * Backward weight gradient (accumulated), one workgroup of `wg` (a power of two) per column: each
 * invocation sums the rows `li, li + wg, …`, then the workgroup adds the partial sums in a fixed
 * tree.
 */
export function rmsnormBackwardWeightWideKernel(wg: number): string {
  return `${PARAMS}
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> dy: array<f32>;
@group(0) @binding(3) var<storage, read> rstd: array<f32>;
@group(0) @binding(4) var<storage, read_write> dw: array<f32>;
var<workgroup> sums: array<f32, ${wg}>;

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let i = wid.x + wid.y * nwg.x;
  if (i >= p.c) { return; }
  var s = 0.0;
  for (var r = li; r < p.n; r += ${wg}u) { s += dy[r * p.c + i] * x[r * p.c + i] * rstd[r]; }
  sums[li] = s;
  workgroupBarrier();
${sumTreeWgsl(wg, "sums")}
  if (li == 0u) { dw[i] = dw[i] + sums[0]; }
}
`;
}

/** Dimensions and epsilon shared by forward and backward. */
export interface RmsNormDims {
  /** Rows (tokens, B·T). */
  readonly n: number;
  /** Row width C. */
  readonly c: number;
  /** `rms_norm_eps` (default 1e-5). */
  readonly eps?: number;
}

/** Bindings of {@link RmsNorm.forward}. */
export interface RmsNormForwardArgs extends RmsNormDims {
  /** Input rows `[N, C]`. */
  readonly x: TensorView;
  /** Scale `[C]`. */
  readonly weight: TensorView;
  /** Written: normalised rows `[N, C]`. */
  readonly out: TensorView;
  /** Written: `1/rms` of each row `[N]`, kept for the backward. */
  readonly rstd: TensorView;
  /**
   * Residual `[N, C]` added to `x` in place before the norm (`x += add`, written back), so a
   * residual connection and the norm after it are one dispatch.
   */
  readonly add?: TensorView;
  /**
   * x as the partials of a split product not yet reduced (`Matmul.encodeUnreduced`, `[slices, n,
   * c]`): x is written with their sum plus `add` (required), the bits of the reduce then the add.
   */
  readonly xPartials?: SplitPartials;
}

/** Bindings of {@link RmsNorm.backward}. */
export interface RmsNormBackwardArgs extends RmsNormDims {
  /** The forward's input `[N, C]`. */
  readonly x: TensorView;
  /** Scale `[C]`. */
  readonly weight: TensorView;
  /** Gradient of the output `[N, C]`. */
  readonly dOut: TensorView;
  /** The forward's `rstd [N]`. */
  readonly rstd: TensorView;
  /** Written (added to, with `accumulate`): input gradient `[N, C]`. */
  readonly dx: TensorView;
  /**
   * Add the input gradient to `dx` instead of overwriting it: the gradient of a residual
   * connection around the norm, already in `dx`, then needs no separate add.
   */
  readonly accumulate?: boolean;
  /** Accumulated: weight gradient `[C]`. */
  readonly dWeight: TensorView;
  /**
   * dOut as the partials of one or two split products not yet reduced (`Matmul.encodeUnreduced`,
   * `[slices, n, c]` each, the second accumulating onto the first): dOut is written with the first
   * sum (plus dOut's old value when that product accumulates), plus the second's, the bits the
   * reduces would have stored, before both gradients read it.
   */
  readonly dOutPartials?: readonly SplitPartials[];
}

/** RMSNorm forward and backward. */
export class RmsNorm {
  readonly #rt: GpuRuntime;
  readonly #wg: number;
  readonly #rowReduction: TuningProfile["rowReduction"];

  /** With `rowReduction: "workgroup"`, `workgroupSize` must be a power of two (a tree halves it). */
  constructor(
    rt: GpuRuntime,
    workgroupSize: number = rt.profile.workgroupSize,
    rowReduction: TuningProfile["rowReduction"] = rt.profile.rowReduction,
  ) {
    if (rowReduction === "workgroup" && !Number.isInteger(Math.log2(workgroupSize))) {
      throw new RangeError(`rmsnorm: workgroupSize must be a power of two, got ${workgroupSize}`);
    }
    this.#rt = rt;
    this.#wg = workgroupSize;
    this.#rowReduction = rowReduction;
  }

  /** `out [N, C] = rmsnorm(x [N, C]) · weight [C]`; saves `rstd [N]`; with `add`, `x += add` first. */
  forward(
    pass: GPUComputePassEncoder,
    args: RmsNormForwardArgs,
  ): void {
    const { n } = args;
    const rows = { x: args.x, out: args.out, ...(args.add ? { add: args.add } : {}) };
    this.#check("rmsnorm forward", args, rows, args.weight, args.rstd);
    const wg = this.#wg, add = args.add !== undefined;
    const split = args.xPartials;
    if (split !== undefined) {
      if (!add) throw new RangeError("rmsnorm forward: xPartials needs add (the residual)");
      if (split.accumulate) {
        throw new RangeError("rmsnorm forward: xPartials of a product that accumulates");
      }
      this.#checkPartials("rmsnorm forward: xPartials", args, split);
    }
    const kind = split ? "-add-split" : add ? "-add" : "";
    const wide = this.#rowReduction === "workgroup";
    const pipeline = this.#rt.pipeline(
      `rmsnorm/forward${kind}${wide ? "-wide" : ""}/${wg}`,
      () => rmsnormForwardKernel(wg, add, split !== undefined, wide),
    );
    const params = split ? this.#splitParams(args, split) : this.#params(args);
    const group = bindTensors(this.#rt, pipeline, params, [
      args.x,
      args.weight,
      args.out,
      args.rstd,
      ...(args.add ? [args.add] : []),
      ...(split ? [split.partials] : []),
    ]);
    this.#dispatchRows(pass, pipeline, group, n, wide);
  }

  /**
   * `dx [N, C]` (overwritten, or added to with `accumulate`) and `dWeight [C]` (accumulated) from
   * `dOut [N, C]`.
   */
  backward(
    pass: GPUComputePassEncoder,
    args: RmsNormBackwardArgs,
  ): void {
    const { n, c } = args;
    this.#check(
      "rmsnorm backward",
      args,
      { x: args.x, dOut: args.dOut, dx: args.dx },
      args.weight,
      args.rstd,
    );
    requireLength('rmsnorm backward: binding "dWeight"', args.dWeight, c, "[C]");
    const wg = this.#wg, accumulate = args.accumulate ?? false;
    const parts = args.dOutPartials ?? [];
    if (parts.length > 2 || parts.slice(1).some((p) => !p.accumulate)) {
      throw new RangeError(
        "rmsnorm backward: dOutPartials takes one product or two, the second accumulating",
      );
    }
    for (const p of parts) this.#checkPartials("rmsnorm backward: dOutPartials", args, p);
    const products = parts.length as 0 | 1 | 2;
    const params = this.#params(args);
    const wide = this.#rowReduction === "workgroup";
    const input = this.#rt.pipeline(
      `rmsnorm/backward-input${accumulate ? "-add" : ""}${products ? `-split${products}` : ""}${
        wide ? "-wide" : ""
      }/${wg}`,
      () => rmsnormBackwardInputKernel(wg, accumulate, products, wide),
    );
    const weight = this.#rt.pipeline(
      `rmsnorm/backward-weight${wide ? "-wide" : ""}/${wg}`,
      () => (wide ? rmsnormBackwardWeightWideKernel(wg) : rmsnormBackwardWeightKernel(wg)),
    );
    const inputGroup = bindTensors(
      this.#rt,
      input,
      products ? this.#splitParams(args, parts[0], parts[1]) : params,
      [
        args.x,
        args.weight,
        args.dOut,
        args.rstd,
        args.dx,
        ...parts.map((p) => p.partials),
      ],
    );
    this.#dispatchRows(pass, input, inputGroup, n, wide);
    const weightGroup = bindTensors(this.#rt, weight, params, [
      args.x,
      args.dOut,
      args.rstd,
      args.dWeight,
    ]);
    if (wide) dispatch(pass, weight, weightGroup, grid1d(c));
    else dispatch1d(pass, weight, weightGroup, c, wg);
  }

  /** A row kernel's grid: `n` rows, one per invocation or (`wide`) per workgroup. */
  #dispatchRows(
    pass: GPUComputePassEncoder,
    pipeline: GPUComputePipeline,
    group: GPUBindGroup,
    n: number,
    wide: boolean,
  ): void {
    if (wide) dispatch(pass, pipeline, group, grid1d(n));
    else dispatch1d(pass, pipeline, group, n, this.#wg);
  }

  #params(args: RmsNormDims): number[] {
    return [args.n, args.c, f32Bits(args.eps ?? 1e-5), 0];
  }

  #splitParams(args: RmsNormDims, split: SplitPartials, second?: SplitPartials): number[] {
    return [...this.#params(args), split.slices, split.accumulate ? 1 : 0, second?.slices ?? 0, 0];
  }

  /** Throw a RangeError unless `split` holds `[slices, N, C]` partials of a product `[N, C]`. */
  #checkPartials(what: string, args: RmsNormDims, split: SplitPartials): void {
    if (split.count !== args.n * args.c) {
      throw new RangeError(
        `${what}: partials hold ${split.count} outputs per slice, the tensor ${args.n * args.c}`,
      );
    }
    requireLength(
      `${what}: binding "partials"`,
      split.partials,
      split.slices * split.count,
      "[slices, N, C]",
    );
  }

  #check(
    what: string,
    dims: RmsNormDims,
    rows: Record<string, TensorView>,
    weight: TensorView,
    rstd: TensorView,
  ): void {
    requireDims(what, { n: dims.n, c: dims.c });
    const eps = dims.eps ?? 1e-5;
    if (!(eps >= 0) || !Number.isFinite(eps)) {
      throw new RangeError(`${what}: eps must be a finite non-negative number, got ${eps}`);
    }
    for (const [name, view] of Object.entries(rows)) {
      requireLength(`${what}: binding "${name}"`, view, dims.n * dims.c, "[N, C]");
    }
    requireLength(`${what}: binding "weight"`, weight, dims.c, "[C]");
    requireLength(`${what}: binding "rstd"`, rstd, dims.n, "[N]");
  }
}
