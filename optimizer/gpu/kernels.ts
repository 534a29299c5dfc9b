/**
 * Typed faces of the DisTrO WGSL kernels: pipelines built once, the shared DCT basis tables,
 * each parameter's `Spec` uniform, and one `encode*` method per kernel that binds views and
 * dispatches into a compute pass. The optimizer (distro_gpu.ts) sequences them; tests drive
 * them one at a time against the TypeScript references.
 *
 * @module
 */

import { type GpuRuntime, type TensorView, viewLength } from "../../shaders/gpu.ts";
import { bindTensors, dispatch1d } from "../../shaders/kernel.ts";
import { dctMatrix } from "../dct.ts";
import { fixedBasis } from "../exact.ts";
import type { ChunkLayout } from "../layout.ts";
import {
  applyKernel,
  dctColsKernel,
  dctRowsKernel,
  feedbackKernel,
  lookaheadKernel,
  MAX_GPU_TOPK,
  ownFixedKernel,
  topkKernel,
} from "./distro_wgsl.ts";

/** A parameter as the kernels see it: its chunking plus where its entries live. */
export interface KernelParam {
  readonly layout: ChunkLayout;
  /** Offset of this parameter's `chunks·k` entries in the result buffers. */
  readonly entry: number;
  /** Index of the parameter (into the apply metadata). */
  readonly index: number;
}

/** The f32 and fixed-point DCT tables of every chunk length in use, in two GPU buffers. */
export class BasisTables implements Disposable {
  /** f32 tables, concatenated. */
  readonly float: GPUBuffer;
  /** i32 fixed-point tables (exact.ts), concatenated at the same offsets. */
  readonly fixed: GPUBuffer;
  readonly #offsets = new Map<number, number>();
  readonly #rt: GpuRuntime;

