/**
 * The Llama model on the GPU: parameters and gradients each in the flat layout of
 * model/params.ts, split into as many buffers as `maxBufferSize` requires (model/param_buffers.ts;
 * one up to ~500M parameters on a 2 GiB adapter), forward and backward of a micro-batch encoded
 * into the caller's training step, activations kept for the backward in buffers allocated once at
 * construction.
 *
 * Same maths as model/reference.ts (which the tests compare against). Shapes, per micro-batch of
 * B sequences of T tokens (N = B·T):
 * ```
 * tokens u32, targets i32 [N]       targets[b,t] = labels[b,t+1] (labels default to the
 *                                   tokens; -100 masks), IGNORE at t = T−1 (model/rows.ts)
 * links u32 [2N]                    the embedding gradient's token chains, from the host
 * positions u32 [N]                 RoPE position of each token (position_ids; default t)
 * documents u32 [N, 2]              each token's packed document [start, end) in its row
 * x[l]             [N, C]            residual stream entering layer l (x[0] = embeddings)
 * h1[l], h2[l]     [N, C], rstd [N]  RMSNorm outputs before attention / MLP
 * q[l]             [N, H·D]          after RoPE;  k[l], v[l]  [N, KVH·D]
 * att[l]           [N, H·D], lse [B, H, T]
 * xm[l]            [N, C]            x[l] + att·Woᵀ
 * gate, up, act    [N, F]            act = silu(gate)·up
 * hf               [N, C]            final RMSNorm; logits are made R rows at a time, [R, V]
 * ```
 * The LM head and loss (model/lm_head.ts) run in chunks of R rows so the logits never exceed a
 * few tens of MB.
 *
 * Tensors over one storage binding (`rt.limits.maxStorageBufferBindingSize`: 128 MiB on
 * lavapipe, which a 32000 × 2048 f32 embedding or LM head exceeds): the embedding lookup and its
 * gradient run one row block of the table at a time (model/shader_kernels.ts), the LM head one
 * vocabulary block at a time (model/lm_head.ts). Every result has the bits of the unsplit
 * computation (model/llama_split_test.ts); the optimizer and the gradient norm split by ranges.
 *
 * Precision `"f16"` is mixed precision (docs/kernels.md): f32 masters, gradients and optimizer
 * state; f16 copies of the matmul weights (model/half_weights.ts) and of h1, h2 and act.
 * `"bf16"` is the same with bfloat16 copies (any adapter).
 *
 * With `recompute` (model/recompute.ts) the layers share one activation set: the backward
 * re-runs each layer's forward from its saved input `x[l]` just before that layer's backward.
 *
 * The residual adds ride in the RMSNorm kernels (docs/kernels.md): each projection back to the
 * stream writes its product, and the norm after it adds the residual in place and normalises in
 * one dispatch (`xm = att·Woᵀ + x` in the post-attention norm, `x[l+1] = down + xm` in the next
 * layer's input norm, or the final norm); in the backward each norm's input gradient is added
 * to the residual gradient already in `#dx`. The same f32 additions as separate adds, so the same
 * bits, with four dispatches fewer per layer. On GPU profiles RoPE rotates q and k (dq and dk)
 * in one dispatch: two fewer. Where the o and down projections, or the gate and up input
 * gradients (summed into `#dh`), split K, the norm that reads them sums their partials itself
 * instead of a reduce launch each (`matmulUnreduced`; same expressions, same bits).
 *
 * @module
 */
import { HalfWeights, matmulWeightNames } from "./half_weights.ts";
import { LmHead } from "./lm_head.ts";
import type { ModelPrecision } from "./precision.ts";
import type { LlamaConfig } from "./hf_config.ts";
import { type ActivationPlan, activationPlan } from "./recompute.ts";
import type { LlamaKernels } from "./llama_kernels.ts";
import { documentSpans, type RowExtras, rowPositions, rowTargets } from "./rows.ts";
import { type LayerTensor, layerTensorName, type ParamLayout, paramSegments } from "./params.ts";
import { ParamBuffers } from "./param_buffers.ts";
import { shaderKernels } from "./shader_kernels.ts";
import { transposeScratchBytes } from "./matmul_scratch.ts";
import {
  CastF16,
  embeddingLinks,
  type GpuRuntime,
  type GpuStep,
  granuleStretches,
  type MatmulArgs,
  type MatmulInputType,
  type RowBlock,
  type SplitPartials,
  type TensorView,
} from "../shaders/mod.ts";

/** What layer l saves for its backward (its input is `#xs[l]`). */
interface LayerActs {
  h1: GPUBuffer;
  rstd1: GPUBuffer;
  q: GPUBuffer;
  k: GPUBuffer;
  v: GPUBuffer;
  att: GPUBuffer;
  lse: GPUBuffer;
  xm: GPUBuffer;
  h2: GPUBuffer;
  rstd2: GPUBuffer;
  gate: GPUBuffer;
  up: GPUBuffer;
  act: GPUBuffer;
}

