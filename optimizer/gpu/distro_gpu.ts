/**
 * DisTrO on the GPU: the optimizer the trainer plugs in as `--optimizer distro`.
 *
 * Buffers (P = floats in the flat parameter buffer, E = Σ chunks·k over parameters,
 * S = the largest segment of P, at most one storage binding and model/memory_plan.ts
 * `DISTRO_WAVE_BYTES`, and at least the largest block: below). The `[P]` ones are split into segments
 * like the parameters when those exceed one buffer (model/params.ts `paramSegments`; options
 * `segments`):
 * - `delta` `[P]`: residual momentum δ; `saved` `[P]`: θ before the in-place lookahead, or
 *   the lookahead weights the networked client trains on ({@link DistroOptimizer.lookaheadWeights});
 * - `ownIdx[2]`, `ownVal[2]` `[E]`: this step's and the previous step's own result
 *   (indices within chunks, unquantized values), double-buffered;
 * - `ownQ` `[E]`: fixed-point coefficients of the previous own result (single-node apply);
 * - `scratchT`, `scratchY` `[S]`: DCT intermediate and coefficients of the current wave of
 *   blocks, each at its place in θ;
 * - `rowMax` `[max Σ chunks·n1 over a wave]` (u32): each coefficient row's largest top-k key,
 *   from the DCT's row pass, so top-k reads only the rows that can hold a winner;
 * - uploaded aggregate (`aggOffsets`, `aggIdx`, `aggQ`), grown on demand.
 *
 * No binding is larger than `maxStorageBufferBindingSize` (128 MiB on lavapipe, where the
 * Llama-1B embedding alone is 1002 MiB): the whole-layout passes (lookahead, weight decay) bind
 * ranges that fit, and the per-chunk kernels (feedback, DCT, top-k, apply) take a parameter
 * larger than a binding in blocks of whole chunk rows (chunk_blocks.ts), each a parameter of its
 * own. The result entries of a block, and of the uploaded aggregate (aggregate_blocks.ts), are
 * bound as windows.
 *
 * The per-chunk kernels run as table dispatches (dispatch_table.ts): one dispatch per pipeline
 * over all the blocks that share it, their segment and one binding window, each workgroup
 * finding its block in a uniform table. Generate runs in waves, the blocks whose θ window fits
 * S (one wave when a segment fits a binding): their feedback, DCT and top-k, then the next.
 *
 * Nothing leaves the GPU per parameter per step except the compressed result
 * ({@link DistroOptimizer.readResult}: indices and values, E each) and the aggregate coming
 * in ({@link DistroOptimizer.encodeApply}).
 *
 * @module
 */

import {
  type DistroState,
  type FlatBuffers,
  type Optimizer,
  type OptimizerState,
  type OptimizerStateBuffers,
  type OptimizerStateScalars,
  type OptimizerStepArgs,
  segmentBuffers,
} from "../optimizer.ts";
import { quantizeSigns, type SparseParam } from "../compress.ts";
import { type DistroConfig, validateDistroConfig } from "../distro.ts";
import type { AggregatedParam } from "../exact.ts";
import { type ChunkLayout, chunkLayout } from "../layout.ts";
import { type ChunkBlock, chunkBlocks, type EntryWindow, entryWindow } from "../chunk_blocks.ts";
import { packAggregate } from "../aggregate_blocks.ts";
import { BasisTables, DistroKernels, type KernelParam, type TableRow } from "./kernels.ts";
import { type TableGroup, tableGroups, type WordWindow } from "../dispatch_table.ts";
import { MAX_TABLE_ROWS } from "./distro_wgsl.ts";
import { type GpuRuntime, type GpuStep, resolveView, type TensorView } from "../../shaders/mod.ts";
import {
  bindingRanges,
  DISTRO_WAVE_BYTES,
  ParamBuffers,
  type ParamLayout,
  type ParamSegment,
  segmentIndex,
} from "../../model/mod.ts";

/** A parameter in the flat buffer: name, row-major shape and first element (a multiple of 64). */
export interface FlatParam {
  readonly name: string;
  readonly shape: readonly number[];
  readonly offset: number;
}

/** Options of {@link DistroOptimizer}. */
export interface DistroOptimizerOptions {
  /** The parameters, in model order (e.g. model/params.ts `layout.entries`). */
  readonly params: readonly FlatParam[];
  /** Floats in the flat parameter buffer. */
  readonly size: number;
  /**
   * How the parameters are split into buffers (model/params.ts `paramSegments`); δ and the saved
   * weights are split alike. Default: one buffer of `size` floats.
   */
  readonly segments?: readonly ParamSegment[];
  /** DisTrO hyper-parameters. */
  readonly config: DistroConfig;
  /** Label prefix of GPU objects. */
  readonly label?: string;
  /**
   * Time every kernel in its own GPU-timestamped pass, named after the kernel (read them from
   * `GpuStep.timings` after submit). For benchmarks: each pass boundary costs a little.
   */
  readonly profile?: boolean;
}

/** Throws unless the learning rate `name` is finite and not negative. */
function checkLearningRate(name: string, lr: number): void {
  if (!(lr >= 0 && Number.isFinite(lr))) {
    throw new RangeError(`DistroOptimizer: bad learning rate ${name} = ${lr}`);
  }
}

/**
 * One block of a parameter as the kernels bind it (chunk_blocks.ts): the whole parameter when it
 * fits one storage binding.
 */
interface BoundBlock {
  /** The block's chunk rows. */
  readonly block: ChunkBlock;
  /** First element in the flat buffer. */
  readonly offset: number;
  /** The `Spec` words of the block (its entry relative to `entries`, its metadata slot). */
  readonly spec: number[];
  /** The window of the result buffers holding the block's `chunks·k` entries. */
  readonly entries: EntryWindow;
}

/** Per-step arguments of {@link DistroOptimizer.encodeGenerate}. */
export interface GenerateArgs {
  readonly params: FlatBuffers;
  readonly grads: FlatBuffers;
  /** Learning rate of this step. */
  readonly lr: number;
  /** `[1]` sum of squared gradients (needed when clipping is configured), else null. */
  readonly gradSumSq: TensorView | null;
}

