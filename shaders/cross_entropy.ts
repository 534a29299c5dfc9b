/**
 * Softmax cross-entropy with an ignore index, mean over the targets that are not ignored (as
 * `torch.nn.functional.cross_entropy(logits, targets, ignore_index=-100)`).
 *
 * Shapes: logits `[N, V]`, targets `[N]` i32 (`IGNORE_INDEX` = −100 skips a row), lse `[N]`
 * (log-sum-exp, saved for the backward), losses `[N]` (per row, 0 when ignored), out `[2]` =
 * (mean loss, count of non-ignored targets). With every target ignored the loss is 0 (torch
 * gives NaN) and so are the gradients. A target outside `[0, V)` other than −100 gives a NaN loss.
 *
 * Backward: `dLogits[n, j] = scale/count · (softmax(logits[n])_j − [j = target_n])`, 0 on ignored
 * rows, where `scale` is dLoss (1 for a plain mean; 1/k to average k micro-batches). The count is
 * read from `out[1]` on the GPU, so no readback is needed between forward and backward. Without
 * `dLogits` the gradient overwrites `logits` in place (saves an `[N, V]` buffer).
 *
 * @module
 */

import { f32Bits, type GpuRuntime, type TensorView } from "./gpu.ts";
import type { TuningProfile } from "./profile.ts";
import {
  bindTensors,
  ceilDiv,
  dispatch,
  dispatch1d,
  grid1d,
  main1d,
  MAX_GRID,
  requireDims,
  requireLength,
} from "./kernel.ts";

/** The target value that marks a row as ignored (torch's default `ignore_index`). */
export const IGNORE_INDEX = -100;

/**
 * WGSL overwriting a row's logits `[start, start + width)` of a `vocab`-wide row (`base`, with
 * log-sum-exp `l` and target `t` in scope) with `grad_scale · (softmax − onehot)`: zeros for an
 * ignored row, NaN for an out-of-range target. One source for the unsplit and the blocked
 * kernels, so both compute the same bits; the wide kernel's invocations each take the columns
 * `first, first + stride, …`.
 */
function gradientWgsl(
  e: { vocab: string; width: string; start: string; first?: string; stride?: string },
): string {
  return `
  var g_scale = p.grad_scale;
  if (t == ${IGNORE_INDEX}) { g_scale = 0.0; }
  if (t != ${IGNORE_INDEX} && (t < 0 || u32(t) >= ${e.vocab})) { g_scale = bitcast<f32>(0x7fc00000u); }
  for (var j = ${e.first ?? "0u"}; j < ${e.width}; j += ${e.stride ?? "1u"}) {
    let hit = select(0.0, 1.0, i32(${e.start} + j) == t);
    logits[base + j] = (exp(logits[base + j] - l) - hit) * g_scale;
  }`;
}

/**
 * Forward pass 1, one invocation per row: log-sum-exp and the row's loss. `fused` then overwrites
 * the row with its gradient `grad_scale · (softmax − onehot)` while the row is still in cache
 * (zeros when ignored, NaN for an out-of-range target).
 */
export function crossEntropyRowsKernel(wg: number, fused = false): string {
  const gradient = gradientWgsl({ vocab: "p.v", width: "p.v", start: "0u" });
  return `struct Params { n: u32, v: u32, grad_scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, ${fused ? "read_write" : "read"}> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> losses: array<f32>;
${main1d(wg)}
  if (i >= p.n) { return; }
  let base = i * p.v;
  // Online log-sum-exp: one pass, one exp per logit; s is rescaled when the maximum grows.
  var m = logits[base];
  var s = 1.0;
  for (var j = 1u; j < p.v; j++) {
    let x = logits[base + j];
    if (x > m) { s = s * exp(m - x) + 1.0; m = x; } else { s += exp(x - m); }
  }
  let l = m + log(s);
  lse[i] = l;
  let t = targets[i];
  if (t == ${IGNORE_INDEX}) {
    losses[i] = 0.0;
  } else if (t < 0 || u32(t) >= p.v) {
    losses[i] = bitcast<f32>(0x7fc00000u);
  } else {
    losses[i] = l - logits[base + u32(t)];
  }${fused ? gradient : ""}
}
`;
}