/** Construction options of {@link LlamaModel}. */
export interface LlamaModelOptions {
  config: LlamaConfig;
  layout: ParamLayout;
  /**
   * Initial parameters, `[layout.totalSize]`; absent: zeros, for a caller that writes them
   * itself (model/seeded_upload.ts streams a seeded start without a host copy of the model).
   */
  weights?: Float32Array;
  /** B: sequences per forward/backward. */
  microBatch: number;
  /** T: tokens per sequence (2 ≤ T ≤ max_position_embeddings). */
  seqLen: number;
  /** Micro-batches one step can hold (token slots written before a single submission). */
  slots: number;
  /** Kernels to use (default: the shaders/ kernels). */
  kernels?: LlamaKernels;
  /**
   * Storage precision of the matmul operands (default `"f32"`). `"f16"` (needs `rt.hasF16`) is
   * mixed precision: the f32 master weights, gradients and optimizer state stay f32; the matmuls
   * read f16 copies of the weights made at each step's first forward and f16 copies of the
   * activations only matmuls read (the normed inputs and the SwiGLU output), saved for the
   * backward in half the memory; gradients, every sum, softmax, cross-entropy and RMSNorm
   * statistics stay f32. `"bf16"` is the same with bfloat16 copies, on any adapter.
   */
  precision?: ModelPrecision;
  /**
   * Recompute activations in the backward (default false): keep only each layer's input and
   * one layer's activation set, re-running each layer's forward before its backward. Same
   * gradients to the bit, about a third more compute, activation memory of one layer instead
   * of L (model/recompute.ts).
   */
  recompute?: boolean;
}

/** Llama forward/backward on the GPU. Dispose it to free every buffer it made. */
export class LlamaModel implements Disposable {
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  /** B. */
  readonly microBatch: number;
  /** T. */
  readonly seqLen: number;
  /** Token slots (micro-batches per submission). */
  readonly slots: number;
  /** `[P]` parameters. */
  readonly params: ParamBuffers;
  /** `[P]` gradients, accumulated over the micro-batches of a step (split like the params). */
  readonly grads: ParamBuffers;
  /** Storage precision of the matmul operands. */
  readonly precision: ModelPrecision;
  /** Bytes of the activations saved from forward to backward (one micro-batch). */
  readonly activationBytes: number;
  /** Which activation set each layer uses and which layers the backward rebuilds. */
  readonly activations: ActivationPlan;
  readonly #rt: GpuRuntime;
  /** f16 weight copies (f16 precision only). */
  readonly #half: HalfWeights | null = null;
  /** Saved activations stored as f16. */
  readonly #halfActs = new Set<GPUBuffer>();
  /** f32 output of a norm or SwiGLU before its f16 copy, `[N, max(C, F)]` (f16 only). */
  readonly #tmp32: GPUBuffer | null = null;
  /** The step whose forward passes read the current f16 weights. */
  #refreshedIn: GpuStep | null = null;
  #refreshedFrom: ParamBuffers | null = null;
  /** The weights forward and backward read: {@link params}, or a caller's buffers for one call. */
  #weightsBuffer!: ParamBuffers;
  readonly #k: LlamaKernels;
  /** Set when the model made its kernels (and so disposes their scratch). */
  readonly #ownKernels: Disposable | null = null;
  readonly #owned: GPUBuffer[] = [];
  readonly #tokens: GPUBuffer[] = [];
  /**
   * Per slot: u32 `[2N]` links of the tokens for the embedding gradient, written beside them from
   * the host in O(N + V): the GPU's own links pass is O(N²).
   */
  readonly #links: GPUBuffer[] = [];
  readonly #targets: GPUBuffer[] = [];
  readonly #losses: GPUBuffer[] = [];
  /** Per slot: u32 `[N]` RoPE positions, or null when the rows have none (positions t). */
  readonly #positions: (GPUBuffer | null)[] = [];
  /** Per slot: u32 `[N, 2]` document spans, or null when each row is one document. */
  readonly #documents: (GPUBuffer | null)[] = [];
  /** Position and document buffers of each slot, made when first needed, then reused. */
  readonly #rowBuffers: { positions?: GPUBuffer; documents?: GPUBuffer }[] = [];
  /** The slot whose forward/backward is being encoded. */
  #slot = 0;
  /** `[slots·N + 4]`: gathered per-row losses, then the squared gradient norm. */
  readonly #stats: GPUBuffer;
  readonly #gradSumSq: GPUBuffer;
  /** Sum-of-squares chunks that straddle gradient segments, gathered (null with one segment). */
  readonly #sumsqGather: GPUBuffer | null = null;
  /** `[N, C]` residual stream entering each layer; the last one enters the final norm. */
  readonly #xs: GPUBuffer[] = [];
  readonly #acts: LayerActs[] = [];
  readonly #hf: GPUBuffer;
  readonly #rstdf: GPUBuffer;
  /** LM head and loss (model/lm_head.ts). */
  readonly #head: LmHead;
  // Backward scratch.
  /** d of the residual stream at the point the backward has reached. */
  readonly #dx: GPUBuffer;
  readonly #dh: GPUBuffer;
  readonly #dh2: GPUBuffer;
  readonly #dq: GPUBuffer;
  readonly #dk: GPUBuffer;
  readonly #dv: GPUBuffer;
  readonly #datt: GPUBuffer;
  readonly #dgate: GPUBuffer;
  readonly #dup: GPUBuffer;
  readonly #dact: GPUBuffer;