/**
 * GPU DisTrO. Per step, for a networked client:
 * `encodeLookaheadApart` (before forward) → forward/backward on {@link lookaheadWeights} →
 * `encodeGenerate` → submit → `readResult` (to encode and send) … later `encodeApply` with the
 * exact aggregate of every
 * peer's result (exact.ts `aggregateFixed`, canonical order). Aggregate the *decoded payloads*,
 * the client's own included: in bf16 mode the local values are not bf16-rounded, and using
 * them would make this client's update differ from its peers'.
 * For single-node training, {@link encodeStep} does generate, applies the previous own result
 * and sets up the next lookahead, all on the GPU (Psyche's `examples/train.rs`).
 */
export class DistroOptimizer implements Optimizer {
  readonly name = "distro";
  /** Hyper-parameters in use. */
  readonly config: DistroConfig;
  /** Chunking of every parameter, in order. */
  readonly layouts: readonly ChunkLayout[];
  /** `[P]` residual momentum δ. */
  readonly delta: ParamBuffers;
  readonly #rt: GpuRuntime;
  readonly #label: string;
  readonly #size: number;
  readonly #params: readonly (KernelParam & { offset: number; blocks: BoundBlock[] })[];
  readonly #entries: number;
  readonly #basis: BasisTables;
  readonly #kernels: DistroKernels;
  readonly #saved: ParamBuffers;
  readonly #segments: readonly ParamSegment[];
  /** Every parameter's blocks, in order: block n is slot n of the apply metadata. */
  readonly #blocks: readonly BoundBlock[];
  readonly #ownFixedGroups: readonly TableGroup[];
  readonly #ownApplyGroups: readonly TableGroup[];
  readonly #waves: readonly Wave[];
  readonly #ownIdx: [GPUBuffer, GPUBuffer];
  readonly #ownVal: [GPUBuffer, GPUBuffer];
  readonly #ownQ: GPUBuffer;
  readonly #scratchT: GPUBuffer;
  readonly #scratchY: GPUBuffer;
  readonly #rowMax: GPUBuffer;
  readonly #hyperLook: GPUBuffer;
  readonly #hyperGen: GPUBuffer;
  readonly #hyperApply: GPUBuffer;
  readonly #ownMeta: GPUBuffer;
  readonly #aggMeta: GPUBuffer;
  readonly #ownFixedHyper: GPUBuffer;
  #agg: { offsets: GPUBuffer; idx: GPUBuffer; q: GPUBuffer } | null = null;
  /** Which of the double buffers holds the latest own result. */
  #cur = 0;
  #hasOwn = false;
  /**
   * The pending lookahead: none, `in-place` (θ moved, `saved` holds it: generate or an undo
   * restores it), or `apart` (in `saved`; θ unmoved and already decayed for the step).
   */
  #lookahead: "none" | "in-place" | "apart" = "none";
  readonly #profile: boolean;
  readonly #owned: GPUBuffer[] = [];