/**
 * Forward pass 1 with a workgroup per row (GPUs): each invocation keeps an online log-sum-exp over
 * the columns `li, li + wg, …` (coalesced reads), the workgroup combines the `wg` partial (max,
 * sum) pairs in a fixed tree, and invocation 0 writes lse and the loss. `fused` then has every
 * invocation overwrite its columns with the gradient, as {@link crossEntropyRowsKernel} does.
 * The order of the additions differs from the one-invocation kernel, so the bits do too; each
 * kernel always gives the same bits for the same input.
 */
export function crossEntropyRowsWideKernel(wg: number, fused = false): string {
  const tree: string[] = [];
  for (let s = wg / 2; s >= 1; s /= 2) {
    tree.push(`  if (li < ${s}u) { combine(li, li + ${s}u); }
  workgroupBarrier();`);
  }
  return `struct Params { n: u32, v: u32, grad_scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, ${fused ? "read_write" : "read"}> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> losses: array<f32>;
var<workgroup> maxes: array<f32, ${wg}>;
var<workgroup> sums: array<f32, ${wg}>;
var<workgroup> row_lse: f32;

// (maxes[a], sums[a]) <- the log-sum-exp pair of both; an empty pair has sum 0.
fn combine(a: u32, b: u32) {
  let ma = maxes[a];
  let mb = maxes[b];
  if (sums[b] == 0.0) { return; }
  if (sums[a] == 0.0) { maxes[a] = mb; sums[a] = sums[b]; return; }
  let m = max(ma, mb);
  sums[a] = sums[a] * exp(ma - m) + sums[b] * exp(mb - m);
  maxes[a] = m;
}

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let i = wid.x + wid.y * nwg.x;
  if (i >= p.n) { return; }
  let base = i * p.v;
  var m = 0.0;
  var s = 0.0;
  if (li < p.v) {
    m = logits[base + li];
    s = 1.0;
    for (var j = li + ${wg}u; j < p.v; j += ${wg}u) {
      let x = logits[base + j];
      if (x > m) { s = s * exp(m - x) + 1.0; m = x; } else { s += exp(x - m); }
    }
  }
  maxes[li] = m;
  sums[li] = s;
  workgroupBarrier();
${tree.join("\n")}
  let t = targets[i];
  if (li == 0u) {
    let l = maxes[0] + log(sums[0]);
    lse[i] = l;
    row_lse = l;
    if (t == ${IGNORE_INDEX}) {
      losses[i] = 0.0;
    } else if (t < 0 || u32(t) >= p.v) {
      losses[i] = bitcast<f32>(0x7fc00000u);
    } else {
      losses[i] = l - logits[base + u32(t)];
    }
  }${
    fused
      ? `
  // Every read of the row (the loss's included) is done before any write below.
  workgroupBarrier();
  let l = row_lse;${
        gradientWgsl({ vocab: "p.v", width: "p.v", start: "0u", first: "li", stride: `${wg}u` })
      }`
      : ""
  }
}
`;
}

/**
 * Blocked forward pass 1a, one invocation per row: the online log-sum-exp of pass 1 carried over
 * the row's vocabulary blocks, one dispatch per block in order. `state [2N]` holds (max, sum)
 * between blocks; the first block starts them as pass 1 does and the last writes `lse`, so the
 * operations, and the bits, are those of one pass over the whole row.
 */
export function crossEntropyLseBlockKernel(wg: number): string {
  return `struct Params { n: u32, width: u32, first: u32, last: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> state: array<f32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;
${main1d(wg)}
  if (i >= p.n) { return; }
  let base = i * p.width;
  var m: f32;
  var s: f32;
  var j0 = 0u;
  if (p.first != 0u) {
    m = logits[base];
    s = 1.0;
    j0 = 1u;
  } else {
    m = state[2u * i];
    s = state[2u * i + 1u];
  }
  for (var j = j0; j < p.width; j++) {
    let x = logits[base + j];
    if (x > m) { s = s * exp(m - x) + 1.0; m = x; } else { s += exp(x - m); }
  }
  if (p.last != 0u) {
    lse[i] = m + log(s);
  } else {
    state[2u * i] = m;
    state[2u * i + 1u] = s;
  }
}
`;
}