  constructor(rt: GpuRuntime, options: LlamaModelOptions) {
    const { config, layout, weights, microBatch, seqLen, slots } = options;
    for (const [name, v] of [["microBatch", microBatch], ["slots", slots]] as const) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be >= 1, got ${v}`);
    }
    if (!Number.isInteger(seqLen) || seqLen < 2 || seqLen > config.maxPositionEmbeddings) {
      throw new RangeError(
        `seqLen must be in [2, ${config.maxPositionEmbeddings}] (max_position_embeddings), got ${seqLen}`,
      );
    }
    if (config.headDim % 4 !== 0 || config.headDim > 256) {
      throw new RangeError(
        `head width ${config.headDim} is not supported: the attention kernel needs a multiple of 4, at most 256`,
      );
    }
    if (weights !== undefined && weights.length !== layout.totalSize) {
      throw new RangeError(
        `weights hold ${weights.length} floats, layout needs ${layout.totalSize}`,
      );
    }
    const precision = options.precision ?? "f32";
    if (precision !== "f32" && precision !== "f16" && precision !== "bf16") {
      throw new RangeError(
        `precision must be "f32", "f16" or "bf16", got ${JSON.stringify(precision)}`,
      );
    }
    if (precision === "f16" && !rt.hasF16) {
      throw new RangeError(
        `precision "f16" needs the "shader-f16" feature, which adapter ` +
          `"${rt.info.description}" does not provide (or was not requested)`,
      );
    }
    this.precision = precision;
    this.#rt = rt;
    if (options.kernels) {
      this.#k = options.kernels;
    } else {
      const own = shaderKernels(rt);
      this.#k = own;
      this.#ownKernels = own;
    }
    this.config = config;
    this.layout = layout;
    this.microBatch = microBatch;
    this.seqLen = seqLen;
    this.slots = slots;
    const { hiddenSize: C, intermediateSize: F, headDim: D } = config;
    const H = config.numHeads, KVH = config.numKvHeads;
    const N = microBatch * seqLen;
    const f32 = (label: string, count: number) => this.#buffer(label, count * 4);
    // Activations only matmuls read: f16 in mixed precision.
    const mm = (label: string, count: number) => {
      if (precision === "f32") return f32(label, count);
      const b = this.#buffer(label, CastF16.bytes(count));
      this.#halfActs.add(b);
      return b;
    };
    const segments = paramSegments(layout, rt.limits.maxBufferSize);
    this.params = new ParamBuffers(rt, { label: "llama params", layout, segments, init: weights });
    this.grads = new ParamBuffers(rt, { label: "llama grads", layout, segments });
    this.#weightsBuffer = this.params;
    const straddles = granuleStretches(segments, this.#k.sumSquaresGranule)
      .filter((s) => s.parts.length > 1).length;
    if (straddles > 0) {
      this.#sumsqGather = f32("sumsq gather", straddles * this.#k.sumSquaresGranule);
    }
    if (precision !== "f32") {
      const names = matmulWeightNames(config);
      this.#half = new HalfWeights(rt, { layout, names, type: precision });
      this.#tmp32 = f32("f32 before f16 copy", N * Math.max(C, F));
    }
    for (let s = 0; s < slots; s++) {
      this.#tokens.push(f32(`tokens slot ${s}`, N));
      this.#links.push(f32(`embedding links slot ${s}`, 2 * N));
      this.#targets.push(f32(`targets slot ${s}`, N));
      this.#losses.push(f32(`losses slot ${s}`, N));
      this.#positions.push(null);
      this.#documents.push(null);
      this.#rowBuffers.push({});
    }
    this.#stats = f32("step stats", slots * N + 4);
    this.#gradSumSq = f32("grad sumsq", 4);
    for (let l = 0; l <= config.numLayers; l++) this.#xs.push(f32(`x ${l}`, N * C));
    this.activations = activationPlan(config.numLayers, { recompute: options.recompute ?? false });
    for (let l = 0; l < this.activations.sets; l++) {
      const p = this.activations.recompute ? "recomputed layer" : `layer ${l}`;
      this.#acts.push({
        h1: mm(`${p} h1`, N * C),
        rstd1: f32(`${p} rstd1`, N),
        q: f32(`${p} q`, N * H * D),
        k: f32(`${p} k`, N * KVH * D),
        v: f32(`${p} v`, N * KVH * D),
        att: f32(`${p} att`, N * H * D),
        lse: f32(`${p} lse`, N * H),
        xm: f32(`${p} xm`, N * C),
        h2: mm(`${p} h2`, N * C),
        rstd2: f32(`${p} rstd2`, N),
        gate: f32(`${p} gate`, N * F),
        up: f32(`${p} up`, N * F),
        act: mm(`${p} act`, N * F),
      });
    }
    this.#hf = f32("final norm out", N * C);
    this.#rstdf = f32("final norm rstd", N);
    this.activationBytes = [...this.#xs, this.#hf, this.#rstdf]
      .concat(this.#acts.flatMap((a) => Object.values(a)))
      .reduce((sum, b) => sum + b.size, 0);
    this.#head = new LmHead(rt, {
      config,
      layout,
      kernels: this.#k,
      params: this.params,
      grads: this.grads,
      rows: N,
      half: this.#half,
    });
    this.#k.reserveMatmulScratch(transposeScratchBytes({
      config,
      rows: N,
      chunkRows: this.#head.chunkRows,
      headBlockRows: Math.max(...this.#head.blocks.map((b) => b.rows)),
      weightBytes: precision === "f32" ? 4 : 2,
    }));
    this.#dx = f32("d x", N * C);
    this.#dh = f32("d h", N * C);
    this.#dh2 = f32("d h (second input)", N * C);
    this.#dq = f32("d q", N * H * D);
    this.#dk = f32("d k", N * KVH * D);
    this.#dv = f32("d v", N * KVH * D);
    this.#datt = f32("d att", N * H * D);
    this.#dgate = f32("d gate", N * F);
    this.#dup = f32("d up", N * F);
    this.#dact = f32("d act", N * F);
  }

  /**
   * The LM head's vocabulary blocks (one block unless `[V, C]` or a logits chunk is over one
   * storage binding).
   */
  get headBlocks(): readonly RowBlock[] {
    return this.#head.blocks;
  }

  /** Rows of one LM-head logits chunk (the adapter profile's `logitsChunkBytes` sets it). */
  get lmHeadChunkRows(): number {
    return this.#head.chunkRows;
  }

  /** N = B·T rows per micro-batch. */
  get rows(): number {
    return this.microBatch * this.seqLen;
  }

  /**
   * Queues `[B, T]` token ids for micro-batch slot `slot`, their shifted targets, the embedding
   * gradient's links (shaders/embedding_links.ts) and, from `extras`, the rows' labels, RoPE
   * positions and packed documents (model/rows.ts; each absent or null: the default, with the
   * bits of a call without it). Written with `queue.writeBuffer`, so every slot used by one
   * submission needs its own index. Returns the number of predictions (targets not ignored):
   * `B·(T−1)` without labels.
   */
  writeTokens(slot: number, tokens: Uint32Array, extras: RowExtras = {}): number {
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.slots) {
      throw new RangeError(`slot ${slot} outside [0, ${this.slots})`);
    }
    const N = this.rows, T = this.seqLen, B = this.microBatch;
    if (tokens.length !== N) {
      throw new RangeError(
        `expected ${B}×${T} = ${N} tokens, found ${tokens.length}`,
      );
    }
    const { targets, predictions } = rowTargets(tokens, {
      seqLen: T,
      vocabSize: this.config.vocabSize,
      labels: extras.labels,
    });
    // After rowTargets, which refuses ids outside the vocabulary with the message users know.
    const links = embeddingLinks(tokens, { vocab: this.config.vocabSize });
    const positions = extras.positionIds == null
      ? null
      : rowPositions(extras.positionIds, { seqLen: T });
    if (positions !== null && positions.length !== N) {
      throw new RangeError(`expected ${N} position ids (one per token), found ${positions.length}`);
    }
    const documents = extras.sequenceLengths == null
      ? null
      : documentSpans(extras.sequenceLengths, { rows: B, seqLen: T });
    this.#rt.write(this.#tokens[slot], tokens);
    this.#rt.write(this.#links[slot], links);
    this.#rt.write(this.#targets[slot], targets);
    const own = this.#rowBuffers[slot];
    this.#positions[slot] = null;
    if (positions !== null) {
      own.positions ??= this.#buffer(`positions slot ${slot}`, N * 4);
      this.#rt.write(own.positions, positions);
      this.#positions[slot] = own.positions;
    }
    this.#documents[slot] = null;
    if (documents !== null) {
      own.documents ??= this.#buffer(`documents slot ${slot}`, N * 2 * 4);
      this.#rt.write(own.documents, documents);
      this.#documents[slot] = own.documents;
    }
    return predictions;
  }

  /** Encodes zeroing the gradient buffer (start of a step). */
  encodeZeroGrads(step: GpuStep): void {
    this.grads.encodeClear(step.encoder);
  }

  /**
   * Encodes forward and backward of the micro-batch in `slot`: gradients of
   * `lossScale · Σ per-prediction loss` are added to {@link grads}; per-row losses are kept for
   * {@link readStats}. With `weights`, forward and backward read the weights from that buffer
   * (laid out as {@link params}) instead: DisTrO trains at a lookahead position held apart from
   * the parameters, which then never leave their canonical values.
   */
  encodeForwardBackward(
    step: GpuStep,
    args: { slot: number; lossScale: number; weights?: ParamBuffers },
  ): void {
    const { slot, lossScale } = args;
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.slots) {
      throw new RangeError(`slot ${slot} outside [0, ${this.slots})`);
    }
    const weights = args.weights ?? this.params;
    if (weights !== this.params && (weights === this.grads || !this.params.sameSegments(weights))) {
      throw new RangeError(
        `weights "${weights.buffers[0]?.label}" must be laid out and split as the parameters, ` +
          "other than the gradients",
      );
    }
    this.#weightsBuffer = weights;
    this.#slot = slot;
    try {
      this.#forward(step, slot);
      this.#headAndLoss(step, slot, lossScale);
      this.#backward(step, slot);
    } catch (e) {
      // The step is abandoned, its split products never run: their queued reduces must not
      // reach the next step's pass.
      this.#k.discardMatmulReduces();
      throw e;
    } finally {
      this.#weightsBuffer = this.params;
    }
    // Gather this slot's per-row losses for the single readback at the end of the step.
    const N = this.rows;
    step.encoder.copyBufferToBuffer(this.#losses[slot], 0, this.#stats, slot * N * 4, N * 4);
  }

  /**
   * Encodes the forward pass and per-row losses of the micro-batch in `slot`, without backward
   * (evaluation). Gradients are untouched; {@link readStats} then sums the losses.
   */
  encodeLoss(step: GpuStep, args: { slot: number }): void {
    const { slot } = args;
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.slots) {
      throw new RangeError(`slot ${slot} outside [0, ${this.slots})`);
    }
    this.#slot = slot;
    this.#forward(step, slot);
    this.#headAndLoss(step, slot, null);
    const N = this.rows;
    step.encoder.copyBufferToBuffer(this.#losses[slot], 0, this.#stats, slot * N * 4, N * 4);
  }

  /** Encodes `Σ grads²` into a one-float buffer (returned) for clipping and logging. */
  encodeGradSumSq(step: GpuStep): TensorView {
    // Chunks straddling segments are gathered whole, so the sum has the bits of one buffer's.
    const granule = this.#k.sumSquaresGranule;
    const inputs: { x: TensorView; n: number }[] = [];
    let gathered = 0;
    for (const stretch of granuleStretches(this.grads.segments, granule)) {
      if (stretch.parts.length === 1) {
        inputs.push({ x: this.grads.slice(stretch.start, stretch.size), n: stretch.size });
        continue;
      }
      const at = gathered++ * granule * 4;
      for (const part of stretch.parts) {
        const { buffer, offset } = this.grads.slice(part.start, part.size);
        step.encoder.copyBufferToBuffer(
          buffer,
          offset,
          this.#sumsqGather!,
          at + (part.start - stretch.start) * 4,
          part.size * 4,
        );
      }
      inputs.push({
        x: { buffer: this.#sumsqGather!, offset: at, size: stretch.size * 4 },
        n: stretch.size,
      });
    }
    this.#k.sumSquares(step.pass, { inputs, out: this.#gradSumSq });
    const N = this.rows;
    step.encoder.copyBufferToBuffer(this.#gradSumSq, 0, this.#stats, this.slots * N * 4, 4);
    return this.#gradSumSq;
  }

  /**
   * The last step's summed loss over slots `0..slotsUsed-1` (slot then row order, summed in f64)
   * and its squared gradient norm (valid when {@link encodeGradSumSq} ran in that step).
   */
  async readStats(
    slotsUsed: number = this.slots,
    options?: { signal?: AbortSignal },
  ): Promise<{ lossSum: number; gradSumSq: number }> {
    if (!Number.isInteger(slotsUsed) || slotsUsed < 1 || slotsUsed > this.slots) {
      throw new RangeError(`slotsUsed ${slotsUsed} outside [1, ${this.slots}]`);
    }
    const all = await this.#rt.read(this.#stats, options);
    const n = slotsUsed * this.rows;
    let lossSum = 0;
    for (let i = 0; i < n; i++) lossSum += all[i];
    return { lossSum, gradSumSq: all[this.slots * this.rows] };
  }

  /** Per-row losses `[N]` of one slot (0 at ignored positions). */
  readLosses(slot: number): Promise<Float32Array> {
    return this.#rt.read(this.#losses[slot]);
  }

  /** The parameters, `[P]`. */
  readParams(): Promise<Float32Array> {
    return this.params.read();
  }

  /** The gradients, `[P]`. */
  readGrads(): Promise<Float32Array> {
    return this.grads.read();
  }

  /** Replaces the parameters (e.g. after loading a checkpoint). */
  writeParams(weights: Float32Array): void {
    if (weights.length !== this.layout.totalSize) {
      throw new RangeError(`expected ${this.layout.totalSize} floats, found ${weights.length}`);
    }
    this.params.write(weights);
  }

  /** Frees every buffer the model made. */
  [Symbol.dispose](): void {
    for (const b of this.#owned) this.#rt.destroyBuffer(b);
    this.#owned.length = 0;
    this.params[Symbol.dispose]();
    this.grads[Symbol.dispose]();
    this.#head[Symbol.dispose]();
    this.#half?.[Symbol.dispose]();
    this.#ownKernels?.[Symbol.dispose]();
  }

  // ---- internals ----

  #buffer(label: string, bytes: number, init?: Float32Array): GPUBuffer {
    const b = this.#rt.buffer(`llama ${label}`, init ?? bytes);
    this.#owned.push(b);
    return b;
  }

  /** View of parameter (or gradient) tensor `name` in its segment of `flat`. */
  #view(flat: ParamBuffers, name: string): TensorView {
    return flat.view(name);
  }

  #w(l: number, s: LayerTensor): TensorView {
    return this.#view(this.#weightsBuffer, layerTensorName(l, s));
  }

  #g(l: number, s: LayerTensor): TensorView {
    return this.#view(this.grads, layerTensorName(l, s));
  }

  /** Storage type of a saved activation or scratch buffer. */
  #type(b: GPUBuffer): MatmulInputType {
    return this.#halfActs.has(b) ? this.precision : "f32";
  }

  /** The matmul operand of weight `name`: its f16 copy in mixed precision, else the master. */
  #mw(name: string): { view: TensorView; type: MatmulInputType } {
    if (this.#half) return { view: this.#half.view(name), type: this.#half.type };
    return { view: this.#view(this.#weightsBuffer, name), type: "f32" };
  }

  /**
   * Runs `produce` (a kernel writing f32 `[n]`) into `target`; an f16 target gets the output
   * through the f32 scratch and a conversion.
   */
  #store(
    pass: GPUComputePassEncoder,
    target: GPUBuffer,
    n: number,
    produce: (out: GPUBuffer) => void,
  ): void {
    if (!this.#halfActs.has(target)) {
      produce(target);
      return;
    }
    const tmp = this.#tmp32!;
    produce(tmp);
    this.#cast(pass, { x: tmp, out: target, n });
  }

  /** f32 → the 16-bit type of this precision (f16 or bf16). */
  #cast(pass: GPUComputePassEncoder, a: { x: TensorView; out: TensorView; n: number }): void {
    if (this.precision === "bf16") this.#k.castBf16(pass, a);
    else this.#k.castF16(pass, a);
  }

  /** `out [N, outDim] = x [N, inDim] · Wᵀ` for layer l's tensor `name` (W `[outDim, inDim]`). */
  #linear(
    pass: GPUComputePassEncoder,
    l: number,
    name: LayerTensor,
    io: { x: GPUBuffer; out: GPUBuffer; inDim: number; outDim: number },
  ): void {
    this.#k.matmul(pass, this.#linearArgs(l, name, io));
  }

  /**
   * {@link #linear} whose output's one reader sums split-K partials itself: the partials, or
   * null when `out` was written ({@link LlamaKernels.matmulUnreduced}).
   */
  #linearUnreduced(
    pass: GPUComputePassEncoder,
    l: number,
    name: LayerTensor,
    io: { x: GPUBuffer; out: GPUBuffer; inDim: number; outDim: number },
  ): SplitPartials | null {
    // No partials are kept: at most this product's come back.
    return this.#k.matmulUnreduced(pass, this.#linearArgs(l, name, io))[0] ?? null;
  }

  #linearArgs(
    l: number,
    name: LayerTensor,
    io: { x: GPUBuffer; out: GPUBuffer; inDim: number; outDim: number },
  ): MatmulArgs {
    const w = this.#mw(layerTensorName(l, name));
    return {
      a: io.x,
      b: w.view,
      inputType: { a: this.#type(io.x), b: w.type },
      c: io.out,
      m: this.rows,
      n: io.outDim,
      k: io.inDim,
      layout: "nt",
    };
  }

  /** Backward of {@link #linear}: `dx (+)= dy · W` (added when `addToDx`) and `dW += dyᵀ · x`. */
  #linearBackward(
    pass: GPUComputePassEncoder,
    l: number,
    name: LayerTensor,
    io: {
      dy: GPUBuffer;
      x: GPUBuffer;
      dx: GPUBuffer;
      inDim: number;
      outDim: number;
      addToDx?: boolean;
    },
  ): void {
    this.#k.matmul(pass, this.#inputGradientArgs(l, name, io));
    this.#weightGradient(pass, l, name, io);
  }

  /** The product of {@link #linearBackward}'s input gradient, `dx (+)= dy · W`. */
  #inputGradientArgs(
    l: number,
    name: LayerTensor,
    io: { dy: GPUBuffer; dx: GPUBuffer; inDim: number; outDim: number; addToDx?: boolean },
  ): MatmulArgs {
    const w = this.#mw(layerTensorName(l, name));
    return {
      a: io.dy,
      b: w.view,
      inputType: { a: "f32", b: w.type },
      c: io.dx,
      m: this.rows,
      n: io.inDim,
      k: io.outDim,
      layout: "nn",
      accumulate: io.addToDx ?? false,
    };
  }

  /** {@link #linearBackward}'s weight gradient, `dW += dyᵀ · x`. */
  #weightGradient(
    pass: GPUComputePassEncoder,
    l: number,
    name: LayerTensor,
    io: { dy: GPUBuffer; x: GPUBuffer; inDim: number; outDim: number },
  ): void {
    const { dy, x, inDim, outDim } = io;
    this.#k.matmul(pass, {
      a: dy,
      b: x,
      inputType: { a: "f32", b: this.#type(x) },
      c: this.#g(l, name),
      m: outDim,
      n: inDim,
      k: this.rows,
      layout: "tn",
      accumulate: true,
      // Read only after the backward, which flushes: the reduces of a layer's seven (and more)
      // weight gradients run in one dispatch instead of one each.
      deferReduce: true,
    });
  }

  /**
   * RMSNorm of `x [N, C]` with gain `weight`, into `out`, saving `rstd [N]`; with `add`, the
   * residual `x += add` first, in place.
   */
  #norm(
    pass: GPUComputePassEncoder,
    io: {
      x: GPUBuffer;
      add?: GPUBuffer;
      xPartials?: SplitPartials;
      weight: TensorView;
      out: GPUBuffer;
      rstd: GPUBuffer;
    },
  ): void {
    const { hiddenSize: C, rmsNormEps: eps } = this.config;
    this.#k.rmsnorm(pass, { ...io, n: this.rows, c: C, eps });
  }

  /**
   * Backward of {@link #norm}: `dx` overwritten (added to with `accumulate`), the gain's
   * gradient accumulated.
   */
  #normBackward(
    pass: GPUComputePassEncoder,
    io: {
      dout: GPUBuffer;
      x: GPUBuffer;
      weight: TensorView;
      dweight: TensorView;
      rstd: GPUBuffer;
      dx: GPUBuffer;
      accumulate?: boolean;
      doutPartials?: readonly SplitPartials[];
    },
  ): void {
    this.#k.rmsnormBackward(pass, { ...io, n: this.rows, c: this.config.hiddenSize });
  }

  /** Attention shapes, and the current slot's packed documents if it has them. */
  #attentionDims() {
    const c = this.config;
    const documents = this.#documents[this.#slot];
    return {
      batch: this.microBatch,
      seqLen: this.seqLen,
      heads: c.numHeads,
      kvHeads: c.numKvHeads,
      headDim: c.headDim,
      ...(documents === null ? {} : { documents }),
    };
  }

  /**
   * RoPE on queries `q [N, H, D]` and keys `k [N, KVH, D]` in place, one dispatch for both on
   * GPU profiles (`inverse` for the backward, on their gradients), by the current slot's
   * positions if it has them.
   */
  #rope(pass: GPUComputePassEncoder, io: { q: GPUBuffer; k: GPUBuffer; inverse: boolean }): void {
    const positions = this.#positions[this.#slot];
    this.#k.rope(pass, {
      ...(positions === null ? {} : { positions }),
      x: io.q,
      heads: this.config.numHeads,
      second: { x: io.k, heads: this.config.numKvHeads },
      inverse: io.inverse,
      batch: this.microBatch,
      seqLen: this.seqLen,
      headDim: this.config.headDim,
      rope: { theta: this.config.ropeTheta, scaling: this.config.ropeScaling },
    });
  }

  #forward(step: GpuStep, slot: number): void {
    const k = this.#k, c = this.config, pass = step.pass;
    const { hiddenSize: C, vocabSize: V } = c, N = this.rows;
    if (
      this.#half && (this.#refreshedIn !== step || this.#refreshedFrom !== this.#weightsBuffer)
    ) {
      // The masters may have changed since the last step (optimizer, DisTrO apply, writeParams).
      this.#half.encodeRefresh(pass, {
        params: this.#weightsBuffer,
        cast: (p, a) => this.#cast(p, a),
        maxBindingBytes: this.#rt.limits.maxStorageBufferBindingSize,
      });
      this.#refreshedIn = step;
      this.#refreshedFrom = this.#weightsBuffer;
    }
    k.embedding(pass, {
      ids: this.#tokens[slot],
      table: this.#view(this.#weightsBuffer, "model.embed_tokens.weight"),
      out: this.#xs[0],
      n: N,
      c: C,
      v: V,
    });
    const last = this.#layersForward(step, { from: 0, to: c.numLayers, rebuild: false });
    const weight = this.#view(this.#weightsBuffer, "model.norm.weight");
    step.flush();
    this.#norm(step.pass, {
      x: this.#xs[c.numLayers],
      ...this.#pendingResidual(c.numLayers, last),
      weight,
      out: this.#hf,
      rstd: this.#rstdf,
    });
  }

  /**
   * The residual still to be added to `x[l]` (l ≥ 1) by the norm that reads it first: layer
   * l−1's `xm`, which its down projection left out of `x[l]`; and that projection's split-K
   * partials when it left them unreduced (`down`), for the norm to sum into `x[l]`.
   */
  #pendingResidual(
    l: number,
    down: SplitPartials | null,
  ): { add?: GPUBuffer; xPartials?: SplitPartials } {
    if (l === 0) return {};
    const add = this.#acts[this.activations.setOf(l - 1)].xm;
    return down === null ? { add } : { add, xPartials: down };
  }

  /**
   * Forward of layers `from..to−1`, each from its input `x[l]` into its activation set and
   * `x[l+1]`. `x[l+1]` is left without its residual `xm`: the next norm adds it in place
   * ({@link #pendingResidual}). A `rebuild` (recomputation in the backward) starts from a
   * complete `x[l]` and stops each layer before the down projection: the backward reads the
   * activations, not `x[l+1]`, which it has already used. The down projection leaves a split
   * product unreduced (one dispatch fewer): the next norm sums its partials into `x[l+1]`, so
   * nothing may run another split product between them. Returns the last layer's partials (null:
   * `x[to]` written, or a rebuild) for the norm after the range.
   */
  #layersForward(
    step: GpuStep,
    range: { from: number; to: number; rebuild: boolean },
  ): SplitPartials | null {
    const k = this.#k, c = this.config;
    const { hiddenSize: C, intermediateSize: F } = c;
    const QW = c.numHeads * c.headDim, KVW = c.numKvHeads * c.headDim, N = this.rows;
    let down: SplitPartials | null = null;
    for (let l = range.from; l < range.to; l++) {
      // The layers before go to the GPU while this one is encoded (GPU profiles).
      if (l > range.from) step.flush();
      const pass = step.pass;
      const a = this.#acts[this.activations.setOf(l)], x = this.#xs[l], next = this.#xs[l + 1];
      const weight = this.#w(l, "input_layernorm.weight");
      const add = range.rebuild ? {} : this.#pendingResidual(l, down);
      this.#store(pass, a.h1, N * C, (out) => {
        this.#norm(pass, { x, ...add, weight, out, rstd: a.rstd1 });
      });
      this.#linear(pass, l, "self_attn.q_proj.weight", { x: a.h1, out: a.q, inDim: C, outDim: QW });
      this.#linear(pass, l, "self_attn.k_proj.weight", {
        x: a.h1,
        out: a.k,
        inDim: C,
        outDim: KVW,
      });
      this.#linear(pass, l, "self_attn.v_proj.weight", {
        x: a.h1,
        out: a.v,
        inDim: C,
        outDim: KVW,
      });
      this.#rope(pass, { q: a.q, k: a.k, inverse: false });
      k.attention(pass, {
        ...this.#attentionDims(),
        q: a.q,
        k: a.k,
        v: a.v,
        out: a.att,
        lse: a.lse,
      });
      // xm = x + att·Woᵀ: the projection goes into xm (or stays split-K partials, which the norm
      // sums), the norm adds the residual in place.
      const o = this.#linearUnreduced(pass, l, "self_attn.o_proj.weight", {
        x: a.att,
        out: a.xm,
        inDim: QW,
        outDim: C,
      });
      const post = this.#w(l, "post_attention_layernorm.weight");
      const xm = o === null ? { x: a.xm, add: x } : { x: a.xm, add: x, xPartials: o };
      this.#store(pass, a.h2, N * C, (out) => {
        this.#norm(pass, { ...xm, weight: post, out, rstd: a.rstd2 });
      });
      this.#linear(pass, l, "mlp.gate_proj.weight", { x: a.h2, out: a.gate, inDim: C, outDim: F });
      this.#linear(pass, l, "mlp.up_proj.weight", { x: a.h2, out: a.up, inDim: C, outDim: F });
      this.#store(pass, a.act, N * F, (out) => {
        k.swiglu(pass, { gate: a.gate, up: a.up, out, n: N * F });
      });
      if (range.rebuild) continue;
      // x[l+1] = xm + act·Wdᵀ: the next norm adds xm (#pendingResidual), and sums the product.
      down = this.#linearUnreduced(pass, l, "mlp.down_proj.weight", {
        x: a.act,
        out: next,
        inDim: F,
        outDim: C,
      });
    }
    return down;
  }

  /** LM head, loss and (with `lossScale`) their backward; leaves d hf in #dh. */
  #headAndLoss(step: GpuStep, slot: number, lossScale: number | null): void {
    this.#head.encode(step.pass, {
      params: this.#weightsBuffer,
      hf: this.#hf,
      dh: this.#dh,
      targets: this.#targets[slot],
      losses: this.#losses[slot],
      lossScale,
    });
  }

  #backward(step: GpuStep, slot: number): void {
    const k = this.#k, c = this.config;
    let pass = step.pass;
    const { hiddenSize: C, intermediateSize: F, vocabSize: V } = c;
    const QW = c.numHeads * c.headDim, KVW = c.numKvHeads * c.headDim, N = this.rows;
    const L = c.numLayers;
    // d(final norm input), from d hf (left in #dh by the head).
    this.#normBackward(pass, {
      dout: this.#dh,
      x: this.#xs[L],
      weight: this.#view(this.#weightsBuffer, "model.norm.weight"),
      dweight: this.#view(this.grads, "model.norm.weight"),
      rstd: this.#rstdf,
      dx: this.#dx,
    });
    for (let l = L - 1; l >= 0; l--) {
      // What is encoded goes to the GPU while this layer is (GPU profiles).
      step.flush();
      if (this.activations.rebuildsBeforeBackward(l)) {
        this.#layersForward(step, { from: l, to: l + 1, rebuild: true });
      }
      pass = step.pass;
      const a = this.#acts[this.activations.setOf(l)];
      // MLP: x[l+1] = xm + (silu(gate)·up)·Wdᵀ. #dx holds d x[l+1].
      this.#linearBackward(pass, l, "mlp.down_proj.weight", {
        dy: this.#dx,
        x: a.act,
        dx: this.#dact,
        inDim: F,
        outDim: C,
      });
      k.swigluBackward(pass, {
        gate: a.gate,
        up: a.up,
        dout: this.#dact,
        dgate: this.#dgate,
        dup: this.#dup,
        n: N * F,
      });
      // d h2 = dgate·Wg + dup·Wu into #dh. Both weight gradients first, so no split product runs
      // between the input gradients and the norm backward, which sums their split-K partials
      // (those left unreduced) into #dh itself.
      const gate = { dy: this.#dgate, x: a.h2, dx: this.#dh, inDim: C, outDim: F };
      const up = { dy: this.#dup, x: a.h2, dx: this.#dh, inDim: C, outDim: F, addToDx: true };
      this.#weightGradient(pass, l, "mlp.gate_proj.weight", gate);
      this.#weightGradient(pass, l, "mlp.up_proj.weight", up);
      const dGate = k.matmulUnreduced(
        pass,
        this.#inputGradientArgs(l, "mlp.gate_proj.weight", gate),
      );
      const dh = k.matmulUnreduced(
        pass,
        this.#inputGradientArgs(l, "mlp.up_proj.weight", up),
        dGate,
      );
      this.#normBackward(pass, {
        ...(dh.length === 0 ? {} : { doutPartials: dh }),
        dout: this.#dh,
        x: a.xm,
        weight: this.#w(l, "post_attention_layernorm.weight"),
        dweight: this.#g(l, "post_attention_layernorm.weight"),
        rstd: a.rstd2,
        dx: this.#dx,
        accumulate: true,
      });
      // Attention: xm = x + att·Woᵀ. #dx holds d xm (d x[l+1] plus the norm's part).
      this.#linearBackward(pass, l, "self_attn.o_proj.weight", {
        dy: this.#dx,
        x: a.att,
        dx: this.#datt,
        inDim: QW,
        outDim: C,
      });
      k.attentionBackward(pass, {
        ...this.#attentionDims(),
        q: a.q,
        k: a.k,
        v: a.v,
        out: a.att,
        lse: a.lse,
        dout: this.#datt,
        dq: this.#dq,
        dk: this.#dk,
        dv: this.#dv,
      });
      this.#rope(pass, { q: this.#dq, k: this.#dk, inverse: true });
      const qkv = [
        ["self_attn.q_proj.weight", this.#dq, QW],
        ["self_attn.k_proj.weight", this.#dk, KVW],
        ["self_attn.v_proj.weight", this.#dv, KVW],
      ] as const;
      for (const [i, [name, dy, outDim]] of qkv.entries()) {
        this.#linearBackward(pass, l, name, {
          dy,
          x: a.h1,
          dx: this.#dh,
          inDim: C,
          outDim,
          addToDx: i > 0,
        });
      }
      this.#normBackward(pass, {
        dout: this.#dh,
        x: this.#xs[l],
        weight: this.#w(l, "input_layernorm.weight"),
        dweight: this.#g(l, "input_layernorm.weight"),
        rstd: a.rstd1,
        dx: this.#dx,
        accumulate: true,
      });
    }
    k.embeddingBackward(pass, {
      ids: this.#tokens[slot],
      links: this.#links[slot],
      dout: this.#dx,
      dtable: this.#view(this.grads, "model.embed_tokens.weight"),
      n: N,
      c: C,
      v: V,
    });
    // The weight gradients' split-K reduces, left pending by #linearBackward.
    k.flushMatmulReduces(pass);
  }
}
