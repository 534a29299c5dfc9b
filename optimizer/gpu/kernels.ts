/**
 * Typed faces of the DisTrO WGSL kernels: pipelines built once, the shared DCT basis tables,
 * each parameter's `Spec` uniform, and one `encode*` method per kernel that binds views and
 * dispatches into a compute pass; the `encode*Table` methods run a kernel over several blocks in
 * one dispatch (a table of `Spec`s, distro_wgsl.ts `tableSpecWgsl`). The optimizer (distro_gpu.ts) sequences them; tests drive
 * them one at a time against the TypeScript references.
 *
 * @module
 */

import { dctMatrix } from "../dct.ts";
import { fixedBasis } from "../exact.ts";
import { hasFastDct } from "../fast_dct.ts";
import type { ChunkLayout } from "../layout.ts";
import {
  appliesPacked,
  chunkApplyIterations,
  chunkApplyKernel,
  chunkFeedbackKernel,
  chunkGrid,
  chunkRows,
  chunksPerWorkgroup,
  chunkWidth,
  hasChunkKernels,
  MAX_LOOP_ITERATIONS,
  packBasis16,
} from "./chunk_wgsl.ts";
import { fastDctColsKernel, fastDctRowsKernel, fastFeedbackColsKernel } from "./fast_dct_wgsl.ts";
import {
  applyKernel,
  applyVec4Kernel,
  dctColsKernel,
  dctColsVec4Kernel,
  dctRowsKernel,
  dctRowsVec4Kernel,
  decayInPlaceKernel,
  feedbackKernel,
  lookaheadApartKernel,
  lookaheadKernel,
  MAX_GPU_TOPK,
  MAX_GPU_TOPK_ROWS,
  MAX_TABLE_ROWS,
  ownFixedKernel,
  topkKernel,
  topkListIterations,
  topkRowsKernel,
  weightDecayKernel,
} from "./distro_wgsl.ts";
import {
  bindTensors,
  dispatch,
  dispatch1d,
  f32Bits,
  type GpuRuntime,
  grid1d,
  type TensorView,
  viewLength,
} from "../../shaders/mod.ts";

/** The smallest f32 ≥ `x` (finite, non-negative, below 2^128). */
export function f32RoundUp(x: number): number {
  const f = Math.fround(x);
  if (f >= x) return f;
  const bits = new Uint32Array(new Float32Array([f]).buffer);
  bits[0]++;
  return new Float32Array(bits.buffer)[0];
}

/** A parameter as the kernels see it: its chunking plus where its entries live. */
export interface KernelParam {
  readonly layout: ChunkLayout;
  /** Offset of this parameter's `chunks·k` entries in the result buffers. */
  readonly entry: number;
  /** Index of the parameter (into the apply metadata). */
  readonly index: number;
}

/**
 * The DCT tables of every chunk length in use, in two GPU buffers: f32 `C` and `Cᵀ` (each at
 * an offset that is a multiple of 4, for vec4 reads) and the fixed-point `Q` (exact.ts).
 */
export class BasisTables implements Disposable {
  /** f32 tables `C[u·n + i]` and transposes `Cᵀ[i·n + u]`, concatenated. */
  readonly float: GPUBuffer;
  /** i32 fixed-point tables `Q[u·n + i]`, concatenated at offsets that are multiples of 8. */
  readonly fixed: GPUBuffer;
  /** The same fixed-point tables as f32 (exact: every entry is an integer below 2^15). */
  readonly fixedFloat: GPUBuffer;
  /** The same fixed-point tables as i16 pairs (chunk_wgsl.ts `packBasis16`). */
  readonly fixedPacked: GPUBuffer;
  /** `max_{u,i} |Q[u][i]|` per size: the float filter's bound (apply_wgsl.ts). */
  readonly fixedMax = new Map<number, number>();
  readonly #float = new Map<number, [number, number]>();
  readonly #fixed = new Map<number, number>();
  readonly #rt: GpuRuntime;

