/**
 * Matrix multiply with transposed operands, optional scale and accumulation, batched by strides.
 * The workhorse of training: a linear layer `y = x·Wᵀ` (W stored `[out, in]` as in Hugging Face)
 * is `nt` forward; its backward is `nn` for the input gradient (`dx = dy·W`) and `tn` with
 * `accumulate` for the weight gradient (`dW += dyᵀ·x`).
 *
 * @example A linear layer, forward and backward (N = 2 rows, in = 3, out = 2)
 * ```ts
 * import { GpuRuntime } from "./gpu.ts";
 * import { Matmul } from "./matmul.ts";
 * using rt = await GpuRuntime.create();
 * using mm = new Matmul(rt);
 * const x = rt.buffer("x", new Float32Array([1, 2, 3, 4, 5, 6]));   // [N, in]
 * const w = rt.buffer("w", new Float32Array([1, 0, 0, 0, 1, 1]));   // [out, in]
 * const y = rt.buffer("y", 2 * 2 * 4), dx = rt.buffer("dx", 2 * 3 * 4);
 * const dw = rt.buffer("dw", 2 * 3 * 4);                             // zeros, accumulated
 * const step = rt.beginStep("linear");
 * mm.encode(step.pass, { a: x, b: w, c: y, m: 2, n: 2, k: 3, layout: "nt" });
 * // Backward with dy = y (as for the loss ½‖y‖²):
 * mm.encode(step.pass, { a: y, b: w, c: dx, m: 2, n: 3, k: 2, layout: "nn" });
 * mm.encode(step.pass, { a: y, b: x, c: dw, m: 2, n: 3, k: 2, layout: "tn", accumulate: true });
 * await step.submit();
 * const out = await rt.read({ buffer: y, size: 16 });
 * if (out.join() !== "1,5,4,11") throw new Error(`y = ${out}`);
 * ```
 *
 * @module
 */

import { type GpuRuntime, resolveView, type TensorView } from "./gpu.ts";
import { f32Bits } from "./gpu.ts";
import {
  bindTensors,
  ceilDiv,
  dispatch,
  dispatch1d,
  grid1d,
  MAX_GRID,
  requireDims,
  requireLength,
} from "./kernel.ts";
import {
  dotKernel,
  type MatmulInputType,
  type MatmulLayout,
  type MatmulOperandTypes,
  operandTypes,
  outerKernel,
  scalarKernel,
  SPLIT_REDUCE_TABLE_ENTRIES,
  splitReduceKernel,
  splitReduceTableKernel,
  tiledKernel,
  tiledVec4Kernel,
  transposeKernel,
  vec4Kernel,
} from "./matmul_wgsl.ts";
import { type MatmulTable, pickMatmulTiling, validateMatmulTable } from "./matmul_picker.ts";
import type { MatmulShapeRule, MatmulTiling, SplitKPolicy } from "./profile.ts";
import { pinnedSplitK, type SplitKPlan, splitKPlan, validateSplitKPolicy } from "./split_k.ts";

export type { MatmulInputType, MatmulLayout, MatmulOperandTypes } from "./matmul_wgsl.ts";

/**
 * Arguments of one matmul. Shapes (row-major, per batch entry):
 * - `nn`: a `[m, k]`, b `[k, n]`, c `[m, n]`
 * - `nt`: a `[m, k]`, b `[n, k]`, c `[m, n]`
 * - `tn`: a `[k, m]`, b `[k, n]`, c `[m, n]`
 */
export interface MatmulArgs {
  /** Left operand. */
  readonly a: TensorView;
  /** Right operand. */
  readonly b: TensorView;
  /** Output (read too when `accumulate`). */
  readonly c: TensorView;
  /** Rows of C. */
  readonly m: number;
  /** Columns of C. */
  readonly n: number;
  /** Reduction length. */
  readonly k: number;
  /** Operand layout (default `"nn"`). */
  readonly layout?: MatmulLayout;
  /**
   * `true`: add the product into C (`c = alpha·a·b + c`: gradient accumulation). `"chain"`: carry
   * on C's sum term by term (each output's accumulator starts at C and every product is added to
   * it in K order), so a reduction split over K into consecutive calls gives the same bits as one
   * call over all of K (the LM head's input gradient over vocabulary blocks). Needs `alpha` 1 and
   * a variant whose sums run along K one term at a time (every variant but `dot`).
   */
  readonly accumulate?: boolean | "chain";
  /** Scale of the product (default 1): `c = alpha·a·b (+ c)`. */
  readonly alpha?: number;
  /** Number of independent products (default 1), one per `stride` step of each operand. */
  readonly batch?: number;
  /** Elements between consecutive A matrices (default `m·k`; 0 shares one A across the batch). */
  readonly strideA?: number;
  /** Elements between consecutive B matrices (default `k·n`; 0 shares one B across the batch). */
  readonly strideB?: number;
  /** Elements between consecutive C matrices (default `m·n`; at least `m·n`). */
  readonly strideC?: number;
  /**
   * Storage type of A and B (default `"f32"`), or of each (`{ a: "f32", b: "f16" }`: f32
   * gradients times f16 weights). `"f16"` halves an operand's memory traffic (weights kept in half
   * precision) and needs the device's `shader-f16` (`rt.hasF16`). `"bf16"` (bfloat16, `Uint16Array`
   * bits on the host, element 2i in the low half of word i) does the same on any adapter, with f32's
   * range and 8 bits of mantissa. Products and sums stay f32.
   */
  readonly inputType?: MatmulOperandTypes;
  /**
   * Run this kernel variant instead of the fastest valid one (a RangeError if the shape does not
   * allow it). Callers that split one product into several calls use it to keep every part on the
   * variant the whole product would use, so the split gives the same bits.
   */
  readonly variant?: MatmulVariant;
  /**
   * K indices per split-K slice, instead of the length the split-K policy picks (`k` or more:
   * unsplit). Callers that split one product into several calls pass the whole product's
   * `mm.splitK(args).sliceK` to every part, so the parts sum in the same slices and give the
   * whole's bits. A length below `k` needs the `tiled` variant, a multiple of its depth, and not
   * `accumulate: "chain"`.
   */
  readonly sliceK?: number;
  /**
   * Run this tiling instead of the one the table picks for this shape (the reference tiling or
   * one of the kernel's rules': a RangeError otherwise). Callers that split one product into
   * several calls pass the whole product's `mm.tilingFor(args)`, as they pass its `variant` and
   * `sliceK`, so every part runs as the whole would.
   */
  readonly tiling?: MatmulTiling;
  /**
   * When the product splits K, leave its reduce pending (default false): pending reduces run
   * together, one dispatch for up to {@link SPLIT_REDUCE_TABLE_ENTRIES} products, at
   * {@link Matmul.flushReduces} (or earlier, when the deferred scratch, the table or C's binding
   * is full, or a product reads or writes a pending output). Until then C holds its old value:
   * the caller flushes before anything outside this kernel reads C (the weight gradients, read
   * after the backward). Same bits as an immediate reduce.
   */
  readonly deferReduce?: boolean;
}