/**
 * Blocked forward pass 1b, one invocation per row of one vocabulary block `[start,
 * start + width)`: the row's loss when its target falls in the block (the first block also
 * writes 0 for ignored rows and NaN for out-of-range targets), and with `gradient` the block
 * overwritten by `grad_scale · (softmax − onehot)`, with pass 1's formulas.
 */
export function crossEntropyLossBlockKernel(wg: number, gradient: boolean): string {
  const grad = gradientWgsl({ vocab: "p.vocab", width: "p.width", start: "p.start" });
  return `struct Params { n: u32, width: u32, start: u32, vocab: u32, grad_scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, ${gradient ? "read_write" : "read"}> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read_write> losses: array<f32>;
${main1d(wg)}
  if (i >= p.n) { return; }
  let base = i * p.width;
  let l = lse[i];
  let t = targets[i];
  if (p.start == 0u) {
    if (t == ${IGNORE_INDEX}) {
      losses[i] = 0.0;
    } else if (t < 0 || u32(t) >= p.vocab) {
      losses[i] = bitcast<f32>(0x7fc00000u);
    }
  }
  if (t >= 0 && u32(t) >= p.start && u32(t) - p.start < p.width) {
    losses[i] = l - logits[base + u32(t) - p.start];
  }${gradient ? grad : ""}
}
`;
}

/** Forward pass 2, one workgroup: mean over non-ignored rows in a fixed order. */
export function crossEntropyMeanKernel(wg: number): string {
  const tree: string[] = [];
  for (let s = wg / 2; s >= 1; s /= 2) {
    tree.push(`  if (li < ${s}u) {
    sums[li] = sums[li] + sums[li + ${s}u];
    counts[li] = counts[li] + counts[li + ${s}u];
  }
  workgroupBarrier();`);
  }
  return `struct Params { n: u32, v: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> targets: array<i32>;
@group(0) @binding(2) var<storage, read> losses: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
var<workgroup> sums: array<f32, ${wg}>;
var<workgroup> counts: array<u32, ${wg}>;

@compute @workgroup_size(${wg})
fn main(@builtin(local_invocation_index) li: u32) {
  var s = 0.0;
  var c = 0u;
  for (var r = li; r < p.n; r += ${wg}u) {
    if (targets[r] != ${IGNORE_INDEX}) { s += losses[r]; c += 1u; }
  }
  sums[li] = s;
  counts[li] = c;
  workgroupBarrier();
${tree.join("\n")}
  if (li == 0u) {
    let count = counts[0];
    out[0] = select(0.0, sums[0] / f32(count), count > 0u);
    out[1] = f32(count);
  }
}
`;
}

/**
 * Backward: workgroup `(x, y + z·ny)` covers columns `x·wg·items ..` of that row, each invocation
 * `items` columns `wg` apart (no integer division per element). `inPlace` writes the gradient
 * over the logits.
 */
export function crossEntropyBackwardKernel(wg: number, inPlace: boolean, items = 1): string {
  return `struct Params { n: u32, v: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, ${inPlace ? "read_write" : "read"}> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read> stats: array<f32>;
${inPlace ? "" : "@group(0) @binding(5) var<storage, read_write> dlogits: array<f32>;"}

@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let row = wid.y + wid.z * nwg.y;
  if (row >= p.n) { return; }
  let t = targets[row];
  let count = stats[1];
  let live = t != ${IGNORE_INDEX} && count > 0.0;
  let l = lse[row];
  let k = p.scale / count;
  let base = row * p.v;
  let first = wid.x * ${wg * items}u + li;
  for (var it = 0u; it < ${items}u; it++) {
    let col = first + it * ${wg}u;
    if (col >= p.v) { break; }
    var g = 0.0;
    if (live) {
      g = (exp(logits[base + col] - l) - select(0.0, 1.0, i32(col) == t)) * k;
    }
    ${inPlace ? "logits" : "dlogits"}[base + col] = g;
  }
}
`;
}