  constructor(rt: GpuRuntime, sizes: Iterable<number>, label = "distro") {
    this.#rt = rt;
    const distinct = [...new Set(sizes)].sort((a, b) => a - b);
    let total = 0;
    for (const n of distinct) {
      this.#offsets.set(n, total);
      total += n * n;
    }
    const f = new Float32Array(Math.max(1, total));
    const q = new Int32Array(Math.max(1, total));
    for (const n of distinct) {
      f.set(dctMatrix(n), this.#offsets.get(n)!);
      q.set(fixedBasis(n), this.#offsets.get(n)!);
    }
    this.float = rt.buffer(`${label} dct basis f32`, f);
    this.fixed = rt.buffer(`${label} dct basis fixed`, q);
  }

  /** Offset of the size-`n` table (RangeError if `n` was not given at construction). */
  offset(n: number): number {
    const o = this.#offsets.get(n);
    if (o === undefined) throw new RangeError(`no DCT basis of size ${n} was built`);
    return o;
  }

  [Symbol.dispose](): void {
    this.#rt.destroyBuffer(this.float);
    this.#rt.destroyBuffer(this.fixed);
  }
}

/** Views bound by {@link DistroKernels.encodeFeedback}. */
export interface FeedbackViews {
  hyper: TensorView;
  gradSumSq: TensorView;
  params: TensorView;
  grads: TensorView;
  delta: TensorView;
  ownIdx: TensorView;
  ownVal: TensorView;
}

/** Views bound by {@link DistroKernels.encodeApply}. */
export interface ApplyViews {
  hyper: TensorView;
  meta: TensorView;
  params: TensorView;
  idx: TensorView;
  q: TensorView;
  offsets: TensorView;
}

/** The DisTrO pipelines for one runtime. */
export class DistroKernels {
  readonly #rt: GpuRuntime;
  readonly #wg: number;
  readonly #pipes: Record<string, GPUComputePipeline>;
  readonly #basis: BasisTables;
  readonly #basisFloat: GPUBuffer;
  readonly #basisFixed: GPUBuffer;

  /** Builds (or reuses from the runtime's cache) every pipeline; binds `basis` tables. */
  constructor(rt: GpuRuntime, basis: BasisTables) {
    this.#rt = rt;
    this.#basis = basis;
    this.#basisFloat = basis.float;
    this.#basisFixed = basis.fixed;
    const wg = this.#wg = rt.profile.workgroupSize;
    const make = (name: string, src: (wg: number) => string) =>
      rt.pipeline(`distro/${name}/wg${wg}`, () => src(wg));
    this.#pipes = {
      lookahead: make("lookahead", lookaheadKernel),
      feedback: make("feedback", feedbackKernel),
      dctRows: make("dct-rows", dctRowsKernel),
      dctCols: make("dct-cols", dctColsKernel),
      topk: make("topk", topkKernel),
      ownFixed: make("own-fixed", ownFixedKernel),
      apply: make("apply", applyKernel),
    };
  }

  /** The `Spec` uniform words of a parameter (see distro_wgsl.ts). */
  spec(p: KernelParam): number[] {
    const basis = this.#basis;
    const l = p.layout;
    if (l.k > MAX_GPU_TOPK) {
      throw new RangeError(
        `parameter "${l.name}": k = ${l.k} exceeds the GPU top-k limit ${MAX_GPU_TOPK}`,
      );
    }
    return [
      l.shape[0],
      l.shape.length === 2 ? l.shape[1] : 1,
      l.n1,
      l.n2,
      l.colChunks,
      l.chunks,
      l.totalk,
      l.k,
      basis.offset(l.n1),
      basis.offset(l.n2),
      basis.offset(l.n1),
      basis.offset(l.n2),
      p.entry,
      p.index,
      0,
      0,
    ];
  }

  /** `saved = θ; θ −= prevLr·sign(δ)` over `n` elements. */
  encodeLookahead(
    pass: GPUComputePassEncoder,
    n: number,
    v: { hyper: TensorView; params: TensorView; delta: TensorView; saved: TensorView },
  ): void {
    for (const [name, view] of Object.entries(v)) {
      if (name !== "hyper" && viewLength(view) < n) {
        throw new RangeError(`distro lookahead: "${name}" holds ${viewLength(view)} < ${n}`);
      }
    }
    const g = bindTensors(this.#rt, this.#pipes.lookahead, [n, 0, 0, 0], [
      v.hyper,
      v.params,
      v.delta,
      v.saved,
    ]);
    dispatch1d(pass, this.#pipes.lookahead, g, n, this.#wg);
  }

  /** Error feedback, momentum and weight decay of one parameter (views start at the param). */
  encodeFeedback(pass: GPUComputePassEncoder, spec: number[], v: FeedbackViews): void {
    const g = bindTensors(this.#rt, this.#pipes.feedback, spec, [
      v.hyper,
      v.gradSumSq,
      v.params,
      v.grads,
      v.delta,
      this.#basisFloat,
      v.ownIdx,
      v.ownVal,
    ]);
    dispatch1d(pass, this.#pipes.feedback, g, spec[0] * spec[1], this.#wg);
  }

  /** Blocked DCT of one parameter `x` into chunk-major `y`, through scratch `t`. */
  encodeDct(
    pass: GPUComputePassEncoder,
    spec: number[],
    v: { x: TensorView; t: TensorView; y: TensorView },
  ): void {
    const size = spec[0] * spec[1];
    const rows = bindTensors(this.#rt, this.#pipes.dctRows, spec, [v.x, v.t, this.#basisFloat]);
    dispatch1d(pass, this.#pipes.dctRows, rows, size, this.#wg);
    const cols = bindTensors(this.#rt, this.#pipes.dctCols, spec, [v.t, v.y, this.#basisFloat]);
    dispatch1d(pass, this.#pipes.dctCols, cols, size, this.#wg);
  }

  /** Per-chunk top-k of chunk-major `y` into the entry range of `idx`/`val`. */
  encodeTopk(
    pass: GPUComputePassEncoder,
    spec: number[],
    v: { y: TensorView; idx: TensorView; val: TensorView },
  ): void {
    const g = bindTensors(this.#rt, this.#pipes.topk, spec, [v.y, v.idx, v.val]);
    dispatch1d(pass, this.#pipes.topk, g, spec[5], this.#wg);
  }

  /** Fixed-point coefficients of an own result (one per entry) into `q`. */
  encodeOwnFixed(
    pass: GPUComputePassEncoder,
    spec: number[],
    v: { hyper: TensorView; val: TensorView; q: TensorView },
  ): void {
    const g = bindTensors(this.#rt, this.#pipes.ownFixed, spec, [v.hyper, v.val, v.q]);
    dispatch1d(pass, this.#pipes.ownFixed, g, spec[5], this.#wg);
  }

  /** Exact `θ −= lr·sign(decodeFixed(...))` of one parameter. */
  encodeApply(pass: GPUComputePassEncoder, spec: number[], v: ApplyViews): void {
    const g = bindTensors(this.#rt, this.#pipes.apply, spec, [
      v.hyper,
      v.meta,
      v.params,
      this.#basisFixed,
      v.idx,
      v.q,
      v.offsets,
    ]);
    dispatch1d(pass, this.#pipes.apply, g, spec[0] * spec[1], this.#wg);
  }
}
