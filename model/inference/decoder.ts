/**
 * The Llama forward for generation, with a key/value cache: each call appends tokens to one
 * sequence and returns their logits, so a prompt is read once (the prefill) and every new token
 * then costs one token's forward pass, attending over the keys and values cached for the tokens
 * before it. Forward only, f32, one sequence; the weights are laid out as model/params.ts says
 * (the training model's layout, loaded by model/checkpoint.ts), and the kernels are the training
 * model's ({@link LlamaKernels}) plus the two cache operations of shaders/kv_cache.ts and
 * shaders/cached_attention.ts.
 *
 * Shapes, for a call of n new tokens at positions `p…p+n−1` (n ≤ R rows per pass; a longer call
 * runs in passes of R):
 * ```
 * ids u32 [n]                x, xm [n, C]        residual stream, and after the attention
 * h [n, C], rstd [n]         RMSNorm outputs     q [n, H·D], k, v [n, KVH·D], att [n, H·D]
 * gate, up, act [n, F]       SwiGLU MLP          kCache[l], vCache[l] [S, KVH, D] per layer
 * hf [r, C] → logits [r, V]  r = 1 (the last token) or n (every token)
 * ```
 * Per layer: `h = rmsnorm(x)`; q, k, v projections; `appendKv` rotates q and writes the rotated
 * k and v into cache rows `p…`; `cachedAttention` attends q over positions `0…`; `xm = x + att·Woᵀ`;
 * `x = xm + (silu(h2·Wgᵀ)·h2·Wuᵀ)·Wdᵀ` with `h2 = rmsnorm(xm)`. The LM head runs in vocabulary
 * blocks when `[V, C]` is over one storage binding (model/inference/logit_blocks.ts).
 *
 * @module
 */
import type { LlamaConfig } from "../hf_config.ts";
import type { LlamaKernels } from "../llama_kernels.ts";
import { lmHeadBlocks } from "../memory_plan.ts";
import { transposeScratchBytes } from "../matmul_scratch.ts";
import { ParamBuffers } from "../param_buffers.ts";
import {
  type LayerTensor,
  layerTensorName,
  lmHeadWeightName,
  type ParamLayout,
  paramSegments,
} from "../params.ts";
import { shaderKernels } from "../shader_kernels.ts";
import { gatherLogits, type LogitBlock, logitBlockLayout } from "./logit_blocks.ts";
import { type GpuRuntime, resolveView, type TensorView } from "../../shaders/mod.ts";

/** Construction options of {@link LlamaDecoder}. */
export interface LlamaDecoderOptions {
  config: LlamaConfig;
  layout: ParamLayout;
  /** The parameters `[layout.totalSize]` (model/checkpoint.ts `readModelDir`). */
  weights: Float32Array;
  /** S: positions the cache holds, prompt and generated tokens together (≤ max_position_embeddings). */
  contextLength: number;
  /** R: tokens per forward pass (default: min(S, 256)); a longer call runs in several passes. */
  chunkTokens?: number;
  /** Logit rows one pass can return (default 1): `logits: "all"` passes take at most this many tokens. */
  logitRows?: number;
  /** Kernels to use (default: the shaders/ kernels, made and disposed by the decoder). */
  kernels?: LlamaKernels;
}

/** What {@link LlamaDecoder.append} returns. */
export type LogitsWanted = "last" | "all";