/**
 * The partial sums of a split product whose reduce {@link Matmul.encodeUnreduced} left to the
 * kernel that reads the product: that kernel adds them with shaders/split_sum_wgsl.ts, the
 * reduce's own expression, so it reads the bits the reduce would have stored.
 */
export interface SplitPartials {
  /**
   * `[slices, m, n]` f32: the output at `i` is `Σ_s partials[s·count + i]` in slice order. In the
   * kernel's scratch: valid until the next split product of the same {@link Matmul} is encoded
   * (unless that product keeps them: {@link Matmul.encodeUnreduced}).
   */
  readonly partials: TensorView;
  /** Where the product belongs, `[m, n]`: its reader writes the sum there. */
  readonly c: TensorView;
  /** Number of slices S (at least 2). */
  readonly slices: number;
  /** Outputs per slice: m·n. */
  readonly count: number;
  /** The product adds into C (`accumulate: true`): the output is the sum plus C's old value. */
  readonly accumulate: boolean;
}

/** A split product whose reduce waits for {@link Matmul.flushReduces}. */
interface PendingReduce {
  /**
   * The table entry: partials offset, C offset (elements), count, slices, accumulate, alpha,
   * strideC, batch.
   */
  readonly words: readonly number[];
  /** Outputs to reduce: batch · m · n. */
  readonly outputs: number;
  /** C's bytes `[start, end)` in its buffer. */
  readonly start: number;
  readonly end: number;
}

/** Options of a {@link Matmul} beyond its tiling. */
export interface MatmulOptions {
  /** When to split K (default: the runtime profile's `splitK`; `SPLIT_K_OFF` never splits). */
  readonly splitK?: SplitKPolicy;
  /**
   * Tilings by shape class (shaders/matmul_picker.ts). Default: the runtime profile's
   * `matmulByShape` when the kernel runs the profile's tiling, none when a tiling is given (a
   * tiling passed to the constructor runs every shape, as benchmarks' `--tiling` wants).
   */
  readonly byShape?: readonly MatmulShapeRule[];
}

/**
 * Which generated kernel runs a given call (exposed so tests can cover each one): `packed`
 * (`nn`/`nt` as transposes of the K-fastest operands into scratch, then `vec4` as `tn`), `vec4`
 * (register-blocked, both operands read as vec4), `outer` (register-blocked, vec4 along N, A
 * scalar), `transposed` (`nt` as a transpose of B into scratch, then `outer`), `dot`
 * (register-blocked vec4 dot products along K), `scalar` (any shape), `tiled` (workgroup memory,
 * GPUs; splits K into slices where the split-K policy says, {@link Matmul.splitK}).
 */
export type MatmulVariant = "packed" | "vec4" | "outer" | "transposed" | "dot" | "scalar" | "tiled";

/**
 * The matmul kernel. Each call runs the tiling its shape class picks (shaders/matmul_picker.ts),
 * while split-K slices every product as the reference tiling `tiling` would, so the choice never
 * changes a result. Pipelines are built on first use of each (layout, variant, tiling) and cached
 * in the runtime; shapes travel as uniforms, so new shapes cost no compile. The `transposed` and
 * `packed` variants keep two scratch buffers (A: `batch·m·k` floats, B: `batch·n·k`, each grown
 * on demand to the largest call's), and split-K two (the partial sums reduced at once, grown to the
 * largest product's, and those of deferred reduces, made at the policy's whole budget; each at most
 * `scratchBytes`): dispose the kernel to free them.
 */
export class Matmul {
  readonly #rt: GpuRuntime;
  /**
   * Scratch: transposed A (`packed`), B (`transposed`, `packed` for `nt`), split-K partials
   * (immediate, deferred).
   */
  #scratch: (GPUBuffer | undefined)[] = [undefined, undefined, undefined, undefined];
  /** Deferred reduces (slot 3 holds their partials), all writing into `#pendingBuffer`. */
  #pending: PendingReduce[] = [];
  #pendingBuffer: GPUBuffer | null = null;
  /** Bytes of slot 3 the pending products' partials use (each region 256-byte aligned). */
  #pendingBytes = 0;
  readonly #retired: GPUBuffer[] = [];
  /**
   * The reference tiling (the runtime profile's unless overridden): split-K plans with it, and
   * it runs every shape no rule claims.
   */
  readonly tiling: MatmulTiling;
  /** When the `tiled` variant splits K (shaders/split_k.ts). */
  readonly splitKPolicy: SplitKPolicy;
  /**
   * The rules in use: the profile's (or the options'), less those whose tiling this adapter
   * cannot run (too much workgroup memory or too many invocations). Dropping a rule changes no
   * result, since every tiled tiling gives the same bits.
   */
  readonly byShape: readonly MatmulShapeRule[];