/** Dimensions shared by forward and backward. */
export interface CrossEntropyDims {
  /** Rows (predictions), N = B·T. */
  readonly n: number;
  /** Vocabulary size V. */
  readonly v: number;
}

/** Bindings of {@link CrossEntropy.forward}. */
export interface CrossEntropyForwardArgs extends CrossEntropyDims {
  /** Logits `[N, V]`. */
  readonly logits: TensorView;
  /** Targets `[N]`, i32; {@link IGNORE_INDEX} skips a row. */
  readonly targets: TensorView;
  /** Written: log-sum-exp of each row `[N]`, kept for the backward. */
  readonly lse: TensorView;
  /** Written: loss of each row `[N]` (0 when ignored). */
  readonly losses: TensorView;
  /** Written: `[2]` = (mean loss over counted rows, count). */
  readonly out: TensorView;
}

/** Bindings of {@link CrossEntropy.backward}. */
export interface CrossEntropyBackwardArgs extends CrossEntropyDims {
  /** The forward's logits `[N, V]` (overwritten by the gradient when `dLogits` is absent). */
  readonly logits: TensorView;
  /** Targets `[N]`, i32. */
  readonly targets: TensorView;
  /** The forward's `lse [N]`. */
  readonly lse: TensorView;
  /** The forward's `out [2]` (the count is read from `out[1]`). */
  readonly out: TensorView;
  /** Written: logit gradient `[N, V]`; omit to write it over `logits`. */
  readonly dLogits?: TensorView;
  /** dLoss (default 1): the gradient of `scale · mean loss`. */
  readonly scale?: number;
}

/** One vocabulary block of {@link CrossEntropy.blocked}: columns `[start, start + width)`. */
export interface CrossEntropyBlock {
  /** The block's logits `[N, width]`, contiguous (rows of the block, not of the whole row). */
  readonly logits: TensorView;
  /** First vocabulary column of the block. */
  readonly start: number;
  /** Columns in the block. */
  readonly width: number;
}

/** Bindings of {@link CrossEntropy.blocked}. */
export interface CrossEntropyBlockedArgs extends CrossEntropyDims {
  /** The vocabulary blocks in order; they must tile `[0, V)`. */
  readonly blocks: readonly CrossEntropyBlock[];
  /** Targets `[N]`, i32. */
  readonly targets: TensorView;
  /** Written: log-sum-exp of each row `[N]`. */
  readonly lse: TensorView;
  /** Written: loss of each row `[N]`. */
  readonly losses: TensorView;
  /** Written: `[2]` = (mean loss, count). */
  readonly out: TensorView;
  /** Scratch `[2N]`: each row's running (max, sum) between blocks. */
  readonly state: TensorView;
  /**
   * With a value, every block is overwritten by `gradScale · (softmax − onehot)` as in
   * {@link CrossEntropy.fused}; without, the logits are only read (evaluation).
   */
  readonly gradScale?: number;
}

/** Cross-entropy forward (mean loss) and backward (logit gradients). */
export class CrossEntropy {
  readonly #rt: GpuRuntime;
  readonly #wg: number;
  readonly #items: number;
  readonly #rowReduction: TuningProfile["rowReduction"];

  /**
   * `workgroupSize` must be a power of two (the mean's and the rows' trees halve it); `items` is
   * the backward's elements per invocation (the profile's `itemsPerInvocation` by default);
   * `rowReduction` how the forward reduces each row (the profile's by default).
   */
  constructor(
    rt: GpuRuntime,
    workgroupSize: number = rt.profile.workgroupSize,
    items: number = rt.profile.itemsPerInvocation,
    rowReduction: TuningProfile["rowReduction"] = rt.profile.rowReduction,
  ) {
    if (!Number.isInteger(Math.log2(workgroupSize))) {
      throw new RangeError(
        `cross-entropy: workgroupSize must be a power of two, got ${workgroupSize}`,
      );
    }
    this.#rt = rt;
    this.#wg = workgroupSize;
    this.#items = items;
    this.#rowReduction = rowReduction;
  }