/** A Llama forward with a key/value cache over one sequence. Dispose it to free every buffer. */
export class LlamaDecoder implements Disposable {
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  /** S. */
  readonly contextLength: number;
  /** R. */
  readonly chunkTokens: number;
  readonly logitRows: number;
  /** `[P]` parameters. */
  readonly params: ParamBuffers;
  readonly #rt: GpuRuntime;
  readonly #k: LlamaKernels;
  readonly #ownKernels: Disposable | null = null;
  readonly #owned: GPUBuffer[] = [];
  readonly #ids: GPUBuffer;
  readonly #x: GPUBuffer;
  readonly #xm: GPUBuffer;
  readonly #h: GPUBuffer;
  readonly #rstd: GPUBuffer;
  readonly #q: GPUBuffer;
  readonly #kNew: GPUBuffer;
  readonly #vNew: GPUBuffer;
  readonly #att: GPUBuffer;
  readonly #gate: GPUBuffer;
  readonly #up: GPUBuffer;
  readonly #act: GPUBuffer;
  /** `[C]`: the last token's residual, copied out for the final norm (views need alignment). */
  readonly #xLast: GPUBuffer;
  readonly #kCache: GPUBuffer[] = [];
  readonly #vCache: GPUBuffer[] = [];
  readonly #logits: GPUBuffer;
  readonly #blocks: LogitBlock[];
  #position = 0;