  constructor(
    rt: GpuRuntime,
    tiling?: MatmulTiling,
    options: MatmulOptions = {},
  ) {
    const reference = tiling ?? rt.profile.matmul;
    validateMatmulTiling(reference, rt.limits);
    const policy = options.splitK ?? rt.profile.splitK;
    validateSplitKPolicy(policy);
    const rules = options.byShape ?? (tiling === undefined ? rt.profile.matmulByShape : []);
    validateMatmulTable({ matmul: reference, matmulByShape: rules });
    for (const r of rules) {
      const problem = tilingShapeProblem(r.tiling);
      if (problem !== null) throw new RangeError(`matmul rule "${r.name}": ${problem}`);
    }
    this.#rt = rt;
    this.tiling = reference;
    this.splitKPolicy = policy;
    this.byShape = rules.filter((r) => tilingLimitProblem(r.tiling, rt.limits) === null);
  }

  /**
   * The tiling {@link encode} runs for these arguments: `args.tiling` when pinned, else the
   * table's pick for the shape ({@link pickMatmulTiling}).
   */
  tilingFor(args: MatmulArgs): MatmulTiling {
    const table: MatmulTable = { matmul: this.tiling, matmulByShape: this.byShape };
    const pinned = args.tiling;
    if (pinned !== undefined) {
      const own = [this.tiling, ...this.byShape.map((r) => r.tiling)];
      const same = (t: MatmulTiling) => JSON.stringify(t) === JSON.stringify(pinned);
      if (!own.some(same)) {
        throw new RangeError(
          `matmul: tiling ${JSON.stringify(pinned)} is neither the reference tiling nor one of ` +
            `this kernel's rules'; usable: ${own.map((t) => JSON.stringify(t)).join(", ")}`,
        );
      }
      return pinned;
    }
    const { m, n, k } = args;
    return pickMatmulTiling(table, {
      layout: args.layout ?? "nn",
      m,
      n,
      k,
      batch: args.batch ?? 1,
    });
  }

  /**
   * How {@link encode} cuts K for these arguments: `slices: 1` unsplit. Split-K runs on the
   * `tiled` variant only, never for `accumulate: "chain"` (whose sum runs through C in K order);
   * `args.sliceK` pins the slice length, else the policy picks ({@link splitKPlan}) with the
   * reference tiling's tiles and depth, whichever tiling the call runs: the slicing, and so the
   * bits, never depend on the table.
   */
  splitK(args: MatmulArgs): SplitKPlan {
    const { m, n, k } = args;
    const shape = { m, n, k, batch: args.batch ?? 1 };
    const limits = this.#rt.limits;
    let plan: SplitKPlan;
    if (args.sliceK !== undefined) {
      plan = pinnedSplitK(args.sliceK, this.tilingFor(args), shape, limits);
    } else if (args.accumulate === "chain" || this.variant(args) !== "tiled") {
      return { slices: 1, sliceK: k };
    } else {
      plan = splitKPlan(this.splitKPolicy, this.tiling, shape, limits);
    }
    if (plan.slices > 1 && args.accumulate === "chain") {
      throw new RangeError(
        `matmul: accumulate "chain" cannot split K (sliceK ${args.sliceK} < k ${k}): its sum ` +
          `runs through C in K order`,
      );
    }
    return plan;
  }

  /** The kernel variant {@link encode} will use for these arguments. */
  variant(args: MatmulArgs): MatmulVariant {
    const usable = matmulVariants(args, this.tiling);
    if (args.variant === undefined) return usable[0];
    if (!usable.includes(args.variant)) {
      throw new RangeError(
        `matmul ${args.layout ?? "nn"} [m, n, k] = [${args.m}, ${args.n}, ${args.k}]: variant ` +
          `"${args.variant}" cannot run this shape or alignment here; usable: ${usable.join(", ")}`,
      );
    }
    return args.variant;
  }

  /** Encode `c = alpha·op(a)·op(b) (+ c)` into `pass`. */
  encode(pass: GPUComputePassEncoder, args: MatmulArgs): void {
    this.#encode(pass, args);
  }

  /**
   * {@link encode}, except that a product that splits K skips its reduce: C is left unwritten and
   * the partials are returned, for the one kernel that reads C next to add them itself (one
   * dispatch fewer). A product left unreduced must be a plain `c = a·b (+ c)`: `alpha` 1, batch
   * 1, no `deferReduce` (a RangeError otherwise), so its output is the partials' sum (plus C's old
   * value with `accumulate`).
   *
   * `keep`: partials an earlier call returned for the same C, still unreduced (a product that
   * accumulates onto an unreduced one). This product's partials go beside them in the scratch, and
   * the result lists both, in order: the reader adds each product's sum onto the one before, as
   * the reduces would have. When this product runs unsplit, or both would not fit the policy's
   * scratch budget, the kept partials are reduced into C first and C is written as usual.
   *
   * Returns the partials the reader must sum into C, in order (none: C holds the product).
   */
  encodeUnreduced(
    pass: GPUComputePassEncoder,
    args: MatmulArgs,
    keep: readonly SplitPartials[] = [],
  ): SplitPartials[] {
    if (args.deferReduce === true) {
      throw new RangeError("matmul: a product left unreduced cannot defer its reduce");
    }
    return this.#encode(pass, args, keep);
  }