  constructor(rt: GpuRuntime, options: DistroOptimizerOptions) {
    const { params, size, config } = options;
    if (!Number.isInteger(size) || size <= 0 || size % 4 !== 0) {
      throw new RangeError(`DistroOptimizer: size must be a positive multiple of 4, got ${size}`);
    }
    validateDistroConfig(config);
    const label = this.#label = options.label ?? "distro";
    this.#rt = rt;
    this.#profile = options.profile ?? false;
    this.#size = size;
    this.config = { ...config };
    this.layouts = params.map((p) => chunkLayout(p.name, p.shape, config));
    this.#basis = new BasisTables(rt, this.layouts.flatMap((l) => [l.n1, l.n2]), label);
    this.#kernels = new DistroKernels(rt, this.#basis);
    let entry = 0;
    let largest = 1;
    let slots = 0;
    const limits = {
      maxBytes: rt.limits.maxStorageBufferBindingSize,
      alignBytes: rt.limits.minStorageBufferOffsetAlignment,
    };
    this.#params = this.layouts.map((layout, index) => {
      const p = params[index];
      if (p.offset % 64 !== 0 || p.offset + layout.size > size) {
        throw new RangeError(
          `DistroOptimizer: parameter "${p.name}" at offset ${p.offset} (size ${layout.size}) ` +
            `must start at a multiple of 64 floats and end within ${size}`,
        );
      }
      const blocks = chunkBlocks(layout, limits).map((block) => {
        const first = entry + block.firstChunk * layout.k;
        const entries = entryWindow(first, block.layout.chunks * layout.k, limits.alignBytes / 4);
        const slot = slots++;
        largest = Math.max(largest, block.layout.size);
        const spec = this.#kernels.spec({
          layout: block.layout,
          entry: entries.first,
          index: slot,
        });
        return { block, offset: p.offset + block.offset, spec, entries };
      });
      const kp = { layout, entry, index, offset: p.offset, blocks };
      entry += layout.chunks * layout.k;
      return kp;
    });
    this.#entries = Math.max(1, entry);
    const buf = (name: string, init: number | Uint32Array) => {
      const b = rt.buffer(`${label} ${name}`, init);
      this.#owned.push(b);
      return b;
    };
    const segments = options.segments ?? [{ start: 0, size, first: 0, end: params.length }];
    const last = segments[segments.length - 1];
    if (segments[0]?.start !== 0 || last.start + last.size !== size) {
      throw new RangeError(`DistroOptimizer: segments must cover [0, ${size})`);
    }
    this.#params.forEach((p) => {
      const seg = segments[segmentIndex(segments, p.offset)];
      if (p.offset + p.layout.size > seg.start + seg.size) {
        throw new RangeError(
          `DistroOptimizer: parameter "${p.layout.name}" crosses the end of its segment`,
        );
      }
    });
    this.#segments = segments;
    this.#blocks = this.#params.flatMap((p) => p.blocks);
    // The own result's tables: its blocks' entries are fixed, and so are their groups.
    this.#ownFixedGroups = this.#groups(() => "own-fixed", (b) => [ownEntries(b)]);
    this.#ownApplyGroups = this.#groups(
      (b) => this.#kernels.applyPlan(b.spec, { maxEntries: b.block.layout.k }).key,
      (b) => [this.#paramSpan(b), ownEntries(b)],
    );
    // The own result's apply metadata: k entries per chunk from the block's first entry.
    const ownMeta = new Uint32Array(4 * slots);
    for (const g of this.#ownApplyGroups) {
      for (const n of g.members) {
        const b = this.#blocks[n];
        ownMeta.set([0, ownEntries(b)[0] - g.windows[1][0], b.block.layout.k], 4 * n);
      }
    }
    const flat = flatLayout(params, this.layouts, size);
    this.delta = new ParamBuffers(rt, { label: `${label} delta`, layout: flat, segments });
    this.#saved = new ParamBuffers(rt, { label: `${label} saved params`, layout: flat, segments });
    this.#ownIdx = [buf("own idx 0", this.#entries * 4), buf("own idx 1", this.#entries * 4)];
    this.#ownVal = [buf("own val 0", this.#entries * 4), buf("own val 1", this.#entries * 4)];
    this.#ownQ = buf("own q", this.#entries * 4);
    // The scratch holds a wave of blocks laid out as in θ: as many as one binding holds.
    const maxWords = Math.floor(limits.maxBytes / 4);
    const spanned = segments.reduce((a, seg) => Math.max(a, seg.size), 0);
    const scratchWords = Math.max(largest, Math.min(maxWords, spanned, DISTRO_WAVE_BYTES / 4));
    this.#waves = this.#planWaves(scratchWords);
    const rowMaxWords = this.#waves.reduce((a, w) => Math.max(a, w.rowMaxWords), 1);
    this.#scratchT = buf("dct scratch", scratchWords * 4);
    this.#scratchY = buf("dct coefficients", scratchWords * 4);
    this.#rowMax = buf("dct row maxima", rowMaxWords * 4);
    this.#hyperLook = buf("lookahead hyper", 16);
    this.#hyperGen = buf("generate hyper", 32);
    this.#hyperApply = buf("apply hyper", 16);
    this.#ownFixedHyper = buf("own-fixed hyper", new Uint32Array([0, config.quantize1bit ? 1 : 0]));
    this.#ownMeta = buf("own apply meta", ownMeta);
    // Written by each apply: where each block's offsets and entries start in its group's windows.
    this.#aggMeta = buf("aggregate apply meta", 16 * slots);
  }

  /** True once a result has been generated (error feedback and lookahead are active). */
  get hasResult(): boolean {
    return this.#hasOwn;
  }

  /** Forgets δ and the previous result (cold start, `zero_optim`). Encoded into `step`. */
  encodeReset(step: GpuStep): void {
    this.delta.encodeClear(step.encoder);
    this.#hasOwn = false;
    // A lookahead apart from θ already decayed θ for its step; generate must still skip that.
    if (this.#lookahead === "in-place") this.#lookahead = "none";
  }

  /**
   * `saved = θ; θ −= prevLr·sign(δ)`, before forward/backward. A no-op before the first
   * result (as in Psyche). The next {@link encodeGenerate} restores θ exactly.
   */
  encodeLookahead(step: GpuStep, args: { params: FlatBuffers; prevLr: number }): void {
    if (!this.#hasOwn) return;
    const params = this.#flat("params", args.params);
    this.#rt.write(this.#hyperLook, new Float32Array([args.prevLr]));
    for (const r of this.#ranges()) {
      this.#kernels.encodeLookahead(this.#pass(step, "lookahead"), r.n, {
        hyper: this.#hyperLook,
        params: r.view(params),
        delta: r.view(this.delta.buffers),
        saved: r.view(this.#saved.buffers),
      });
    }
    this.#lookahead = "in-place";
  }

  /**
   * The networked client's lookahead, apart from θ: `P = θ − prevLr·sign(δ)` into
   * {@link lookaheadWeights} (P = θ before the first result) and, in the same pass, θ's decoupled
   * weight decay for the step about to be trained, `θ = θ·(1 − lr·wd)`. Forward and backward
   * then read P (train/trainer.ts `encodeGradients`' `weights`), and the next
   * {@link encodeGenerate} neither restores nor decays θ. θ never holds the lookahead, so it can
   * be hashed, saved or served at any time, and the two θ streams of the restoring weight-decay
   * pass are saved. The values are bit-identical to {@link encodeLookahead}'s: the same
   * `θ − prevLr·sign(δ)` and the same single multiplication by the same f32 factor.
   * `readOnly` (a warm-up's dry step) leaves θ unwritten: no weight decay for this step, the
   * decaying pass being built by {@link encodeDryDecay} on a scratch buffer instead.
   */
  encodeLookaheadApart(
    step: GpuStep,
    args: { params: FlatBuffers; prevLr: number; lr: number; readOnly?: boolean },
  ) {
    const { prevLr, lr } = args;
    checkLearningRate("prevLr", prevLr);
    checkLearningRate("lr", lr);
    const params = this.#flat("params", args.params);
    const decays = (this.config.weightDecay ?? 0) !== 0 && !args.readOnly;
    this.#rt.write(
      this.#hyperLook,
      new Float32Array([this.#hasOwn ? prevLr : 0, this.#decayFactor(lr), 0, 0]),
    );
    this.#encodeLookaheadPasses(step, params, decays);
    this.#lookahead = "apart";
  }

  /**
   * θ's decoupled weight decay for a step this client does not train, `θ = θ·(1 − lr·wd)`, in
   * place: the factor and the multiplication of {@link encodeLookaheadApart}, so θ stays
   * bit-identical with the clients that trained. Nothing is encoded without weight decay.
   */
  encodeDecay(step: GpuStep, args: { params: FlatBuffers; lr: number }): void {
    checkLearningRate("lr", args.lr);
    const params = this.#flat("params", args.params);
    if ((this.config.weightDecay ?? 0) === 0) return;
    this.#rt.write(this.#hyperLook, new Float32Array([0, this.#decayFactor(args.lr), 0, 0]));
    for (const r of this.#ranges()) {
      this.#kernels.encodeDecayInPlace(this.#pass(step, "weight-decay"), r.n, {
        hyper: this.#hyperLook,
        params: r.view(params),
      });
    }
  }

  /**
   * Runs {@link encodeLookaheadApart}'s weight-decaying pass (its pipeline, its dispatches)
   * with factor 1 on `scratch`, a `[P]` buffer laid out like θ whose contents do not matter,
   * instead of on θ, and writes {@link lookaheadWeights}: a warm-up builds that pipeline without
   * writing θ (even `θ·1` can quiet a NaN or, where WGSL lets a GPU flush subnormals, zero one).
   * The optimizer's state (δ, own result, pending lookahead) is unchanged; nothing is encoded
   * without weight decay or while θ's saved copy is pending. No lookahead may share its step:
   * they write the same hyperparameter buffer.
   */
  encodeDryDecay(step: GpuStep, args: { scratch: FlatBuffers }): void {
    const scratch = this.#flat("scratch", args.scratch);
    if ((this.config.weightDecay ?? 0) === 0 || this.#lookahead === "in-place") return;
    this.#rt.write(this.#hyperLook, new Float32Array([0, 1, 0, 0]));
    this.#encodeLookaheadPasses(step, scratch, true);
  }

  /**
   * The lookahead pass over `params`, one dispatch per binding range, with {@link #hyperLook}'s
   * factors: `saved = params − prevLr·sign(δ)`, and `params = params·wdFactor` when `decays`.
   */
  #encodeLookaheadPasses(step: GpuStep, params: readonly GPUBuffer[], decays: boolean): void {
    for (const r of this.#ranges()) {
      this.#kernels.encodeLookaheadApart(this.#pass(step, "lookahead"), r.n, decays, {
        hyper: this.#hyperLook,
        params: r.view(params),
        delta: r.view(this.delta.buffers),
        ahead: r.view(this.#saved.buffers),
      });
    }
  }

  /** `[P]` where {@link encodeLookaheadApart} puts the lookahead weights to train on. */
  get lookaheadWeights(): ParamBuffers {
    return this.#saved;
  }

  /** Copies the saved θ back (undoing the lookahead), e.g. before a checkpoint. */
  encodeUndoLookahead(step: GpuStep, params: FlatBuffers): void {
    if (this.#lookahead !== "in-place") return;
    this.#copy(step.encoder, this.#saved.buffers, this.#flat("params", params));
    this.#lookahead = "none";
  }

  /**
   * Undo the lookahead, fold the gradients into δ (after subtracting the previous own
   * result), apply weight decay to θ and select this step's coefficients on the GPU.
   */
  encodeGenerate(step: GpuStep, args: GenerateArgs): void {
    const { lr } = args;
    checkLearningRate("lr", lr);
    const params = this.#flat("params", args.params);
    const grads = this.#flat("grads", args.grads);
    const clip = this.config.clipGradNorm ?? 0;
    if (clip > 0 && args.gradSumSq === null) {
      throw new RangeError("DistroOptimizer: clipGradNorm > 0 needs gradSumSq");
    }
    // θ before this step is read from `saved`: the copy taken before the lookahead, which also
    // undoes it, so the weight-decay pass writes the canonical θ·wd directly. Without an active
    // lookahead (first step, after a settle) θ is copied there first. Without weight decay a
    // buffer copy restores θ (θ·1 = θ), cheaper than a shader pass on every adapter.
    // After encodeLookaheadApart, θ was never moved and is already decayed.
    const encoder = step.encoder;
    const lookahead = this.#lookahead;
    this.#lookahead = "none";
    const decays = (this.config.weightDecay ?? 0) !== 0 && lookahead !== "apart";
    if (decays && lookahead === "none") {
      this.#copy(encoder, params, this.#saved.buffers);
    } else if (!decays && lookahead === "in-place") {
      this.#copy(encoder, this.#saved.buffers, params);
    }
    const hyper = new ArrayBuffer(32);
    new Float32Array(hyper, 0, 4).set([
      lr,
      this.#decayFactor(lr),
      this.config.decay,
      clip > 0 ? clip : 0,
    ]);
    new Uint32Array(hyper, 16, 1)[0] = this.#hasOwn ? 1 : 0;
    this.#rt.write(this.#hyperGen, new Uint32Array(hyper));
    if (clip > 0) {
      // The squared norm the model computed earlier in this step, into hyper word 5.
      const sumSq = resolveView(args.gradSumSq!);
      encoder.copyBufferToBuffer(sumSq.buffer, sumSq.offset, this.#hyperGen, 20, 4);
    }
    const prev = this.#cur;
    const next = this.#hasOwn ? 1 - prev : prev;
    // Over whole segments, as the lookahead: the padding between parameters, which the lookahead
    // copied into `saved` too, is decayed along (zero stays zero) in one pass per binding range.
    for (const r of decays ? this.#ranges() : []) {
      this.#kernels.encodeWeightDecay(this.#pass(step, "weight-decay"), r.n, {
        hyper: this.#hyperGen,
        source: r.view(this.#saved.buffers),
        params: r.view(params),
      });
    }
    for (const wave of this.#waves) this.#encodeWave(step, wave, { grads, prev, next });
    this.#cur = next;
    this.#hasOwn = true;
  }

  /**
   * Feedback, DCT and top-k of one wave of blocks (the blocks whose coefficients the scratch
   * buffers hold at once): each kernel kind as one table dispatch per pipeline, the fused column
   * pass and the DCT's row pass where the chunks are powers of two, one dispatch per block of
   * the per-chunk feedback and dense DCT elsewhere. Every block reads and writes only its own
   * δ, scratch, row maxima and entries, so the order between blocks changes no bits.
   */
  #encodeWave(
    step: GpuStep,
    wave: Wave,
    args: { grads: readonly GPUBuffer[]; prev: number; next: number },
  ): void {
    const [theta, entries] = wave.group.windows;
    const seg = wave.group.segment;
    const scratch = (buffer: GPUBuffer) => windowView(buffer, [0, theta[1]]);
    const feedback = {
      hyper: this.#hyperGen,
      grads: windowView(args.grads[seg], theta),
      delta: windowView(this.delta.buffers[seg], theta),
      ownIdx: windowView(this.#ownIdx[args.prev], entries),
      ownVal: windowView(this.#ownVal[args.prev], entries),
    };
    const t = scratch(this.#scratchT), y = scratch(this.#scratchY);
    const rowMax = { buffer: this.#rowMax, offset: 0, size: this.#rowMax.size };
    const kernels = this.#kernels;
    const fused = wave.rows.filter((r) => kernels.hasFusedFeedback(r.row.spec));
    for (const rows of byKey(fused, (r) => kernels.feedbackDctPlan(r.row.spec, r.max).cols)) {
      kernels.encodeFeedbackColsTable(this.#pass(step, "feedback+dct"), rows, { ...feedback, t });
    }
    for (const { row, block } of wave.rows.filter((r) => !kernels.hasFusedFeedback(r.row.spec))) {
      // The per-chunk feedback and dense DCT, one block at a time, at the block's place.
      const at = (buffer: GPUBuffer, start: number) =>
        windowView(buffer, [start + row.offset, block]);
      const spec = [...row.spec];
      const delta = at(this.delta.buffers[seg], theta[0]);
      kernels.encodeFeedback(this.#pass(step, "feedback"), spec, {
        ...feedback,
        grads: at(args.grads[seg], theta[0]),
        delta,
      });
      kernels.encodeDct(this.#pass(step, "dct"), spec, {
        x: delta,
        t: at(this.#scratchT, 0),
        y: at(this.#scratchY, 0),
      });
    }
    for (const rows of byKey(fused, (r) => kernels.feedbackDctPlan(r.row.spec, r.max).rows)) {
      kernels.encodeFastRowsTable(this.#pass(step, "feedback+dct"), rows, {
        t,
        y,
        rowMax: wave.rows.find((r) => r.row === rows[0])!.max ? rowMax : undefined,
      });
    }
    for (const rows of byKey(wave.rows, (r) => kernels.topkPlan(r.row.spec, r.max))) {
      kernels.encodeTopkTable(this.#pass(step, "topk"), rows, {
        y,
        idx: windowView(this.#ownIdx[args.next], entries),
        val: windowView(this.#ownVal[args.next], entries),
        rowMax: wave.rows.find((r) => r.row === rows[0])!.max ? rowMax : undefined,
      });
    }
  }

  /**
   * Applies the client's own result from before the latest {@link encodeGenerate} as a
   * one-peer aggregate: `θ −= lr·sign(update)` (exact fixed point). Must follow a generate
   * in the same step.
   */
  encodeApplyPrevious(step: GpuStep, args: { params: FlatBuffers; lr: number }): void {
    const params = this.#flat("params", args.params);
    const prev = 1 - this.#cur;
    this.#rt.write(this.#hyperApply, new Float32Array([args.lr, 0, 0, 0]));
    const blocks = this.#blocks;
    for (const g of this.#ownFixedGroups) {
      const [win] = g.windows;
      const rows = g.members.map((n) => ({
        spec: withEntry(blocks[n].spec, ownEntries(blocks[n])[0] - win[0], n),
        offset: 0,
      }));
      this.#kernels.encodeOwnFixedTable(this.#pass(step, "own-fixed"), rows, {
        hyper: this.#ownFixedHyper,
        val: windowView(this.#ownVal[prev], win),
        q: windowView(this.#ownQ, win),
      });
    }
    for (const g of this.#ownApplyGroups) {
      const [theta, entries] = g.windows;
      this.#kernels.encodeApplyTable(this.#pass(step, "apply"), this.#tableRows(g), {
        hyper: this.#hyperApply,
        meta: this.#ownMeta,
        params: windowView(params[g.segment], theta),
        idx: windowView(this.#ownIdx[prev], entries),
        q: windowView(this.#ownQ, entries),
        offsets: this.#ownMeta,
      }, { maxEntries: g.members.map((n) => blocks[n].block.layout.k) });
    }
  }

  /**
   * `θ −= lr·sign(update)` with the exact aggregate of all peers' results, one
   * {@link AggregatedParam} per parameter (from `aggregateFixed` over canonically ordered
   * results). The aggregate is uploaded (queued before the step's submit). An active
   * lookahead is undone first, so the update lands on the canonical θ (Psyche applies at the
   * start of a round, before the lookahead; this keeps a misordered call harmless).
   */
  encodeApply(
    step: GpuStep,
    args: { params: FlatBuffers; lr: number; update: readonly AggregatedParam[] },
  ): void {
    const { update } = args;
    const params = this.#flat("params", args.params);
    this.encodeUndoLookahead(step, args.params);
    if (update.length !== this.#params.length) {
      throw new RangeError(
        `DistroOptimizer: aggregate has ${update.length} parameters, the model has ${this.#params.length}`,
      );
    }
    const maxEntries: number[] = [];
    for (const [n, a] of update.entries()) {
      const { chunks, totalk, name } = this.#params[n].layout;
      const bad = (what: string) =>
        new RangeError(`DistroOptimizer: aggregate of "${name}": ${what}`);
      if (
        a.offsets.length !== chunks + 1 || a.offsets[0] !== 0 ||
        a.indices.length !== a.offsets[chunks] || a.coeffs.length !== a.indices.length
      ) {
        throw bad(`offsets and entries do not match its ${chunks} chunks`);
      }
      let most = 0;
      for (let c = 0; c < chunks; c++) {
        if (a.offsets[c + 1] < a.offsets[c] || a.offsets[c + 1] - a.offsets[c] > totalk) {
          throw bad(`bad offsets at chunk ${c}`);
        }
        most = Math.max(most, a.offsets[c + 1] - a.offsets[c]);
      }
      maxEntries.push(most);
      // The exactness bound of the integer decode needs indices < totalk and |q| <= 2^15.
      for (let e = 0; e < a.indices.length; e++) {
        if (a.indices[e] >= totalk || Math.abs(a.coeffs[e]) > 32768) {
          throw bad(
            `entry ${e}: index ${a.indices[e]} (totalk ${totalk}), ` +
              `coefficient ${a.coeffs[e]} (limit 2^15)`,
          );
        }
      }
    }
    // Each block binds windows of its own, so no binding holds more than one block's entries.
    const packed = packAggregate(
      update,
      this.#params.map((p) => p.blocks.map((b) => b.block)),
      this.#rt.limits.minStorageBufferOffsetAlignment / 4,
    );
    const agg = this.#aggBuffers(packed.offsets.length, packed.idx.length);
    this.#rt.write(agg.offsets, packed.offsets);
    this.#rt.write(agg.idx, packed.idx);
    this.#rt.write(agg.q, packed.q);
    this.#rt.write(this.#hyperApply, new Float32Array([args.lr, 0, 0, 0]));
    // Per block: its parameter's most entries per chunk, and its windows of the upload.
    const most = this.#params.flatMap((p, n) => p.blocks.map(() => maxEntries[n]));
    const windows = packed.windows.flat();
    const span = ([start, size]: readonly [number, number]): [number, number] => [
      start,
      start + size,
    ];
    const groups = this.#groups(
      (b, n) => this.#kernels.applyPlan(b.spec, { maxEntries: most[n] }).key,
      (b, n) => [this.#paramSpan(b), span(windows[n].entries), span(windows[n].offsets)],
    );
    // Each block's metadata: where its offsets and entries start in its group's windows.
    const meta = new Uint32Array(4 * this.#blocks.length);
    for (const g of groups) {
      for (const n of g.members) {
        meta[4 * n] = windows[n].offsets[0] - g.windows[2][0];
        meta[4 * n + 1] = windows[n].entries[0] - g.windows[1][0];
      }
    }
    this.#rt.write(this.#aggMeta, meta);
    for (const g of groups) {
      const [theta, entries, offsets] = g.windows;
      this.#kernels.encodeApplyTable(this.#pass(step, "apply"), this.#tableRows(g), {
        hyper: this.#hyperApply,
        meta: this.#aggMeta,
        params: windowView(params[g.segment], theta),
        idx: windowView(agg.idx, entries),
        q: windowView(agg.q, entries),
        offsets: windowView(agg.offsets, offsets),
      }, { maxEntries: g.members.map((n) => most[n]) });
    }
  }

  /**
   * Single-node step (the trainer's {@link Optimizer} seam): generate, apply the previous
   * own result, then the lookahead for the next step (with this step's lr).
   */
  encodeStep(step: GpuStep, args: OptimizerStepArgs): void {
    const hadResult = this.#hasOwn;
    this.encodeGenerate(step, args);
    if (hadResult) this.encodeApplyPrevious(step, args);
    this.encodeLookahead(step, { params: args.params, prevLr: args.lr });
  }

  /** The {@link Optimizer} hook: undoes the pending lookahead before a checkpoint. */
  encodeSettle(step: GpuStep, params: FlatBuffers): void {
    this.encodeUndoLookahead(step, params);
  }

  /**
   * The lookahead {@link encodeSettle} undid, with the last step's lr: `θ` is saved and moved to
   * `θ − lastLr·sign(δ)` again, the same bits a straight run holds. A no-op before the first
   * result.
   */
  encodeResume(step: GpuStep, args: { params: FlatBuffers; lastLr: number }): void {
    checkLearningRate("lastLr", args.lastLr);
    if (this.#lookahead !== "none") {
      throw new Error(
        `DistroOptimizer: resume needs a settled optimizer, found ${this.#lookahead}`,
      );
    }
    this.encodeLookahead(step, { params: args.params, prevLr: args.lastLr });
  }

  /** δ and the latest own result (unquantized); see {@link Optimizer.readState}. */
  async readState(options: { signal?: AbortSignal } = {}): Promise<DistroState> {
    const delta = await this.delta.read(options);
    if (!this.#hasOwn) return { kind: "distro", delta, own: null };
    const bytes = this.#entries * 4;
    const [indices, values] = await Promise.all([
      this.#rt.readU32({ buffer: this.#ownIdx[this.#cur], size: bytes }, options),
      this.#rt.read({ buffer: this.#ownVal[this.#cur], size: bytes }, options),
    ]);
    return { kind: "distro", delta, own: { indices, values } };
  }

  /** δ and the latest own result's buffers; see {@link Optimizer.stateBuffers}. */
  stateBuffers(): OptimizerStateBuffers {
    const own = this.#hasOwn
      ? { indices: this.#ownIdx[this.#cur], values: this.#ownVal[this.#cur] }
      : null;
    return { kind: "distro", delta: this.delta, own };
  }

  /**
   * Replaces δ and the own result; see {@link Optimizer.loadState}. The optimizer must be
   * settled (no pending lookahead); {@link encodeResume} sets the lookahead up again.
   */
  loadState(state: OptimizerState): void {
    if (state.kind !== "distro") {
      throw new RangeError(`DistroOptimizer: cannot load the state of a ${state.kind} optimizer`);
    }
    if (state.delta.length !== this.#size) {
      throw new RangeError(
        `DistroOptimizer: state delta holds ${state.delta.length} floats, expected ${this.#size}`,
      );
    }
    const entries = this.#params.reduce((a, p) => a + p.layout.chunks * p.layout.k, 0);
    if (state.own !== null) {
      for (const [name, a] of [["indices", state.own.indices], ["values", state.own.values]]) {
        if (a.length !== entries) {
          throw new RangeError(
            `DistroOptimizer: own result ${name} hold ${a.length} entries, expected ${entries}`,
          );
        }
      }
      this.#params.forEach((p, n) => {
        const { totalk, chunks, k, name } = p.layout;
        const idx = state.own!.indices.subarray(p.entry, p.entry + chunks * k);
        const bad = idx.findIndex((i) => i >= totalk);
        if (bad >= 0) {
          throw new RangeError(
            `DistroOptimizer: own result of parameter ${n} "${name}": index ${idx[bad]} at ` +
              `entry ${bad} is not below its chunk size ${totalk}`,
          );
        }
      });
    }
    if (this.#lookahead !== "none") {
      throw new Error(`DistroOptimizer: load needs a settled optimizer, found ${this.#lookahead}`);
    }
    this.delta.write(state.delta);
    this.#cur = 0;
    this.#hasOwn = state.own !== null;
    if (state.own !== null) {
      this.#rt.write(this.#ownIdx[0], state.own.indices);
      this.#rt.write(this.#ownVal[0], state.own.values);
    }
  }

  /**
   * Sets whether there is an own result; δ and that result are written into the buffers
   * returned. The optimizer must be settled, as for {@link loadState}.
   */
  prepareLoad(state: OptimizerStateScalars): OptimizerStateBuffers {
    if (state.kind !== "distro") {
      throw new RangeError(`DistroOptimizer: cannot load the state of a ${state.kind} optimizer`);
    }
    if (this.#lookahead !== "none") {
      throw new Error(`DistroOptimizer: load needs a settled optimizer, found ${this.#lookahead}`);
    }
    this.#cur = 0;
    this.#hasOwn = state.hasOwn;
    return this.stateBuffers();
  }

  /**
   * Reads back the latest own result (after the generating step was submitted): per
   * parameter `chunks·k` indices and values, values replaced by ±1 when `quantize1bit`.
   */
  async readResult(options: { signal?: AbortSignal } = {}): Promise<SparseParam[]> {
    if (!this.#hasOwn) throw new Error("DistroOptimizer: no result has been generated yet");
    const bytes = this.#entries * 4;
    // Both copies are queued before either wait: one round trip instead of two.
    const [idx, val] = await Promise.all([
      this.#rt.readU32({ buffer: this.#ownIdx[this.#cur], size: bytes }, options),
      this.#rt.read({ buffer: this.#ownVal[this.#cur], size: bytes }, options),
    ]);
    return this.#params.map((p) => {
      const n = p.layout.chunks * p.layout.k;
      const values = val.slice(p.entry, p.entry + n);
      return {
        indices: idx.slice(p.entry, p.entry + n),
        values: this.config.quantize1bit ? quantizeSigns(values) : values,
      };
    });
  }

  /** Reads back the latest own result with unquantized values (tests, diagnostics). */
  async readOwn(): Promise<SparseParam[]> {
    const bytes = this.#entries * 4;
    const idx = await this.#rt.readU32({ buffer: this.#ownIdx[this.#cur], size: bytes });
    const val = await this.#rt.read({ buffer: this.#ownVal[this.#cur], size: bytes });
    return this.#params.map((p) => {
      const n = p.layout.chunks * p.layout.k;
      return { indices: idx.slice(p.entry, p.entry + n), values: val.slice(p.entry, p.entry + n) };
    });
  }

  /**
   * The table dispatches of one kernel over every block (dispatch_table.ts): `key` its
   * pipeline, `ranges` the words it reads of each buffer bound (θ-shaped ones first, counted
   * from the start of the block's segment).
   */
  #groups(
    key: (b: BoundBlock, n: number) => string,
    ranges: (b: BoundBlock, n: number) => (readonly [number, number])[],
  ): TableGroup[] {
    const limits = this.#rt.limits;
    return tableGroups(
      this.#blocks.map((b, n) => ({
        key: key(b, n),
        segment: segmentIndex(this.#segments, b.offset),
        ranges: ranges(b, n),
      })),
      {
        maxWords: Math.floor(limits.maxStorageBufferBindingSize / 4),
        alignWords: limits.minStorageBufferOffsetAlignment / 4,
        maxRows: MAX_TABLE_ROWS,
      },
    );
  }

  /**
   * The waves of {@link encodeGenerate}: groups of blocks (dispatch_table.ts) of one segment
   * whose θ window fits `scratchWords`, each block's table row placed in the scratch as in θ
   * (its `offset` from the window's start), its `entry` from the entries window's start and its
   * row maxima, where its DCT writes them, one after another.
   */
  #planWaves(scratchWords: number): Wave[] {
    const alignWords = this.#rt.limits.minStorageBufferOffsetAlignment / 4;
    const groups = tableGroups(
      this.#blocks.map((b) => ({
        key: "wave",
        segment: segmentIndex(this.#segments, b.offset),
        ranges: [this.#paramSpan(b), ownEntries(b)],
      })),
      {
        maxWords: Math.min(
          scratchWords,
          Math.floor(this.#rt.limits.maxStorageBufferBindingSize / 4),
        ),
        alignWords,
        maxRows: MAX_TABLE_ROWS,
      },
    );
    return groups.map((group) => {
      const [theta, entries] = group.windows;
      let rowMaxWords = 0;
      const rows = group.members.map((n) => {
        const b = this.#blocks[n];
        const max = this.#kernels.hasRowMax(b.spec);
        const row = {
          spec: withEntry(b.spec, ownEntries(b)[0] - entries[0], n),
          offset: this.#paramSpan(b)[0] - theta[0],
          rowMax: max ? rowMaxWords : 0,
        };
        if (max) rowMaxWords += b.block.layout.chunks * b.block.layout.n1;
        return { row, max, block: b.block.layout.size };
      });
      return { group, rows, rowMaxWords };
    });
  }

  /** The floats `[start, end)` of a block, counted from the start of its segment. */
  #paramSpan(b: BoundBlock): [number, number] {
    const start = b.offset - this.#segments[segmentIndex(this.#segments, b.offset)].start;
    return [start, start + b.block.layout.size];
  }

  /** The rows of a table dispatch whose first window is θ-shaped: `param` is the block's slot. */
  #tableRows(g: TableGroup): TableRow[] {
    const theta = g.windows[0][0];
    return g.members.map((n) => {
      const b = this.#blocks[n];
      return { spec: withEntry(b.spec, b.spec[12], n), offset: this.#paramSpan(b)[0] - theta };
    });
  }

  /** The segment buffers of `flat`; throws unless they hold the layout split like δ. */
  #flat(name: string, flat: FlatBuffers): readonly GPUBuffer[] {
    const buffers = segmentBuffers(flat);
    if (buffers.length !== this.#segments.length) {
      throw new RangeError(
        `DistroOptimizer: ${name} come in ${buffers.length} buffers, the state in ` +
          `${this.#segments.length}`,
      );
    }
    buffers.forEach((b, s) => {
      if (b.size < this.#segments[s].size * 4) {
        throw new RangeError(
          `DistroOptimizer: ${name}${buffers.length > 1 ? ` buffer ${s}` : ""} holds ${
            b.size / 4
          } floats, needs ` +
            `${this.#segments[s].size}`,
        );
      }
    });
    return buffers;
  }

  /** The view of flat floats `[offset, offset + n)` (inside one segment) in `buffers`. */
  #at(buffers: readonly GPUBuffer[], offset: number, n: number): TensorView {
    const s = segmentIndex(this.#segments, offset);
    return { buffer: buffers[s], offset: (offset - this.#segments[s].start) * 4, size: n * 4 };
  }

  /** Ranges of whole-layout kernels: per segment, pieces that fit one storage binding. */
  #ranges(): { n: number; view: (buffers: readonly GPUBuffer[]) => TensorView }[] {
    const max = this.#rt.limits.maxStorageBufferBindingSize;
    return this.#segments.flatMap((seg, s) =>
      bindingRanges(seg.size, max).map(([start, n]) => ({
        n,
        view: (buffers: readonly GPUBuffer[]) => ({
          buffer: buffers[s],
          offset: start * 4,
          size: n * 4,
        }),
      }))
    );
  }

  /** Encodes copying every segment of `from` into `to`. */
  #copy(encoder: GPUCommandEncoder, from: readonly GPUBuffer[], to: readonly GPUBuffer[]): void {
    this.#segments.forEach((seg, s) => {
      encoder.copyBufferToBuffer(from[s], 0, to[s], 0, seg.size * 4);
    });
  }

  /** The pass a kernel encodes into: the step's open pass, or a timed one when profiling. */
  /**
   * `1 − lr·wd`, θ's decoupled weight-decay factor for a step (rounded to f32 where it is
   * written): every pass that decays θ takes it from here, so they multiply by the same bits.
   */
  #decayFactor(lr: number): number {
    return 1 - lr * (this.config.weightDecay ?? 0);
  }

  #pass(step: GpuStep, kernel: string): GPUComputePassEncoder {
    return this.#profile ? step.timed(kernel) : step.pass;
  }

  #aggBuffers(offsets: number, entries: number) {
    const a = this.#agg;
    if (a && a.offsets.size >= offsets * 4 && a.idx.size >= entries * 4) return a;
    if (a) { for (const b of [a.offsets, a.idx, a.q]) this.#rt.destroyBuffer(b); }
    const grow = (n: number) => Math.ceil(n * 1.25) * 4;
    this.#agg = {
      offsets: this.#rt.buffer(`${this.#label} aggregate offsets`, grow(offsets)),
      idx: this.#rt.buffer(`${this.#label} aggregate idx`, grow(entries)),
      q: this.#rt.buffer(`${this.#label} aggregate q`, grow(entries)),
    };
    return this.#agg;
  }

  /** Frees every buffer the optimizer made. */
  [Symbol.dispose](): void {
    for (const b of this.#owned) this.#rt.destroyBuffer(b);
    this.delta[Symbol.dispose]();
    this.#saved[Symbol.dispose]();
    if (this.#agg) {
      for (const b of [this.#agg.offsets, this.#agg.idx, this.#agg.q]) this.#rt.destroyBuffer(b);
    }
    this.#basis[Symbol.dispose]();
  }
}

/**
 * A wave of {@link DistroOptimizer.encodeGenerate}: its blocks' group and table rows (with
 * whether the block's DCT writes row maxima, and its floats), and the row-maxima words it uses.
 */
interface Wave {
  readonly group: TableGroup;
  readonly rows: readonly { row: TableRow; max: boolean; block: number }[];
  readonly rowMaxWords: number;
}

/** The table rows of `items` split by `key`, in order of first appearance. */
function byKey<T extends { row: TableRow }>(
  items: readonly T[],
  key: (item: T) => string,
): TableRow[][] {
  const out = new Map<string, TableRow[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item.row);
    else out.set(k, [item.row]);
  }
  return [...out.values()];
}

/** The binding of the words `[start, start + size)` of `buffer`. */
function windowView(buffer: GPUBuffer, [start, size]: WordWindow): TensorView {
  return { buffer, offset: start * 4, size: size * 4 };
}

/** The result entries `[first, end)` of a block, counted from the buffer's start. */
function ownEntries(b: BoundBlock): [number, number] {
  const first = b.entries.start + b.entries.first;
  return [first, first + b.block.layout.chunks * b.block.layout.k];
}

/** `spec` with its `entry` and `param` words replaced. */
function withEntry(spec: readonly number[], entry: number, param: number): number[] {
  const out = [...spec];
  out[12] = entry;
  out[13] = param;
  return out;
}

/** A {@link ParamLayout} of the flat parameters, for the state's segment buffers. */
function flatLayout(
  params: readonly FlatParam[],
  layouts: readonly ChunkLayout[],
  size: number,
): ParamLayout {
  const entries = params.map((p, i) => ({
    name: p.name,
    shape: [...p.shape],
    offset: p.offset,
    size: layouts[i].size,
    init: "normal" as const,
  }));
  return {
    entries,
    byName: new Map(entries.map((e) => [e.name, e])),
    totalSize: size,
    paramCount: entries.reduce((a, e) => a + e.size, 0),
  };
}