  constructor(rt: GpuRuntime, sizes: Iterable<number>, label = "distro") {
    this.#rt = rt;
    const distinct = [...new Set(sizes)].sort((a, b) => a - b);
    let floats = 0, fixed = 0;
    for (const n of distinct) {
      const padded = Math.ceil((n * n) / 4) * 4;
      this.#float.set(n, [floats, floats + padded]);
      floats += 2 * padded;
      this.#fixed.set(n, fixed);
      fixed += Math.ceil((n * n) / 8) * 8; // groups of 8 for the packed table
    }
    const f = new Float32Array(Math.max(4, floats));
    const q = new Int32Array(Math.max(8, fixed));
    for (const n of distinct) {
      const c = dctMatrix(n);
      const [at, atT] = this.#float.get(n)!;
      f.set(c, at);
      for (let u = 0; u < n; u++) for (let i = 0; i < n; i++) f[atT + i * n + u] = c[u * n + i];
      const table = fixedBasis(n);
      q.set(table, this.#fixed.get(n)!);
      this.fixedMax.set(n, table.reduce((m, v) => Math.max(m, Math.abs(v)), 0));
    }
    this.float = rt.buffer(`${label} dct basis f32`, f);
    this.fixed = rt.buffer(`${label} dct basis fixed`, q);
    this.fixedFloat = rt.buffer(`${label} dct basis fixed as f32`, Float32Array.from(q));
    this.fixedPacked = rt.buffer(`${label} dct basis fixed as i16 pairs`, packBasis16(q));
  }

  /** Offsets of the size-`n` tables: f32 `C`, f32 `Cᵀ`, fixed `Q` (RangeError if not built). */
  offsets(n: number): { float: number; transposed: number; fixed: number } {
    const f = this.#float.get(n);
    if (f === undefined) throw new RangeError(`no DCT basis of size ${n} was built`);
    return { float: f[0], transposed: f[1], fixed: this.#fixed.get(n)! };
  }

  [Symbol.dispose](): void {
    this.#rt.destroyBuffer(this.float);
    this.#rt.destroyBuffer(this.fixed);
    this.#rt.destroyBuffer(this.fixedFloat);
    this.#rt.destroyBuffer(this.fixedPacked);
  }
}

/** Views bound by {@link DistroKernels.encodeFeedback}. */
export interface FeedbackViews {
  /** 8 words: lr, weight-decay factor, decay, max norm, has_prev (u32), grad sum of squares. */
  hyper: TensorView;
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

/** A streaming kernel's `n` (a multiple of 4) and its views other than `hyper` (each ≥ n). */
function checkFlatViews(kernel: string, n: number, views: Record<string, TensorView>): void {
  for (const [name, view] of Object.entries(views)) {
    if (name !== "hyper" && viewLength(view) < n) {
      throw new RangeError(`${kernel}: "${name}" holds ${viewLength(view)} < ${n}`);
    }
  }
  if (n % 4 !== 0) throw new RangeError(`${kernel}: ${n} elements, not a multiple of 4`);
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
      weightDecay: make("weight-decay", weightDecayKernel),
      feedback: make("feedback", feedbackKernel),
      dctRows: make("dct-rows", dctRowsKernel),
      dctCols: make("dct-cols", dctColsKernel),
      topk: make("topk", topkKernel),
      topkVec4: make("topk-vec4", (wg) => topkKernel(wg, true)),
      topkRows: make("topk-rows", topkRowsKernel),
      topkBounded: make("topk-bounded", (wg) => topkKernel(wg, false, true)),
      topkVec4Bounded: make("topk-vec4-bounded", (wg) => topkKernel(wg, true, true)),
      topkRowsBounded: make("topk-rows-bounded", (wg) => topkRowsKernel(wg, true)),
      ownFixed: make("own-fixed", ownFixedKernel),
      apply: make("apply", applyKernel),
      applyVec4: make("apply-vec4", applyVec4Kernel),
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
    const o1 = basis.offsets(l.n1), o2 = basis.offsets(l.n2);
    return [
      l.shape[0],
      l.shape.length === 2 ? l.shape[1] : 1,
      l.n1,
      l.n2,
      l.colChunks,
      l.chunks,
      l.totalk,
      l.k,
      o1.float,
      o2.float,
      o1.fixed,
      o2.fixed,
      p.entry,
      p.index,
      o2.transposed,
      f32Bits(1 / l.n2),
      f32Bits(f32RoundUp(basis.fixedMax.get(l.n1)! * basis.fixedMax.get(l.n2)!)),
      0,
      0,
      0,
    ];
  }

  /** `saved = θ; θ −= prevLr·sign(δ)` over `n` elements (a multiple of 4). */
  encodeLookahead(
    pass: GPUComputePassEncoder,
    n: number,
    v: { hyper: TensorView; params: TensorView; delta: TensorView; saved: TensorView },
  ): void {
    checkFlatViews("distro lookahead", n, v);
    const g = bindTensors(this.#rt, this.#pipes.lookahead, [n / 4, 0, 0, 0], [
      v.hyper,
      v.params,
      v.delta,
      v.saved,
    ]);
    dispatch1d(pass, this.#pipes.lookahead, g, n / 4, this.#wg);
  }

  /**
   * `ahead = θ − prevLr·sign(δ)` over `n` elements (a multiple of 4) and, with `decays`,
   * `θ = θ·wdFactor` (distro_wgsl.ts `lookaheadApartKernel`; hyper `[prevLr, wdFactor]`).
   */
  encodeLookaheadApart(
    pass: GPUComputePassEncoder,
    n: number,
    decays: boolean,
    v: { hyper: TensorView; params: TensorView; delta: TensorView; ahead: TensorView },
  ): void {
    checkFlatViews("distro lookahead", n, v);
    const wg = this.#wg;
    const pipe = this.#rt.pipeline(
      `distro/lookahead-apart/${decays ? "decay" : "keep"}/wg${wg}`,
      () => lookaheadApartKernel(wg, decays),
    );
    const views = [v.hyper, v.params, v.delta, v.ahead];
    dispatch1d(pass, pipe, bindTensors(this.#rt, pipe, [n / 4, 0, 0, 0], views), n / 4, wg);
  }

  /** `θ = θ·wdFactor` in place over `n` elements (a multiple of 4; hyper `[_, wdFactor]`). */
  encodeDecayInPlace(
    pass: GPUComputePassEncoder,
    n: number,
    v: { hyper: TensorView; params: TensorView },
  ): void {
    checkFlatViews("distro decay", n, v);
    const wg = this.#wg;
    const pipe = this.#rt.pipeline(`distro/decay-in-place/wg${wg}`, () => decayInPlaceKernel(wg));
    dispatch1d(
      pass,
      pipe,
      bindTensors(this.#rt, pipe, [n / 4, 0, 0, 0], [v.hyper, v.params]),
      n / 4,
      wg,
    );
  }

  /**
   * Error feedback and momentum of one parameter (views start at the param): the per-chunk
   * kernel (chunk_wgsl.ts) when the chunk width is a multiple of 4, else the scalar
   * per-element kernel. θ's weight decay is {@link encodeWeightDecay}.
   */
  encodeFeedback(pass: GPUComputePassEncoder, spec: number[], v: FeedbackViews): void {
    const views = [v.hyper, v.grads, v.delta, this.#basisFloat, v.ownIdx, v.ownVal];
    const [rowsN, colsN, n1, n2] = spec;
    if (hasChunkKernels(n2)) {
      const rows = Math.min(2, chunkRows(n1)), width = chunkWidth(n2);
      const group = chunksPerWorkgroup(n2, width, this.#wg);
      const pipe = this.#rt.pipeline(
        `distro/chunk-feedback/n${n2}/r${rows}/w${width}/g${group}`,
        () => chunkFeedbackKernel(n2, rows, width, group),
      );
      const g = bindTensors(this.#rt, pipe, spec, views);
      dispatch(pass, pipe, g, chunkGrid(spec[5], group));
      return;
    }
    const pipe = this.#pipes.feedback;
    dispatch1d(pass, pipe, bindTensors(this.#rt, pipe, spec, views), rowsN * colsN, this.#wg);
  }

  /**
   * `θ = θ₀·wdFactor` over `n` elements (a multiple of 4): `source` θ₀, `params` θ (a
   * different buffer), `hyper` as {@link encodeFeedback}.
   */
  encodeWeightDecay(
    pass: GPUComputePassEncoder,
    n: number,
    v: { hyper: TensorView; source: TensorView; params: TensorView },
  ): void {
    checkFlatViews("distro weight decay", n, v);
    const pipe = this.#pipes.weightDecay;
    const g = bindTensors(this.#rt, pipe, [n / 4, 0, 0, 0], [v.hyper, v.source, v.params]);
    dispatch1d(pass, pipe, g, n / 4, this.#wg);
  }

  /**
   * Whether the DCT of a parameter with this `Spec` can write the per-row maxima that the
   * row-skipping top-k reads ({@link encodeDct}'s `rowMax`): power-of-two chunks (the fast
   * DCT) whose width is a multiple of 4. `rowMax` then holds `chunks·n1` u32 words.
   */
  hasRowMax(spec: readonly number[]): boolean {
    const [, , n1, n2] = spec;
    return hasFastDct(n1) && hasFastDct(n2) && n2 % 4 === 0;
  }

  /**
   * Whether {@link encodeFeedbackDct} handles a parameter with this `Spec`: power-of-two chunks
   * (the fast DCT in both directions).
   */
  hasFusedFeedback(spec: readonly number[]): boolean {
    const [, , n1, n2] = spec;
    return hasFastDct(n1) && hasFastDct(n2);
  }

  /**
   * Error feedback, momentum and the blocked fast DCT of one parameter (only where
   * {@link hasFusedFeedback}): one walk down the chunk columns updates δ and writes the column
   * transform to `t` (fast_dct_wgsl.ts `fastFeedbackColsKernel`), then the row pass writes the
   * chunk-major coefficients `y` and, with `rowMax`, each coefficient row's largest top-k key.
   * The same result as {@link encodeFeedback} then {@link encodeDct}, up to rounding.
   */
  encodeFeedbackDct(
    pass: GPUComputePassEncoder,
    spec: number[],
    v: FeedbackViews & { t: TensorView; y: TensorView; rowMax?: TensorView },
  ): void {
    const [rowsN, colsN, n1, n2] = spec;
    if (!this.hasFusedFeedback(spec)) {
      throw new RangeError(`distro feedback: no fused kernel for ${n1}×${n2} chunks`);
    }
    this.#requireRowMax(spec, v.rowMax);
    const wg = this.#wg;
    // Two columns per invocation where they fit (on llvmpipe faster than one, while four spill
    // 4 × 64 live values: docs/benchmarks.md, "Behind the code").
    const width = colsN % 2 === 0 && n2 % 2 === 0 ? 2 : 1;
    const down = this.#rt.pipeline(
      `distro/fast-feedback-cols/n${n1}/w${width}/wg${wg}`,
      () => fastFeedbackColsKernel(wg, n1, width),
    );
    const views = [v.hyper, v.grads, v.delta, this.#basisFloat, v.ownIdx, v.ownVal, v.t];
    const lines = (rowsN * colsN) / n1 / width;
    dispatch1d(pass, down, bindTensors(this.#rt, down, spec, views), lines, wg);
    this.#encodeFastRows(pass, spec, v);
  }

  /** The fast DCT's row pass: T into chunk-major Y and, with `rowMax`, the row maxima. */
  #encodeFastRows(
    pass: GPUComputePassEncoder,
    spec: number[],
    v: { t: TensorView; y: TensorView; rowMax?: TensorView },
  ): void {
    const [rowsN, colsN, , n2] = spec;
    const wg = this.#wg;
    const rowMax = v.rowMax !== undefined;
    const along = this.#rt.pipeline(
      `distro/fast-dct-rows${rowMax ? "-max" : ""}/n${n2}/wg${wg}`,
      () => fastDctRowsKernel(wg, n2, rowMax),
    );
    const b = bindTensors(this.#rt, along, spec, rowMax ? [v.t, v.y, v.rowMax!] : [v.t, v.y]);
    dispatch1d(pass, along, b, (rowsN * colsN) / n2, wg);
  }

  /** A `rowMax` view (if given) that this parameter's DCT can fill: {@link hasRowMax}, sized. */
  #requireRowMax(spec: number[], rowMax: TensorView | undefined): void {
    if (rowMax === undefined) return;
    if (!this.hasRowMax(spec)) {
      throw new RangeError(`distro DCT: no row maxima for ${spec[2]}×${spec[3]} chunks`);
    }
    this.#checkRowMax(spec, rowMax);
  }

  /**
   * Blocked DCT of one parameter `x` into chunk-major `y`, through scratch `t`. Power-of-two
   * chunks (fast_dct.ts) take the unrolled fast kernels; other chunks whose width is a multiple
   * of 4 the register-blocked dense vec4 kernels, the rest the scalar dense pair. With `rowMax`
   * (only where {@link hasRowMax}) the row pass also writes each coefficient row's largest
   * top-k key there, for {@link encodeTopk}.
   */
  encodeDct(
    pass: GPUComputePassEncoder,
    spec: number[],
    v: { x: TensorView; t: TensorView; y: TensorView; rowMax?: TensorView },
  ): void {
    const [rowsN, colsN, n1, n2] = spec;
    const size = rowsN * colsN;
    this.#requireRowMax(spec, v.rowMax);
    if (hasFastDct(n1) && hasFastDct(n2)) {
      const wg = this.#wg;
      const down = this.#rt.pipeline(
        `distro/fast-dct-cols/n${n1}/wg${wg}`,
        () => fastDctColsKernel(wg, n1),
      );
      const a = bindTensors(this.#rt, down, spec, [v.x, v.t]);
      dispatch1d(pass, down, a, size / n1, wg);
      this.#encodeFastRows(pass, spec, v);
      return;
    }
    if (n2 % 4 === 0) {
      const block = (n: number) => [8, 4, 2, 1].find((r) => n % r === 0)!;
      const ra = block(rowsN), rb = block(n1);
      const colsPipe = this.#rt.pipeline(
        `distro/dct-cols-vec4/r${ra}/wg${this.#wg}`,
        () => dctColsVec4Kernel(this.#wg, ra),
      );
      const rowsPipe = this.#rt.pipeline(
        `distro/dct-rows-vec4/r${rb}/wg${this.#wg}`,
        () => dctRowsVec4Kernel(this.#wg, rb),
      );
      const a = bindTensors(this.#rt, colsPipe, spec, [v.x, v.t, this.#basisFloat]);
      dispatch1d(pass, colsPipe, a, size / 4 / ra, this.#wg);
      const b = bindTensors(this.#rt, rowsPipe, spec, [v.t, v.y, this.#basisFloat]);
      dispatch1d(pass, rowsPipe, b, size / 4 / rb, this.#wg);
      return;
    }
    const rows = bindTensors(this.#rt, this.#pipes.dctRows, spec, [v.x, v.t, this.#basisFloat]);
    dispatch1d(pass, this.#pipes.dctRows, rows, size, this.#wg);
    const cols = bindTensors(this.#rt, this.#pipes.dctCols, spec, [v.t, v.y, this.#basisFloat]);
    dispatch1d(pass, this.#pipes.dctCols, cols, size, this.#wg);
  }

  /**
   * Per-chunk top-k of chunk-major `y` into the entry range of `idx`/`val`; the kernel reading 4
   * coefficients at a time when totalk is a multiple of 4 (same bits either way). With `rowMax`
   * (each coefficient row's largest key, as {@link encodeDct} writes it) only the rows that can
   * hold a winner are read: same bits again. Where the sorted list's worst case could pass
   * llvmpipe's loop limit (`topkListIterations`: from k = 16 on 64×64 chunks) the bounded
   * kernels, whose list turns into a heap after many moves: same bits again.
   */
  encodeTopk(
    pass: GPUComputePassEncoder,
    spec: number[],
    v: { y: TensorView; idx: TensorView; val: TensorView; rowMax?: TensorView },
  ): void {
    const [, , n1, , , , totalk, k] = spec;
    // The plain sorted list where even its worst case stays within llvmpipe's loop limit.
    const bounded = topkListIterations(n1, totalk, k) > MAX_LOOP_ITERATIONS;
    const pipes = this.#pipes;
    if (v.rowMax !== undefined) {
      this.#checkRowMax(spec, v.rowMax);
      const pipe = bounded ? pipes.topkRowsBounded : pipes.topkRows;
      const g = bindTensors(this.#rt, pipe, spec, [v.y, v.idx, v.val, v.rowMax]);
      dispatch1d(pass, pipe, g, spec[5], this.#wg);
      return;
    }
    const pipe = totalk % 4 === 0
      ? (bounded ? pipes.topkVec4Bounded : pipes.topkVec4)
      : (bounded ? pipes.topkBounded : pipes.topk);
    const g = bindTensors(this.#rt, pipe, spec, [v.y, v.idx, v.val]);
    dispatch1d(pass, pipe, g, spec[5], this.#wg);
  }

  #checkRowMax(spec: number[], rowMax: TensorView): void {
    const [, , n1, n2, , chunks] = spec;
    if (n2 % 4 !== 0 || n1 > MAX_GPU_TOPK_ROWS) {
      throw new RangeError(
        `distro row maxima: ${n1}×${n2} chunks (width a multiple of 4, at most ` +
          `${MAX_GPU_TOPK_ROWS} rows)`,
      );
    }
    if (viewLength(rowMax) < chunks * n1) {
      throw new RangeError(
        `distro row maxima: buffer holds ${viewLength(rowMax)} words, needs ${chunks * n1}`,
      );
    }
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

  /**
   * {@link encodeOwnFixed} over several blocks in one dispatch: each row's `entry` counts from
   * the start of the bound `val`/`q` windows.
   */
  encodeOwnFixedTable(
    pass: GPUComputePassEncoder,
    rows: readonly TableRow[],
    v: { hyper: TensorView; val: TensorView; q: TensorView },
  ): void {
    const wg = this.#wg;
    const variant = {
      key: `distro/own-fixed/wg${wg}`,
      source: (t: number) => ownFixedKernel(wg, t),
      workgroups: (spec: readonly number[]) => Math.max(1, Math.ceil(spec[5] / wg)),
    };
    this.#encodeTable(pass, rows, () => variant, [v.hyper, v.val, v.q]);
  }

  /**
   * The pipeline keys of {@link encodeFeedbackColsTable} and {@link encodeFastRowsTable} for a
   * block with this `Spec` (where {@link hasFusedFeedback}): blocks share a dispatch of the
   * column pass when their `cols` keys agree, of the row pass when their `rows` keys do.
   */
  feedbackDctPlan(spec: readonly number[], rowMax: boolean): { cols: string; rows: string } {
    return { cols: this.#feedbackCols(spec).key, rows: this.#fastRows(spec, rowMax).key };
  }

  /**
   * {@link encodeFeedbackDct}'s column pass (error feedback, momentum, column DCT) over several
   * blocks in one dispatch: every row's `offset` counts from the start of the bound `grads`,
   * `delta` and `t` (laid out alike), its `entry` from that of `ownIdx`/`ownVal`.
   */
  encodeFeedbackColsTable(
    pass: GPUComputePassEncoder,
    rows: readonly TableRow[],
    v: FeedbackViews & { t: TensorView },
  ): void {
    const views = [v.hyper, v.grads, v.delta, this.#basisFloat, v.ownIdx, v.ownVal, v.t];
    for (const r of rows) {
      if (!this.hasFusedFeedback(r.spec)) {
        throw new RangeError(
          `distro feedback table: no fused kernel for ${r.spec[2]}×${r.spec[3]}`,
        );
      }
    }
    this.#encodeTable(pass, rows, (spec) => this.#feedbackCols(spec), views);
  }

  /**
   * {@link encodeFeedbackDct}'s row pass over several blocks in one dispatch: T and Y at each
   * row's `offset`, its row maxima (with `rowMax`) at its `rowMax` word.
   */
  encodeFastRowsTable(
    pass: GPUComputePassEncoder,
    rows: readonly TableRow[],
    v: { t: TensorView; y: TensorView; rowMax?: TensorView },
  ): void {
    const rowMax = this.#tableRowMax(rows, v.rowMax);
    const views = v.rowMax ? [v.t, v.y, v.rowMax] : [v.t, v.y];
    this.#encodeTable(pass, rows, (spec) => this.#fastRows(spec, rowMax), views);
  }

  /** The key of {@link encodeTopkTable}'s pipeline for a block with this `Spec`. */
  topkPlan(spec: readonly number[], rowMax: boolean): string {
    return this.#topk(spec, rowMax).key;
  }

  /**
   * {@link encodeTopk} over several blocks in one dispatch: each row's coefficients at its
   * `offset` in `y`, its row maxima (with `rowMax`) at its `rowMax` word, its entries at its
   * `entry` in `idx`/`val`. The same bits as one dispatch per block.
   */
  encodeTopkTable(
    pass: GPUComputePassEncoder,
    rows: readonly TableRow[],
    v: { y: TensorView; idx: TensorView; val: TensorView; rowMax?: TensorView },
  ): void {
    const rowMax = this.#tableRowMax(rows, v.rowMax);
    const views = v.rowMax ? [v.y, v.idx, v.val, v.rowMax] : [v.y, v.idx, v.val];
    this.#encodeTable(pass, rows, (spec) => this.#topk(spec, rowMax), views);
  }

  /** Whether a table binds row maxima: then every row must have them ({@link hasRowMax}). */
  #tableRowMax(rows: readonly TableRow[], rowMax: TensorView | undefined): boolean {
    if (rowMax === undefined) return false;
    for (const r of rows) {
      if (!this.hasRowMax(r.spec)) {
        throw new RangeError(`distro row maxima: none for ${r.spec[2]}×${r.spec[3]} chunks`);
      }
    }
    return true;
  }

  #feedbackCols(spec: readonly number[]): TableVariant {
    const [, colsN, n1, n2] = spec;
    const wg = this.#wg;
    const width = colsN % 2 === 0 && n2 % 2 === 0 ? 2 : 1;
    return {
      key: `distro/fast-feedback-cols/n${n1}/w${width}/wg${wg}`,
      source: (t) => fastFeedbackColsKernel(wg, n1, width, t),
      workgroups: (s) => Math.max(1, Math.ceil((s[0] * s[1]) / s[2] / width / wg)),
    };
  }

  #fastRows(spec: readonly number[], rowMax: boolean): TableVariant {
    const n2 = spec[3];
    const wg = this.#wg;
    return {
      key: `distro/fast-dct-rows${rowMax ? "-max" : ""}/n${n2}/wg${wg}`,
      source: (t) => fastDctRowsKernel(wg, n2, rowMax, t),
      workgroups: (s) => Math.max(1, Math.ceil((s[0] * s[1]) / s[3] / wg)),
    };
  }

  #topk(spec: readonly number[], rowMax: boolean): TableVariant {
    const [, , n1, , , , totalk, k] = spec;
    const wg = this.#wg;
    const bounded = topkListIterations(n1, totalk, k) > MAX_LOOP_ITERATIONS;
    const name = rowMax ? "topk-rows" : totalk % 4 === 0 ? "topk-vec4" : "topk";
    return {
      key: `distro/${name}${bounded ? "-bounded" : ""}/wg${wg}`,
      source: (t) =>
        rowMax ? topkRowsKernel(wg, bounded, t) : topkKernel(wg, totalk % 4 === 0, bounded, t),
      workgroups: (s) => Math.max(1, Math.ceil(s[5] / wg)),
    };
  }

  /**
   * One table dispatch over `rows`, binding `views` from binding 1 on: the pipeline `variant`
   * gives for every row's `Spec` (a RangeError unless they all agree).
   */
  #encodeTable(
    pass: GPUComputePassEncoder,
    rows: readonly TableRow[],
    variantOf: (spec: readonly number[], row: number) => TableVariant,
    views: readonly TensorView[],
  ): void {
    if (rows.length === 0) throw new RangeError("distro table dispatch: no rows");
    const variant = variantOf(rows[0].spec, 0);
    rows.forEach((r, n) => {
      if (variantOf(r.spec, n).key !== variant.key) {
        throw new RangeError(
          `distro table dispatch: row ${n} takes ${variantOf(r.spec, n).key}, not ${variant.key}`,
        );
      }
    });
    const t = dispatchTable(rows, variant.workgroups);
    const pipe = this.#rt.pipeline(`${variant.key}/t${t.rows}`, () => variant.source(t.rows));
    dispatch(pass, pipe, bindTensors(this.#rt, pipe, t.words, views), grid1d(t.workgroups));
  }

  /**
   * The apply pipeline a block with this `Spec` takes ({@link encodeApply}'s choice) and the
   * workgroups it needs. Blocks of one `key` can share an {@link encodeApplyTable}.
   */
  applyPlan(
    spec: number[],
    options: { exactOnly?: boolean; maxEntries?: number } = {},
  ): { key: string; workgroups: number } {
    const v = this.#applyVariant(spec, options);
    return { key: v.key, workgroups: v.workgroups(spec) };
  }

  /**
   * Exact `θ −= lr·sign(decodeFixed(...))` of one parameter: the float-filtered per-chunk kernel
   * (chunk_wgsl.ts) when the chunk width is a multiple of 4, else the scalar 64-bit integer
   * kernel. `maxEntries` (the most entries any chunk has; default: totalk) keeps the per-chunk
   * kernel within {@link MAX_LOOP_ITERATIONS}; `exactOnly` forces the all-integer kernels (tests
   * and benchmarks compare the two).
   */
  encodeApply(
    pass: GPUComputePassEncoder,
    spec: number[],
    v: ApplyViews,
    options: { exactOnly?: boolean; maxEntries?: number } = {},
  ): void {
    const variant = this.#applyVariant(spec, options);
    const pipe = this.#rt.pipeline(variant.key, () => variant.source(0));
    const g = bindTensors(this.#rt, pipe, spec, [...this.#applyViews(v), ...variant.extra]);
    dispatch(pass, pipe, g, grid1d(variant.workgroups(spec)));
  }

  /**
   * {@link encodeApply} over several blocks in one dispatch, each workgroup finding its block in
   * the table (distro_wgsl.ts `tableSpecWgsl`): every row takes the pipeline of the first (the
   * same {@link applyPlan} key, else a RangeError), its `offset` counts from the start of the
   * bound θ, and `metas[param]` locates its entries in the bound `idx`/`q` (and `offsets`)
   * windows. Each chunk computes what {@link encodeApply} computes: the same bits.
   */
  encodeApplyTable(
    pass: GPUComputePassEncoder,
    rows: readonly TableRow[],
    v: ApplyViews,
    options: { exactOnly?: boolean; maxEntries?: readonly number[] } = {},
  ): void {
    const variantOf = (spec: readonly number[], n: number) =>
      this.#applyVariant(spec, {
        exactOnly: options.exactOnly,
        maxEntries: options.maxEntries?.[n],
      });
    const extra = rows.length > 0 ? variantOf(rows[0].spec, 0).extra : [];
    this.#encodeTable(pass, rows, variantOf, [...this.#applyViews(v), ...extra]);
  }

  #applyViews(v: ApplyViews): TensorView[] {
    return [v.hyper, v.meta, v.params, this.#basisFixed, v.idx, v.q, v.offsets];
  }

  /** {@link encodeApply}'s pipeline for a block: key, source (one block or a table), grid. */
  #applyVariant(
    spec: readonly number[],
    options: { exactOnly?: boolean; maxEntries?: number },
  ): ApplyVariant {
    const [, , n1, n2] = spec;
    const wg = this.#wg;
    const fits = chunkApplyIterations(n1, options.maxEntries ?? spec[6]) <= MAX_LOOP_ITERATIONS;
    if (hasChunkKernels(n2) && fits && !options.exactOnly) {
      const rows = chunkRows(n1), width = chunkWidth(n2);
      const group = chunksPerWorkgroup(n2, width, wg);
      const table = appliesPacked(rows, width) ? this.#basis.fixedPacked : this.#basis.fixedFloat;
      return {
        key: `distro/chunk-apply/n${n2}/r${rows}/w${width}/g${group}`,
        source: (t) => chunkApplyKernel(n2, rows, width, group, t),
        workgroups: (s) => Math.ceil(s[5] / group),
        extra: [table],
      };
    }
    const vec4 = n2 % 4 === 0;
    return {
      key: `distro/${vec4 ? "apply-vec4" : "apply"}/wg${wg}`,
      source: (t) => vec4 ? applyVec4Kernel(wg, t) : applyKernel(wg, t),
      workgroups: (s) => Math.max(1, Math.ceil((s[0] * s[1]) / (vec4 ? 4 : 1) / wg)),
      extra: [],
    };
  }
}

/**
 * One row of a table dispatch: a block's `Spec` words, its first element in the bound
 * parameter-shaped views and, for the DCT's row pass and top-k, its first word of row maxima.
 */
export interface TableRow {
  readonly spec: readonly number[];
  readonly offset: number;
  readonly rowMax?: number;
}

/** A pipeline of a table dispatch: its key, its source for a table of `table` rows, its grid. */
interface TableVariant {
  readonly key: string;
  readonly source: (table: number) => string;
  readonly workgroups: (spec: readonly number[]) => number;
}

/** A pipeline of {@link DistroKernels.encodeApply}, with the basis view it binds last. */
interface ApplyVariant extends TableVariant {
  readonly extra: TensorView[];
}

/**
 * The uniform words of a table dispatch (distro_wgsl.ts `tableSpecWgsl`): each row's `Spec`
 * with `_s0` its first workgroup and `_s1` its offset, padded to a power of two rows with rows
 * no workgroup reaches.
 */
function dispatchTable(
  rows: readonly TableRow[],
  workgroups: (spec: readonly number[]) => number,
): { words: number[]; rows: number; workgroups: number } {
  if (rows.length === 0 || rows.length > MAX_TABLE_ROWS) {
    throw new RangeError(`distro table dispatch: ${rows.length} rows (1 to ${MAX_TABLE_ROWS})`);
  }
  const size = 2 ** Math.ceil(Math.log2(rows.length));
  const words: number[] = [];
  let first = 0;
  for (const { spec, offset, rowMax } of rows) {
    if (spec.length !== SPEC_WORDS || offset % 4 !== 0) {
      throw new RangeError(`distro table dispatch: bad row (offset ${offset})`);
    }
    words.push(...spec.slice(0, 17), first, offset, rowMax ?? 0);
    first += workgroups(spec);
  }
  for (let r = rows.length; r < size; r++) {
    words.push(...new Array(17).fill(0), 0xffffffff, 0, 0);
  }
  return { words, rows: size, workgroups: first };
}

/** Words of one `Spec` (distro_wgsl.ts). */
const SPEC_WORDS = 20;