  /** `keep` null: reduce as usual; else leave a split product unreduced beside `keep`. */
  #encode(
    pass: GPUComputePassEncoder,
    args: MatmulArgs,
    keep: readonly SplitPartials[] | null = null,
  ): SplitPartials[] {
    const { m, n, k } = args;
    const layout = args.layout ?? "nn";
    const batch = args.batch ?? 1;
    requireDims("matmul", { m, n, k, batch });
    if (batch > MAX_GRID) throw new RangeError(`matmul: batch ${batch} exceeds ${MAX_GRID}`);
    if (layout !== "nn" && layout !== "nt" && layout !== "tn") {
      throw new RangeError(`matmul: layout must be "nn", "nt" or "tn", got ${layout}`);
    }
    const types = operandTypes(args.inputType ?? "f32");
    for (const t of [types.a, types.b]) {
      if (t !== "f32" && t !== "f16" && t !== "bf16") {
        throw new RangeError(`matmul: inputType must be "f32", "f16" or "bf16", got ${t}`);
      }
    }
    if ((types.a === "f16" || types.b === "f16") && !this.#rt.hasF16) {
      throw new RangeError(
        `matmul: inputType "f16" needs the "shader-f16" feature, which adapter ` +
          `"${this.#rt.info.description}" does not provide (or was not requested)`,
      );
    }
    const bytes = elementBytes;
    const type = types.a === types.b ? types.a : `${types.a}x${types.b}`;
    const s = strides(args);
    requireDims("matmul", { strideA: s.a, strideB: s.b, strideC: s.c }, { allowZero: true });
    if (batch > 1 && s.c < m * n) {
      // Overlapping outputs would be written by several invocations in no fixed order.
      throw new RangeError(`matmul: strideC ${s.c} is less than m·n = ${m * n}; outputs overlap`);
    }
    const aShape = layout === "tn" ? `[k, m] = [${k}, ${m}]` : `[m, k] = [${m}, ${k}]`;
    const bShape = layout === "nt" ? `[n, k] = [${n}, ${k}]` : `[k, n] = [${k}, ${n}]`;
    const aNeed = (batch - 1) * s.a + m * k, bNeed = (batch - 1) * s.b + k * n;
    requireLength(
      `matmul ${layout}: binding "a" (${types.a})`,
      args.a,
      aNeed,
      aShape,
      bytes(types.a),
    );
    requireLength(
      `matmul ${layout}: binding "b" (${types.b})`,
      args.b,
      bNeed,
      bShape,
      bytes(types.b),
    );
    requireLength(`matmul ${layout}: binding "c"`, args.c, (batch - 1) * s.c + m * n, `[m, n]`);
    const variant = this.variant(args);
    if (args.accumulate === "chain") {
      if ((args.alpha ?? 1) !== 1) {
        throw new RangeError(`matmul: accumulate "chain" needs alpha 1, got ${args.alpha}`);
      }
      if (variant === "dot") {
        throw new RangeError(
          'matmul: accumulate "chain" cannot run on the "dot" variant (its sums are not in K order)',
        );
      }
    }
    // Checked for every variant, so a pinned slice length no variant can run is refused.
    const split = this.splitK(args);
    // Pending reduces write their outputs later: a product touching one waits for it.
    for (const v of [args.a, args.b, args.c]) this.#flushIfTouched(pass, v);
    if (keep !== null && split.slices > 1 && ((args.alpha ?? 1) !== 1 || batch !== 1)) {
      throw new RangeError(
        `matmul [m, n, k] = [${m}, ${n}, ${k}]: a product left unreduced must be a plain ` +
          `c = a·b (+ c) (alpha ${args.alpha}, batch ${batch})`,
      );
    }
    const at = keep === null || split.slices === 1 ? null : this.#besideKept(keep, split, m * n);
    // C's old value must hold the kept products before this one adds to it or overwrites it.
    if (keep !== null && at === null) { for (const p of keep) this.#reduceKept(pass, p); }
    if (variant === "transposed") {
      this.#encodeTransposed(pass, args, batch, s, types.b);
      return [];
    }
    if (variant === "packed") {
      this.#encodePacked(pass, args, batch, s, types);
      return [];
    }
    if (split.slices > 1) {
      const own = this.#encodeSplit(pass, args, split, batch, s, types, at);
      return own === null ? [] : [...keep!, own];
    }
    const picked = this.tilingFor(args);
    const t = variant === "tiled" ? loadsFor(picked, args, s, k) : picked;
    const key = `matmul/${layout}/${type}/${variant === "tiled" ? t.strategy : variant}/` +
      `${t.rows}x${t.cols}/${t.workgroup.join("x")}` +
      (variant === "tiled" ? `/d${t.depth}${variantKey(t)}` : "");
    const pipeline = this.#rt.pipeline(key, () => {
      switch (variant) {
        case "outer":
          return outerKernel(layout as "nn" | "tn", t, types);
        case "dot":
          return dotKernel(t, types);
        case "scalar":
          return scalarKernel(layout, t, types);
        case "tiled":
          return tiledGenerator(t)(layout, t, types);
        case "vec4":
          return vec4Kernel(layout, t, types);
      }
    });
    const params = [
      m,
      n,
      k,
      args.accumulate === "chain" ? 2 : args.accumulate ? 1 : 0,
      f32Bits(args.alpha ?? 1),
      s.a,
      s.b,
      s.c,
    ];
    const group = bindTensors(this.#rt, pipeline, params, [args.a, args.b, args.c]);
    const [wx, wy] = t.workgroup;
    let cols: number, rows: number;
    switch (variant) {
      case "vec4":
      case "outer":
        cols = ceilDiv(n / 4, t.cols / 4);
        rows = ceilDiv(m, t.rows);
        break;
      case "dot":
        cols = ceilDiv(n, t.cols / 4);
        rows = ceilDiv(m, t.rows);
        break;
      case "scalar":
        cols = ceilDiv(n, 4);
        rows = ceilDiv(m, t.rows);
        break;
      case "tiled":
        cols = ceilDiv(n, t.cols);
        rows = ceilDiv(m, t.rows);
        break;
    }
    const grid: [number, number, number] = [ceilDiv(cols, wx), ceilDiv(rows, wy), batch];
    if (grid[0] > MAX_GRID || grid[1] > MAX_GRID) {
      throw new RangeError(`matmul: [${m}, ${n}] needs a ${grid.join("×")} grid, over ${MAX_GRID}`);
    }
    dispatch(pass, pipeline, group, grid);
    return [];
  }

  /**
   * Where in the reduce scratch a split product of `plan` over `count` outputs may leave its
   * partials beside `keep` (bytes, after the last kept region, aligned), or null when together
   * they would pass the policy's scratch budget.
   */
  #besideKept(keep: readonly SplitPartials[], plan: SplitKPlan, count: number): number | null {
    const align = this.#rt.limits.minStorageBufferOffsetAlignment;
    const end = Math.max(
      0,
      ...keep.map((p) => resolveView(p.partials)).map((v) => v.offset + v.size),
    );
    const at = Math.ceil(end / align) * align;
    return at + plan.slices * count * 4 <= this.#deferBudget() ? at : null;
  }

  /** Encode the reduce of kept partials `p` into their C: what their reader would have summed. */
  #reduceKept(pass: GPUComputePassEncoder, p: SplitPartials): void {
    const [wx, wy] = this.tiling.workgroup;
    this.#encodeReduce(pass, p.partials, p.c, {
      count: p.count,
      slices: p.slices,
      accumulate: p.accumulate,
      alpha: 1,
      strideC: p.count,
      batch: 1,
    }, Math.min(wx * wy, 256));
  }

  /** One invocation per output adds its slices in order, then alpha and C's old value. */
  #encodeReduce(
    pass: GPUComputePassEncoder,
    partials: TensorView,
    c: TensorView,
    r: {
      count: number;
      slices: number;
      accumulate: boolean;
      alpha: number;
      strideC: number;
      batch: number;
    },
    wg: number,
  ): void {
    const reduce = this.#rt.pipeline(`matmul/split-k-reduce/${wg}`, () => splitReduceKernel(wg));
    const params = [
      r.count,
      r.slices,
      r.accumulate ? 1 : 0,
      f32Bits(r.alpha),
      r.strideC,
      r.batch,
      0,
      0,
    ];
    const group = bindTensors(this.#rt, reduce, params, [partials, c]);
    dispatch1d(pass, reduce, group, r.batch * r.count, wg);
  }

  /**
   * Grow the transpose scratch now to at least `a` bytes for A and `b` for B, so no later call
   * outgrows it mid-step (an outgrown buffer stays alive until dispose: work already encoded may
   * bind it). Only register tilings transpose; on tiled ones this does nothing.
   */
  reserveTransposeScratch(bytes: { a: number; b: number }): void {
    if (this.tiling.strategy !== "register") return;
    if (bytes.a > 0) this.#grow(0, bytes.a, "matmul transpose scratch A");
    if (bytes.b > 0) this.#grow(1, bytes.b, "matmul transpose scratch B");
  }

  /** Free the scratch buffers of the `transposed` and `packed` variants and of split-K. */
  [Symbol.dispose](): void {
    for (const b of [...this.#retired, ...this.#scratch.filter((x) => x !== undefined)]) {
      this.#rt.destroyBuffer(b);
    }
    this.#retired.length = 0;
    this.#scratch = [undefined, undefined, undefined, undefined];
    this.#pending = [];
    this.#pendingBuffer = null;
    this.#pendingBytes = 0;
  }

  /** How many split products wait for {@link flushReduces}. */
  get pendingReduces(): number {
    return this.#pending.length;
  }

  /**
   * Encode the reduces that products with `deferReduce` left pending, one dispatch for all (they
   * write disjoint outputs of one buffer), so their outputs hold the product from here on. Each
   * output is `alpha·(p₀ + p₁ + … + p_{S−1}) (+ c)` as an immediate reduce computes it.
   */
  flushReduces(pass: GPUComputePassEncoder): void {
    const pending = this.#pending, buffer = this.#pendingBuffer;
    if (pending.length === 0 || buffer === null) return;
    const align = this.#rt.limits.minStorageBufferOffsetAlignment;
    const lo = Math.floor(Math.min(...pending.map((r) => r.start)) / align) * align;
    const hi = Math.max(...pending.map((r) => r.end));
    const words = new Array<number>(8 * SPLIT_REDUCE_TABLE_ENTRIES).fill(0);
    pending.forEach((r, i) => {
      words.splice(8 * i, 8, ...r.words);
      words[8 * i + 1] -= lo / 4;
    });
    const wg = Math.min(this.tiling.workgroup[0] * this.tiling.workgroup[1], 256);
    const reduce = this.#rt.pipeline(
      `matmul/split-k-reduce-table/${wg}`,
      () => splitReduceTableKernel(wg),
    );
    const partials = { buffer: this.#scratch[3]!, size: this.#pendingBytes };
    const out = { buffer, offset: lo, size: hi - lo };
    const group = bindTensors(this.#rt, reduce, words, [partials, out]);
    const [x, y] = grid1d(ceilDiv(Math.max(...pending.map((r) => r.outputs)), wg));
    dispatch(pass, reduce, group, [x, y, pending.length]);
    this.#pending = [];
    this.#pendingBuffer = null;
    this.#pendingBytes = 0;
  }

  /**
   * Forget the pending reduces without encoding them: for a caller whose step was abandoned
   * before submission (its split products never run), so a later pass cannot reduce their stale
   * partials into outputs another step owns.
   */
  discardReduces(): void {
    this.#pending = [];
    this.#pendingBuffer = null;
    this.#pendingBytes = 0;
  }

  /** Bytes of partials the deferred reduces may hold at once: the policy's scratch budget. */
  #deferBudget(): number {
    const l = this.#rt.limits;
    return Math.min(this.splitKPolicy.scratchBytes, l.maxStorageBufferBindingSize, l.maxBufferSize);
  }

  /** Flush first if `view` (read or written by the product now encoded) overlaps a pending output. */
  #flushIfTouched(pass: GPUComputePassEncoder, view: TensorView): void {
    if (this.#pending.length === 0) return;
    const { buffer, offset, size } = resolveView(view);
    if (buffer !== this.#pendingBuffer) return;
    if (this.#pending.some((r) => offset < r.end && r.start < offset + size)) {
      this.flushReduces(pass);
    }
  }

  /**
   * Split-K (shaders/split_k.ts): the tiled kernel sums each slice of K into partials
   * `[batch, slices, m, n]` in scratch (one workgroup per tile and slice), then one invocation
   * per output adds its slices in order and applies alpha and accumulation. Both dispatches sit
   * in the same pass, which orders them; later split matmuls of the pass reuse the scratch.
   * With `leaveAt` (bytes into the scratch), the partials go there, the reduce is skipped and
   * they are returned ({@link encodeUnreduced}).
   */
  #encodeSplit(
    pass: GPUComputePassEncoder,
    args: MatmulArgs,
    plan: SplitKPlan,
    batch: number,
    s: { a: number; b: number; c: number },
    types: { a: MatmulInputType; b: MatmulInputType },
    leaveAt: number | null,
  ): SplitPartials | null {
    const leave = leaveAt !== null;
    const { m, n, k } = args;
    const layout = args.layout ?? "nn";
    const t = loadsFor(this.tilingFor(args), args, s, plan.sliceK);
    const type = types.a === types.b ? types.a : `${types.a}x${types.b}`;
    const bytes = plan.slices * batch * m * n * 4;
    const deferred = !leave && args.deferReduce === true && bytes <= this.#deferBudget();
    let view: TensorView;
    if (deferred) {
      view = this.#deferredPartials(pass, args, {
        bytes,
        slices: plan.slices,
        batch,
        strideC: s.c,
      });
    } else {
      const at = leaveAt ?? 0;
      const before = this.#scratch[2];
      const buffer = this.#grow(2, at + bytes, "matmul split-K partials");
      // Regrown: the kept partials stay in the retired buffer, so this product starts afresh.
      view = { buffer, offset: buffer === before ? at : 0, size: bytes };
    }
    const key = `matmul/${layout}/${type}/${t.strategy}-split/${t.rows}x${t.cols}/` +
      `${t.workgroup.join("x")}/d${t.depth}${variantKey(t)}`;
    const pipeline = this.#rt.pipeline(key, () => tiledGenerator(t)(layout, t, types, true));
    const params = [m, n, k, plan.slices, plan.sliceK, s.a, s.b, 0];
    const group = bindTensors(this.#rt, pipeline, params, [args.a, args.b, view]);
    const [wx, wy] = t.workgroup;
    const grid: [number, number, number] = [
      ceilDiv(n, t.cols * wx),
      ceilDiv(m, t.rows * wy),
      batch * plan.slices,
    ];
    if (grid[0] > MAX_GRID || grid[1] > MAX_GRID) {
      throw new RangeError(`matmul: [${m}, ${n}] needs a ${grid.join("×")} grid, over ${MAX_GRID}`);
    }
    dispatch(pass, pipeline, group, grid);
    if (leave) {
      const count = m * n;
      return {
        partials: view,
        c: args.c,
        slices: plan.slices,
        count,
        accumulate: !!args.accumulate,
      };
    }
    if (deferred) return null;
    // One-dimensional, so within every adapter's maxComputeWorkgroupSizeX (256 at least).
    this.#encodeReduce(pass, view, args.c, {
      count: m * n,
      slices: plan.slices,
      accumulate: !!args.accumulate,
      alpha: args.alpha ?? 1,
      strideC: s.c,
      batch,
    }, Math.min(wx * wy, 256));
    return null;
  }

  /**
   * A region of the deferred scratch (slot 3, grown once to the whole budget, so a step's groups
   * never depend on what earlier steps grew) for a product of `bytes` partials writing `args.c`,
   * with its reduce queued; the queue is flushed first when the region, the table, or C's
   * binding (one buffer, at most maxStorageBufferBindingSize) would overflow.
   */
  #deferredPartials(
    pass: GPUComputePassEncoder,
    args: MatmulArgs,
    d: { bytes: number; slices: number; batch: number; strideC: number },
  ): TensorView {
    const { m, n } = args;
    const { bytes, batch, strideC } = d;
    const c = resolveView(args.c);
    const start = c.offset, end = c.offset + ((batch - 1) * strideC + m * n) * 4;
    const align = this.#rt.limits.minStorageBufferOffsetAlignment;
    const at = Math.ceil(this.#pendingBytes / align) * align;
    const lo = Math.floor(Math.min(start, ...this.#pending.map((r) => r.start)) / align) * align;
    const hi = Math.max(end, ...this.#pending.map((r) => r.end));
    const full = this.#pending.length > 0 && (
      c.buffer !== this.#pendingBuffer || at + bytes > this.#deferBudget() ||
      this.#pending.length === SPLIT_REDUCE_TABLE_ENTRIES ||
      hi - lo > this.#rt.limits.maxStorageBufferBindingSize
    );
    if (full) this.flushReduces(pass);
    const offset = this.#pending.length === 0 ? 0 : at;
    const scratch = this.#grow(3, this.#deferBudget(), "matmul split-K deferred partials");
    this.#pending.push({
      words: [
        offset / 4,
        start / 4,
        m * n,
        d.slices,
        args.accumulate ? 1 : 0,
        f32Bits(args.alpha ?? 1),
        strideC,
        batch,
      ],
      outputs: batch * m * n,
      start,
      end,
    });
    this.#pendingBuffer = c.buffer;
    this.#pendingBytes = offset + bytes;
    return { buffer: scratch, offset, size: bytes };
  }

  /**
   * Scratch slot `slot`, grown to at least `bytes` (rounded up to 16 so vec4 views cover it).
   * An outgrown buffer may already be bound by dispatches of this step: retired, not destroyed.
   */
  #grow(slot: 0 | 1 | 2 | 3, bytes: number, label: string): GPUBuffer {
    const size = Math.ceil(bytes / 16) * 16;
    let buffer = this.#scratch[slot];
    if (!buffer || buffer.size < size) {
      if (buffer) this.#retired.push(buffer);
      buffer = this.#rt.buffer(label, size);
      this.#scratch[slot] = buffer;
    }
    return buffer;
  }

  /** `nt` on CPUs: B `[n, k]` → scratch `[k, n]`, then the `nn` outer kernel. */
  #encodeTransposed(
    pass: GPUComputePassEncoder,
    args: MatmulArgs,
    batch: number,
    s: { a: number; b: number; c: number },
    type: MatmulInputType,
  ): void {
    const { n, k } = args;
    const b = this.#transpose(pass, { src: args.b, rows: n, cols: k, stride: s.b, batch, type }, 1);
    this.encode(pass, { ...args, b, layout: "nn", strideB: n * k, variant: "outer" });
  }

  /**
   * `nn` and `nt` on CPUs: the operands stored with K slowest go through a transpose into
   * scratch (A `[m, k]` → `[k, m]`, for `nt` also B `[n, k]` → `[k, n]`), then the `tn` vec4
   * kernel, whose loads per FMA are the fewest (see {@link vec4Kernel}).
   */
  #encodePacked(
    pass: GPUComputePassEncoder,
    args: MatmulArgs,
    batch: number,
    s: { a: number; b: number; c: number },
    types: { a: MatmulInputType; b: MatmulInputType },
  ): void {
    const { m, n, k } = args;
    const layout = args.layout ?? "nn";
    const src = { rows: m, cols: k, stride: s.a, batch, type: types.a };
    const a = this.#transpose(pass, { ...src, src: args.a }, 0);
    let b = args.b, strideB = s.b;
    if (layout === "nt") {
      const bt = { src: args.b, rows: n, cols: k, stride: s.b, batch, type: types.b };
      b = this.#transpose(pass, bt, 1);
      strideB = n * k;
    }
    this.encode(pass, { ...args, a, b, layout: "tn", strideA: m * k, strideB, variant: "vec4" });
  }

  /**
   * Encode a transpose of `batch` matrices `[rows, cols]` (`stride` elements apart) into scratch
   * slot `slot` (grown on demand), packed `[cols, rows]` per batch entry; returns its view.
   */
  #transpose(
    pass: GPUComputePassEncoder,
    t: {
      src: TensorView;
      rows: number;
      cols: number;
      stride: number;
      batch: number;
      type: MatmulInputType;
    },
    slot: 0 | 1,
  ): TensorView {
    const { rows, cols, batch, type } = t;
    // Rounded up to 16 bytes so the vec4 view covers every element.
    const bytes = Math.ceil((batch * rows * cols * elementBytes(type)) / 16) * 16;
    const label = `matmul transpose scratch ${slot === 0 ? "A" : "B"}`;
    const buffer = this.#grow(slot, bytes, label);
    const wg = this.tiling.workgroup;
    const key = `matmul/transpose/${type}/${wg.join("x")}`;
    const pipeline = this.#rt.pipeline(key, () => transposeKernel(wg, type));
    const view = { buffer, size: bytes };
    const group = bindTensors(this.#rt, pipeline, [rows, cols, t.stride, rows * cols], [
      t.src,
      view,
    ]);
    dispatch(pass, pipeline, group, [ceilDiv(cols / 4, wg[0]), ceilDiv(rows / 4, wg[1]), batch]);
    return view;
  }
}