  /** Encode the per-row forward pass (lse, losses; with `fused` the in-place gradient). */
  #rows(
    pass: GPUComputePassEncoder,
    fused: boolean,
    params: number[],
    views: TensorView[],
    n: number,
  ): void {
    const wg = this.#wg, wide = this.#rowReduction === "workgroup";
    const name = `cross-entropy/${wide ? "wide-" : ""}rows${fused ? "-fused" : ""}/${wg}`;
    const kernel = wide ? crossEntropyRowsWideKernel : crossEntropyRowsKernel;
    const rows = this.#rt.pipeline(name, () => kernel(wg, fused));
    const group = bindTensors(this.#rt, rows, params, views);
    if (wide) dispatch(pass, rows, group, grid1d(n));
    else dispatch1d(pass, rows, group, n, wg);
  }

  /** `out = [mean loss, count]`; also writes `lse [N]` and `losses [N]`. */
  forward(
    pass: GPUComputePassEncoder,
    args: CrossEntropyForwardArgs,
  ): void {
    const { n, v } = args;
    this.#check("cross-entropy forward", args);
    requireLength('cross-entropy forward: binding "losses"', args.losses, n, "[N]");
    const wg = this.#wg;
    const mean = this.#rt.pipeline(`cross-entropy/mean/${wg}`, () => crossEntropyMeanKernel(wg));
    this.#rows(pass, false, [n, v], [args.logits, args.targets, args.lse, args.losses], n);
    const meanGroup = bindTensors(this.#rt, mean, [n, v], [args.targets, args.losses, args.out]);
    dispatch(pass, mean, meanGroup, [1]);
  }

  /**
   * Forward and in-place backward in one pass over the logits: everything {@link forward}
   * writes, and `logits [N, V]` overwritten by `gradScale · (softmax − onehot)` per row (zero
   * rows when ignored). Unlike {@link backward}, the gradient is not divided by the count on the
   * GPU: fold `1/count` into `gradScale` (the host knows which targets are ignored). Reading each
   * row once instead of twice saves a third of the memory traffic of the separate passes.
   */
  fused(
    pass: GPUComputePassEncoder,
    args: CrossEntropyForwardArgs & {
      /** Multiplies `softmax − onehot` (dLoss/count for a mean). */
      readonly gradScale: number;
    },
  ): void {
    const { n, v } = args;
    this.#check("cross-entropy fused", args);
    requireLength('cross-entropy fused: binding "losses"', args.losses, n, "[N]");
    if (!Number.isFinite(args.gradScale)) {
      throw new RangeError(`cross-entropy fused: gradScale must be finite, got ${args.gradScale}`);
    }
    const wg = this.#wg;
    const mean = this.#rt.pipeline(`cross-entropy/mean/${wg}`, () => crossEntropyMeanKernel(wg));
    this.#rows(pass, true, [n, v, f32Bits(args.gradScale)], [
      args.logits,
      args.targets,
      args.lse,
      args.losses,
    ], n);
    const meanGroup = bindTensors(this.#rt, mean, [n, v], [args.targets, args.losses, args.out]);
    dispatch(pass, mean, meanGroup, [1]);
  }

  /**
   * {@link fused} (with `gradScale`) or {@link forward} (without) over logits stored as
   * vocabulary blocks, for rows too wide for one storage binding (the LM head of a large
   * vocabulary, split by row blocks of its weight): each row's log-sum-exp is carried from block
   * to block, then each block gets its losses and gradient. Every lse, loss and gradient has the
   * same bits as the one-pass kernel over whole rows with `rowReduction: "invocation"`.
   */
  blocked(pass: GPUComputePassEncoder, args: CrossEntropyBlockedArgs): void {
    const { n, v, blocks } = args;
    const what = "cross-entropy blocked";
    requireDims(what, { n, v });
    let next = 0;
    for (const [i, b] of blocks.entries()) {
      requireDims(`${what}: block ${i}`, { width: b.width });
      if (b.start !== next) {
        throw new RangeError(
          `${what}: block ${i} starts at column ${b.start}, expected ${next} (blocks tile [0, V))`,
        );
      }
      requireLength(`${what}: block ${i} "logits"`, b.logits, n * b.width, "[N, width]");
      next += b.width;
    }
    if (next !== v) {
      throw new RangeError(`${what}: blocks cover ${next} columns, the vocabulary has ${v}`);
    }
    requireLength(`${what}: binding "targets"`, args.targets, n, "[N]");
    requireLength(`${what}: binding "lse"`, args.lse, n, "[N]");
    requireLength(`${what}: binding "losses"`, args.losses, n, "[N]");
    requireLength(`${what}: binding "out"`, args.out, 2, "[2]");
    requireLength(`${what}: binding "state"`, args.state, 2 * n, "[2N]");
    const gradient = args.gradScale !== undefined;
    if (gradient && !Number.isFinite(args.gradScale)) {
      throw new RangeError(`${what}: gradScale must be finite, got ${args.gradScale}`);
    }
    const wg = this.#wg, rt = this.#rt;
    const lse = rt.pipeline(`cross-entropy/lse-block/${wg}`, () => crossEntropyLseBlockKernel(wg));
    const loss = rt.pipeline(
      `cross-entropy/loss-block${gradient ? "-grad" : ""}/${wg}`,
      () => crossEntropyLossBlockKernel(wg, gradient),
    );
    blocks.forEach((b, i) => {
      const params = [n, b.width, i === 0 ? 1 : 0, i === blocks.length - 1 ? 1 : 0];
      const group = bindTensors(rt, lse, params, [b.logits, args.state, args.lse]);
      dispatch1d(pass, lse, group, n, wg);
    });
    for (const b of blocks) {
      const params = [n, b.width, b.start, v, f32Bits(args.gradScale ?? 0)];
      const views = [b.logits, args.targets, args.lse, args.losses];
      dispatch1d(pass, loss, bindTensors(rt, loss, params, views), n, wg);
    }
    const mean = rt.pipeline(`cross-entropy/mean/${wg}`, () => crossEntropyMeanKernel(wg));
    const meanGroup = bindTensors(rt, mean, [n, v], [args.targets, args.losses, args.out]);
    dispatch(pass, mean, meanGroup, [1]);
  }

  /**
   * `dLogits [N, V] = scale · d(mean loss)/d(logits)`, using `lse` and `out` from the forward.
   * Without `dLogits`, the gradient overwrites `logits`.
   */
  backward(
    pass: GPUComputePassEncoder,
    args: CrossEntropyBackwardArgs,
  ): void {
    const { n, v } = args;
    this.#check("cross-entropy backward", args);
    const inPlace = args.dLogits === undefined;
    const views = [args.logits, args.targets, args.lse, args.out];
    if (args.dLogits) {
      requireLength('cross-entropy backward: binding "dLogits"', args.dLogits, n * v, "[N, V]");
      views.push(args.dLogits);
    }
    const [wg, items] = [this.#wg, this.#items];
    const pipeline = this.#rt.pipeline(
      `cross-entropy/backward${inPlace ? "-in-place" : ""}/${wg}x${items}`,
      () => crossEntropyBackwardKernel(wg, inPlace, items),
    );
    const group = bindTensors(this.#rt, pipeline, [n, v, f32Bits(args.scale ?? 1)], views);
    const rowsY = Math.min(n, MAX_GRID);
    dispatch(pass, pipeline, group, [ceilDiv(v, wg * items), rowsY, ceilDiv(n, rowsY)]);
  }

  #check(
    what: string,
    args: CrossEntropyDims & {
      logits: TensorView;
      targets: TensorView;
      lse: TensorView;
      out: TensorView;
    },
  ): void {
    requireDims(what, { n: args.n, v: args.v });
    requireLength(`${what}: binding "logits"`, args.logits, args.n * args.v, "[N, V]");
    requireLength(`${what}: binding "targets"`, args.targets, args.n, "[N]");
    requireLength(`${what}: binding "lse"`, args.lse, args.n, "[N]");
    requireLength(`${what}: binding "out"`, args.out, 2, "[2]");
  }
}