  constructor(rt: GpuRuntime, options: LlamaDecoderOptions) {
    const { config, layout, weights, contextLength: S } = options;
    if (!Number.isInteger(S) || S < 1 || S > config.maxPositionEmbeddings) {
      throw new RangeError(
        `contextLength must be in [1, ${config.maxPositionEmbeddings}] ` +
          `(max_position_embeddings), got ${S}`,
      );
    }
    if (config.headDim % 4 !== 0 || config.headDim > 256) {
      throw new RangeError(
        `head width ${config.headDim} is not supported: the attention kernel needs a multiple of 4, at most 256`,
      );
    }
    const R = options.chunkTokens ?? Math.min(S, 256);
    const logitRows = options.logitRows ?? 1;
    for (const [name, v] of [["chunkTokens", R], ["logitRows", logitRows]] as const) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be >= 1, got ${v}`);
    }
    this.#rt = rt;
    this.config = config;
    this.layout = layout;
    this.contextLength = S;
    this.chunkTokens = R;
    this.logitRows = logitRows;
    if (options.kernels) {
      this.#k = options.kernels;
    } else {
      const own = shaderKernels(rt);
      this.#k = own;
      this.#ownKernels = own;
    }
    const segments = paramSegments(layout, rt.limits.maxBufferSize);
    this.params = new ParamBuffers(rt, {
      label: "decoder params",
      layout,
      segments,
      init: weights,
    });
    const { hiddenSize: C, intermediateSize: F, headDim: D, vocabSize: V } = config;
    const QW = config.numHeads * D, KVW = config.numKvHeads * D;
    const f32 = (label: string, count: number) => this.#buffer(label, count * 4);
    this.#ids = f32("ids", R);
    this.#x = f32("x", R * C);
    this.#xm = f32("xm", R * C);
    this.#h = f32("h", R * C);
    this.#rstd = f32("rstd", R);
    this.#q = f32("q", R * QW);
    this.#kNew = f32("k", R * KVW);
    this.#vNew = f32("v", R * KVW);
    this.#att = f32("att", R * QW);
    this.#gate = f32("gate", R * F);
    this.#up = f32("up", R * F);
    this.#act = f32("act", R * F);
    this.#xLast = f32("x last", C);
    for (let l = 0; l < config.numLayers; l++) {
      this.#kCache.push(f32(`k cache ${l}`, S * KVW));
      this.#vCache.push(f32(`v cache ${l}`, S * KVW));
    }
    const { maxStorageBufferBindingSize: maxBytes, minStorageBufferOffsetAlignment: alignBytes } =
      rt.limits;
    const layoutOfBlocks = logitBlockLayout(
      lmHeadBlocks(V, C, logitRows, { maxBytes, alignBytes, half: false }),
      logitRows,
      alignBytes,
    );
    this.#blocks = layoutOfBlocks.blocks;
    this.#logits = this.#buffer("logits", layoutOfBlocks.bytes);
    this.#k.reserveMatmulScratch(transposeScratchBytes({
      config,
      rows: R,
      chunkRows: logitRows,
      headBlockRows: Math.max(...this.#blocks.map((b) => b.rows)),
      weightBytes: 4,
    }));
  }

  /** The LM head's vocabulary blocks (one unless `[V, C]` is over one storage binding). */
  get headBlocks(): readonly LogitBlock[] {
    return this.#blocks;
  }

  /** Tokens in the cache: the position the next appended token takes. */
  get position(): number {
    return this.#position;
  }

  /** Empties the cache: the next append starts a new sequence at position 0. */
  reset(): void {
    this.#position = 0;
  }

  /**
   * Appends `tokens` to the sequence (positions `position…`) and returns the logits of the last
   * one `[V]`, or with `logits: "all"` of every one `[n, V]`. Throws a RangeError when a token is
   * outside the vocabulary or the tokens do not fit the context; the cache is then unchanged.
   */
  async append(
    tokens: ArrayLike<number>,
    options: { logits?: LogitsWanted; signal?: AbortSignal } = {},
  ): Promise<Float32Array> {
    const wanted = options.logits ?? "last";
    const n = tokens.length, V = this.config.vocabSize;
    if (n < 1) throw new RangeError("append needs at least one token");
    if (this.#position + n > this.contextLength) {
      throw new RangeError(
        `${n} more tokens at position ${this.#position} do not fit the context of ` +
          `${this.contextLength} positions`,
      );
    }
    for (let i = 0; i < n; i++) {
      const t = tokens[i];
      if (!Number.isInteger(t) || t < 0 || t >= V) {
        throw new RangeError(`token ${t} at index ${i} is outside the vocabulary (${V})`);
      }
    }
    const per = wanted === "all" ? Math.min(this.chunkTokens, this.logitRows) : this.chunkTokens;
    const rows: Float32Array[] = [];
    for (let first = 0; first < n; first += per) {
      const count = Math.min(per, n - first);
      const last = first + count === n;
      const ids = Uint32Array.from({ length: count }, (_, i) => tokens[first + i]);
      const logits = wanted === "all" || last
        ? await this.#pass(ids, wanted === "all" ? "all" : "last", options.signal)
        : await this.#pass(ids, null, options.signal);
      if (logits !== null) rows.push(logits);
    }
    if (rows.length === 1) return rows[0];
    const out = new Float32Array(n * V);
    let at = 0;
    for (const r of rows) {
      out.set(r, at);
      at += r.length;
    }
    return out;
  }

  /** Frees every buffer the decoder made. */
  [Symbol.dispose](): void {
    for (const b of this.#owned) this.#rt.destroyBuffer(b);
    this.#owned.length = 0;
    this.params[Symbol.dispose]();
    this.#ownKernels?.[Symbol.dispose]();
  }

  // ---- internals ----

  #buffer(label: string, bytes: number): GPUBuffer {
    const b = this.#rt.buffer(`decoder ${label}`, Math.max(4, bytes));
    this.#owned.push(b);
    return b;
  }

  #w(l: number, s: LayerTensor): TensorView {
    return this.params.view(layerTensorName(l, s));
  }

  /** `out [n, outDim] = x [n, inDim] · Wᵀ` (W `[outDim, inDim]`, as HF stores it). */
  #linear(
    pass: GPUComputePassEncoder,
    n: number,
    weight: TensorView,
    io: { x: GPUBuffer; out: GPUBuffer | TensorView; inDim: number; outDim: number },
  ): void {
    this.#k.matmul(pass, {
      a: io.x,
      b: weight,
      c: io.out,
      m: n,
      n: io.outDim,
      k: io.inDim,
      layout: "nt",
    });
  }

  /**
   * One submission: `ids` at positions `position…`, then the logits of the last token, of every
   * token, or none (`wanted` null: a prompt's pass before its last).
   */
  async #pass(
    ids: Uint32Array,
    wanted: LogitsWanted | null,
    signal?: AbortSignal,
  ): Promise<Float32Array | null> {
    const k = this.#k, c = this.config, rt = this.#rt;
    const { hiddenSize: C, intermediateSize: F, vocabSize: V, rmsNormEps: eps } = c;
    const QW = c.numHeads * c.headDim, KVW = c.numKvHeads * c.headDim;
    const n = ids.length, start = this.#position;
    rt.write(this.#ids, ids);
    const step = rt.beginStep(`decode ${n} tokens at ${start}`);
    const pass = () => step.pass;
    k.embedding(pass(), {
      ids: this.#ids,
      table: this.params.view("model.embed_tokens.weight"),
      out: this.#x,
      n,
      c: C,
      v: V,
    });
    const cache = {
      tokens: n,
      start,
      positions: this.contextLength,
      heads: c.numHeads,
      kvHeads: c.numKvHeads,
      headDim: c.headDim,
    };
    for (let l = 0; l < c.numLayers; l++) {
      const p = pass();
      const norm = (x: GPUBuffer, weight: TensorView) =>
        k.rmsnorm(p, { x, weight, out: this.#h, rstd: this.#rstd, n, c: C, eps });
      norm(this.#x, this.#w(l, "input_layernorm.weight"));
      const h = { x: this.#h, inDim: C };
      this.#linear(p, n, this.#w(l, "self_attn.q_proj.weight"), { ...h, out: this.#q, outDim: QW });
      this.#linear(p, n, this.#w(l, "self_attn.k_proj.weight"), {
        ...h,
        out: this.#kNew,
        outDim: KVW,
      });
      this.#linear(p, n, this.#w(l, "self_attn.v_proj.weight"), {
        ...h,
        out: this.#vNew,
        outDim: KVW,
      });
      const caches = { kCache: this.#kCache[l], vCache: this.#vCache[l] };
      k.appendKv(p, {
        ...cache,
        ...caches,
        q: this.#q,
        k: this.#kNew,
        v: this.#vNew,
        rope: { theta: c.ropeTheta, scaling: c.ropeScaling },
      });
      k.cachedAttention(p, { ...cache, ...caches, q: this.#q, out: this.#att });
      this.#linear(p, n, this.#w(l, "self_attn.o_proj.weight"), {
        x: this.#att,
        out: this.#xm,
        inDim: QW,
        outDim: C,
      });
      k.accumulate(p, { x: this.#x, y: this.#xm, n: n * C });
      norm(this.#xm, this.#w(l, "post_attention_layernorm.weight"));
      this.#linear(p, n, this.#w(l, "mlp.gate_proj.weight"), { ...h, out: this.#gate, outDim: F });
      this.#linear(p, n, this.#w(l, "mlp.up_proj.weight"), { ...h, out: this.#up, outDim: F });
      k.swiglu(p, { gate: this.#gate, up: this.#up, out: this.#act, n: n * F });
      // x = xm + down(act): the projection into x (free now), then the residual.
      this.#linear(p, n, this.#w(l, "mlp.down_proj.weight"), {
        x: this.#act,
        out: this.#x,
        inDim: F,
        outDim: C,
      });
      k.accumulate(p, { x: this.#xm, y: this.#x, n: n * C });
    }
    let rows = 0;
    if (wanted !== null) {
      rows = wanted === "all" ? n : 1;
      let x = this.#x;
      if (wanted === "last" && n > 1) {
        step.encoder.copyBufferToBuffer(this.#x, (n - 1) * C * 4, this.#xLast, 0, C * 4);
        x = this.#xLast;
      }
      const weight = this.params.view("model.norm.weight");
      k.rmsnorm(pass(), { x, weight, out: this.#h, rstd: this.#rstd, n: rows, c: C, eps });
      const head = resolveView(this.params.view(lmHeadWeightName(c)));
      for (const b of this.#blocks) {
        const block = {
          buffer: head.buffer,
          offset: head.offset + b.start * C * 4,
          size: b.rows * C * 4,
        };
        this.#linear(pass(), rows, block, {
          x: this.#h,
          out: { buffer: this.#logits, offset: b.offset, size: rows * b.rows * 4 },
          inDim: C,
          outDim: b.rows,
        });
      }
    }
    await step.submit();
    this.#position = start + n;
    if (wanted === null) return null;
    const data = await rt.read(this.#logits, { signal });
    return gatherLogits(data, this.#blocks, rows, V);
  }
}