/**
 * The variants that can run `args` under `tiling`, fastest first (the first is the default):
 * `tiled` alone on GPU tilings (either tiled strategy); on CPU tilings `packed` (`nn`/`nt`) and `vec4` where every
 * operand row is whole vec4 (M too for `packed` and `tn`), then `transposed` and `dot` for `nt`,
 * `outer` for `nn`/`tn` with vec4 rows of B and C, and `scalar` always. All but `dot` add each
 * output's products in K order, so on one adapter they give the same bits.
 */
export function matmulVariants(args: MatmulArgs, tiling: MatmulTiling): MatmulVariant[] {
  if (tiling.strategy !== "register") return ["tiled"];
  const layout = args.layout ?? "nn";
  const s = strides(args);
  const aligned16 = (v: TensorView) => resolveView(v).offset % 16 === 0;
  const vec4 = vec4Usable(args, tiling, s, aligned16) ? ["vec4" as const] : [];
  // packed: transposes to the tn vec4 kernel, so M and K must be multiples of 4 too.
  const packed = layout !== "tn" && vec4.length > 0 && args.m % 4 === 0 && tiling.rows % 4 === 0
    ? ["packed" as const]
    : [];
  if (layout === "nt") {
    const ok = args.k % 4 === 0 && s.a % 4 === 0 && s.b % 4 === 0 && aligned16(args.a) &&
      aligned16(args.b);
    if (!ok) return ["scalar"];
    const outerOk = args.n % 4 === 0 && s.c % 4 === 0 && aligned16(args.c);
    return outerOk
      ? [...packed, ...vec4, "transposed", "dot", "scalar"]
      : [...packed, ...vec4, "dot", "scalar"];
  }
  const ok = args.n % 4 === 0 && s.b % 4 === 0 && s.c % 4 === 0 && aligned16(args.b) &&
    aligned16(args.c);
  return ok ? [...packed, ...vec4, "outer", "scalar"] : ["scalar"];
}

/**
 * The `vec4` variant reads A, B and C as vec4: every row it reads is a whole number of vec4
 * (N, and K or for `tn` M, multiples of 4; strides too) and every view starts on 16 bytes.
 */
function vec4Usable(
  args: MatmulArgs,
  tiling: MatmulTiling,
  s: { a: number; b: number; c: number },
  aligned16: (v: TensorView) => boolean,
): boolean {
  const layout = args.layout ?? "nn";
  const along = layout === "tn" ? args.m % 4 === 0 && tiling.rows % 4 === 0 : args.k % 4 === 0;
  return along && args.n % 4 === 0 && s.a % 4 === 0 && s.b % 4 === 0 && s.c % 4 === 0 &&
    aligned16(args.a) && aligned16(args.b) && aligned16(args.c);
}

/** Bytes of one stored operand element. */
function elementBytes(t: MatmulInputType): number {
  return t === "f32" ? 4 : 2;
}

function strides(args: MatmulArgs): { a: number; b: number; c: number } {
  const { m, n, k } = args;
  return { a: args.strideA ?? m * k, b: args.strideB ?? k * n, c: args.strideC ?? m * n };
}

/** The kernel generator of a tiled strategy. */
function tiledGenerator(t: MatmulTiling): typeof tiledKernel {
  return t.strategy === "tiled-vec4" ? tiledVec4Kernel : tiledKernel;
}

/**
 * The pipeline-key suffix of a `tiled-vec4` tiling's variants: `/x2` double-buffered, `/u` K loop
 * unrolled, `/g4` vec4 storage loads, `/kr` a workgroup array per K row (nothing for the plain
 * kernel). Each variant gives the same bits, so a key that left one out would silently run its
 * twin's kernel.
 */
function variantKey(t: MatmulTiling): string {
  return ((t.buffers ?? 1) === 2 ? "/x2" : "") + (t.unrollK ? "/u" : "") +
    (t.vec4Loads ? "/g4" : "") + (t.kRows ? "/kr" : "");
}

/**
 * The tiling a tiled call runs: `t`, less its vec4 storage loads (`vec4Loads`) where this call's
 * operands are not whole vec4 along their stored-contiguous axis, which then run the scalar fetch
 * (the same staged values, so the same bits). A vec4 load needs A's rows (`nn`/`nt`: K; `tn`: M)
 * and B's (`nn`/`tn`: N; `nt`: K) and both strides in multiples of 4 elements, views on 16
 * bytes, and, where an operand is read along K, the K range a workgroup sums to start and end on
 * a multiple of 4 (`sliceK` of a split product, else `k`; the tiling's depth is one already).
 */
export function loadsFor(
  t: MatmulTiling,
  args: MatmulArgs,
  s: { a: number; b: number },
  sliceK: number,
): MatmulTiling {
  if (!t.vec4Loads) return t;
  const layout = args.layout ?? "nn";
  const aRow = layout === "tn" ? args.m : args.k;
  const bRow = layout === "nt" ? args.k : args.n;
  const aligned16 = (v: TensorView) => resolveView(v).offset % 16 === 0;
  const kEnds = layout === "tn" ? [] : [args.k, sliceK];
  const whole = [aRow, bRow, s.a, s.b, ...kEnds].every((x) => x % 4 === 0) &&
    aligned16(args.a) && aligned16(args.b);
  if (whole) return t;
  const { vec4Loads: _, ...scalar } = t;
  return scalar;
}

/**
 * Bytes of workgroup memory a tiled kernel stages: `depth` K rows of A's tile rows and B's tile
 * columns, f32, plus the vec4 of padding `tiled-vec4` adds to a row written along K, times the
 * tiling's `buffers` (two slices when double-buffered).
 */
export function tiledWorkgroupBytes(t: MatmulTiling, layout: MatmulLayout): number {
  const [wx, wy] = t.workgroup;
  const pad = t.strategy === "tiled-vec4" ? 4 : 0;
  const aRow = t.rows * wy + (layout !== "tn" ? pad : 0);
  const bRow = t.cols * wx + (layout === "nt" ? pad : 0);
  return t.depth * (aRow + bRow) * 4 * (t.buffers ?? 1);
}

/**
 * Throws a RangeError naming the tiling and the rule or adapter limit it breaks: what `new Matmul`
 * checks. Pure, so a benchmark's list of tilings can be checked against a GPU's limits (NVIDIA's
 * Vulkan driver: 48 KiB of workgroup memory, 1024 invocations) on a machine without one.
 */
export function validateMatmulTiling(t: MatmulTiling, limits: TilingLimits): void {
  const problem = tilingShapeProblem(t) ?? tilingLimitProblem(t, limits);
  if (problem !== null) throw new RangeError(`matmul tiling ${JSON.stringify(t)}: ${problem}`);
}

/** The adapter limits a tiling is checked against. */
type TilingLimits = Pick<
  GPUSupportedLimits,
  "maxComputeWorkgroupStorageSize" | "maxComputeInvocationsPerWorkgroup"
>;

/** What makes `t` no tiling at all (whatever the adapter), or null. */
function tilingShapeProblem(t: MatmulTiling): string | null {
  if (t.strategy !== "register" && t.strategy !== "tiled" && t.strategy !== "tiled-vec4") {
    return `strategy must be "register", "tiled" or "tiled-vec4"`;
  }
  if (!Number.isInteger(t.rows) || t.rows < 1 || t.rows > 16) return "rows must be 1..16";
  if (t.strategy === "register" && (t.cols % 4 !== 0 || t.cols < 4 || t.cols > 32)) {
    return "register cols must be a multiple of 4 in 4..32";
  }
  if (t.workgroup.some((w) => !Number.isInteger(w) || w < 1)) return "workgroup must be >= 1";
  if (t.buffers !== undefined && t.buffers !== 1 && t.buffers !== 2) {
    return "buffers must be 1 or 2";
  }
  if (t.buffers === 2 && t.strategy !== "tiled-vec4") {
    return "buffers: 2 (double buffering) needs the tiled-vec4 strategy";
  }
  for (const flag of ["unrollK", "vec4Loads", "kRows"] as const) {
    if (t[flag] !== undefined && t[flag] !== true) return `${flag} must be true or left out`;
    if (t[flag] && t.strategy !== "tiled-vec4") return `${flag} needs the tiled-vec4 strategy`;
  }
  if (t.kRows && t.buffers === 2) return "kRows needs one buffer (buffers: 1)";
  if (t.vec4Loads && t.depth % 4 !== 0) {
    return `vec4Loads needs a depth that is a multiple of 4 (a vec4 along K stays in one slice)`;
  }
  if (t.strategy === "register") return null;
  if (!Number.isInteger(t.cols) || t.cols < 1 || t.cols > 16) return "cols must be 1..16";
  if (!Number.isInteger(t.depth) || t.depth < 1) return "depth must be a positive integer";
  if (t.strategy === "tiled-vec4" && (t.rows % 4 !== 0 || t.cols % 4 !== 0)) {
    return "tiled-vec4 rows and cols must be multiples of 4";
  }
  return null;
}

/** Which of the adapter's limits a well-formed tiling `t` exceeds, or null. */
function tilingLimitProblem(t: MatmulTiling, limits: TilingLimits): string | null {
  if (t.strategy === "register") return null;
  const threads = t.workgroup[0] * t.workgroup[1];
  if (threads > limits.maxComputeInvocationsPerWorkgroup) {
    return `${threads} invocations per workgroup, over the adapter's ` +
      `maxComputeInvocationsPerWorkgroup ${limits.maxComputeInvocationsPerWorkgroup}`;
  }
  const bytes = Math.max(...(["nn", "nt", "tn"] as const).map((l) => tiledWorkgroupBytes(t, l)));
  if (bytes > limits.maxComputeWorkgroupStorageSize) {
    return `stages ${bytes} bytes of workgroup memory, over the adapter's ` +
      `maxComputeWorkgroupStorageSize ${limits.maxComputeWorkgroupStorageSize}`;
  }
  return null;
}
