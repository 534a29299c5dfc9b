/**
 * The GPU operations the Llama model is built from, named by what the model needs. Each encodes
 * into a compute pass and never submits. {@link shaderKernels} binds them to the kernels in
 * shaders/; the model only sees this interface, so a kernel's calling convention changing touches
 * one adapter, not the model.
 *
 * Dimension names: N = B·T rows, C width, F MLP width, V vocab, H query heads, KVH key/value
 * heads, D head width. All tensors f32 row-major unless marked u32.
 *
 * @module
 */
import type {
  MatmulArgs,
  MatmulTiling,
  MatmulVariant,
  RopeFrequencies,
  SplitPartials,
  TensorView,
} from "../shaders/mod.ts";

/** Attention shapes: q `[B, T, H, D]`, k and v `[B, T, KVH, D]`, out `[B, T, H, D]`. */
export interface AttentionDims {
  batch: number;
  seqLen: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

/** Shapes of the key/value cache operations: new tokens at positions `start…` of one sequence. */
export interface CacheDims {
  /** New tokens n. */
  tokens: number;
  /** Position of the first new token. */
  start: number;
  /** Positions the cache holds, S (`start + tokens ≤ S`). */
  positions: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

/** Everything the model encodes. "accumulated" outputs are added to, others overwritten. */
export interface LlamaKernels {
  /** See shaders/matmul.ts: `c = alpha·op(a)·op(b) (+ c)`. */
  matmul(pass: GPUComputePassEncoder, args: MatmulArgs): void;
  /**
   * {@link matmul} for a plain `c = a·b (+ c)` whose one reader adds split-K partials itself
   * (shaders/matmul.ts's `encodeUnreduced`): a product that splits K leaves C unwritten and
   * returns its partials (after `keep`'s, an earlier product's for the same C, still unreduced),
   * valid until the next split product, to be passed to that reader (the next {@link rmsnorm}'s
   * `xPartials`, {@link rmsnormBackward}'s `doutPartials`); none when C was written.
   */
  matmulUnreduced(
    pass: GPUComputePassEncoder,
    args: MatmulArgs,
    keep?: readonly SplitPartials[],
  ): SplitPartials[];
  /**
   * The kernel variant {@link matmul} picks for `args` (nothing is bound or encoded): a product
   * split into parts passes it to every part, so the parts add up to the same bits.
   */
  matmulVariant(args: MatmulArgs): MatmulVariant;
  /**
   * The K indices per split-K slice {@link matmul} uses for `args` (`k`: unsplit): a product split
   * into parts passes it to every part as `sliceK`, so the parts sum in the same slices.
   */
  matmulSliceK(args: MatmulArgs): number;
  /**
   * The tiling {@link matmul} runs for `args` (the profile's table picks it by shape class): a
   * product split into parts passes it to every part as `tiling`, so a part never runs a tiling
   * the whole would not.
   */
  matmulTiling(args: MatmulArgs): MatmulTiling;
  /**
   * Size {@link matmul}'s transpose scratch for the largest products now (model/matmul_scratch.ts),
   * before any step: a scratch outgrown mid-step stays alive with its successor.
   */
  reserveMatmulScratch(bytes: { a: number; b: number }): void;
  /**
   * Encode the reduces of split products that {@link matmul} ran with `deferReduce` (one
   * dispatch for a group of them), so their outputs hold the products from here on.
   */
  flushMatmulReduces(pass: GPUComputePassEncoder): void;
  /** Drop the pending reduces unencoded: their step was abandoned (an exception while encoding). */
  discardMatmulReduces(): void;
  /**
   * out `[N, C]` = table `[V, C]` rows at ids (u32 `[N]`). A table over one storage binding is
   * looked up (and its gradient added) one row block at a time, with the same bits.
   */
  embedding(
    pass: GPUComputePassEncoder,
    a: { ids: TensorView; table: TensorView; out: TensorView; n: number; c: number; v: number },
  ): void;
  /**
   * dtable `[V, C]` (accumulated) += Σ over rows with id = row of dout `[N, C]`. `links` `[2N]`
   * u32: the ids' links written by the caller (shaders/embedding_links.ts), with the bits the
   * kernel's own O(N²) links pass would compute; absent, that pass runs first.
   */
  embeddingBackward(
    pass: GPUComputePassEncoder,
    a: {
      ids: TensorView;
      dout: TensorView;
      dtable: TensorView;
      links?: TensorView;
      n: number;
      c: number;
      v: number;
    },
  ): void;
  /**
   * out = x / rms(x) · weight per row of x `[N, C]`; rstd `[N]` = 1 / rms saved for backward.
   * With `add` `[N, C]`, `x += add` in place first (a residual connection fused into the norm);
   * with `xPartials` too, x is first the sum of those split-K partials ({@link matmulUnreduced}).
   */
  rmsnorm(
    pass: GPUComputePassEncoder,
    a: {
      x: TensorView;
      add?: TensorView;
      xPartials?: SplitPartials;
      weight: TensorView;
      out: TensorView;
      rstd: TensorView;
      n: number;
      c: number;
      eps: number;
    },
  ): void;
  /**
   * dx `[N, C]` (overwritten, or added to with `accumulate`: a residual's gradient fused in) and
   * dweight `[C]` (accumulated) from dout. With `doutPartials`, dout is first written with the sum
   * of those split-K partials, product after product (plus its old value when the first
   * accumulates: {@link matmulUnreduced}).
   */
  rmsnormBackward(
    pass: GPUComputePassEncoder,
    a: {
      dout: TensorView;
      doutPartials?: readonly SplitPartials[];
      x: TensorView;
      weight: TensorView;
      rstd: TensorView;
      dx: TensorView;
      accumulate?: boolean;
      dweight: TensorView;
      n: number;
      c: number;
    },
  ): void;
  /** Rotates x `[B, T, heads, D]` in place (HF rotate-half); `inverse` is the backward pass. */
  rope(
    pass: GPUComputePassEncoder,
    a: {
      x: TensorView;
      batch: number;
      seqLen: number;
      heads: number;
      headDim: number;
      /** θ and the frequency scaling, which the kernels turn into a (cos, sin) table. */
      rope: RopeFrequencies;
      inverse: boolean;
      /** u32 `[B·T]` position of each token (each `< T`); absent: `t`. */
      positions?: TensorView;
      /**
       * A second tensor of the same tokens `[B, T, second.heads, D]` (the keys beside the
       * queries) rotated too, with the bits of a call of its own; in the same dispatch where
       * that is faster (GPU profiles).
       */
      second?: { x: TensorView; heads: number };
    },
  ): void;
  /**
   * Causal GQA attention; lse `[B, H, T]` saved for backward. With `documents` (u32 `[B, T, 2]`,
   * each token's document `[start, end)` in its row) a token sees only its own document.
   */
  attention(
    pass: GPUComputePassEncoder,
    a: AttentionDims & {
      q: TensorView;
      k: TensorView;
      v: TensorView;
      out: TensorView;
      lse: TensorView;
      documents?: TensorView;
    },
  ): void;
  /**
   * Generation (model/inference/): `tokens` new tokens at positions `start…` of one sequence:
   * q `[tokens, H, D]` rotated in place, k `[tokens, KVH, D]` rotated and v written into rows
   * `start…` of kCache and vCache `[positions, KVH, D]`, RoPE by each token's own position.
   */
  appendKv(
    pass: GPUComputePassEncoder,
    a: CacheDims & {
      q: TensorView;
      k: TensorView;
      v: TensorView;
      kCache: TensorView;
      vCache: TensorView;
      /** RoPE's base frequency and scaling, as the training kernels' `rope` takes them. */
      rope: RopeFrequencies;
    },
  ): void;
  /**
   * Generation: out `[tokens, H, D]` = causal attention of q `[tokens, H, D]` (rotated) over cache
   * positions `0…start+token` of kCache and vCache `[positions, KVH, D]`.
   */
  cachedAttention(
    pass: GPUComputePassEncoder,
    a: CacheDims & { q: TensorView; kCache: TensorView; vCache: TensorView; out: TensorView },
  ): void;
  /** dq, dk, dv (overwritten) from dout; `documents` as the forward's. */
  attentionBackward(
    pass: GPUComputePassEncoder,
    a: AttentionDims & {
      documents?: TensorView;
      q: TensorView;
      k: TensorView;
      v: TensorView;
      out: TensorView;
      lse: TensorView;
      dout: TensorView;
      dq: TensorView;
      dk: TensorView;
      dv: TensorView;
    },
  ): void;
  /** out = silu(gate) · up, elementwise over n values. */
  swiglu(
    pass: GPUComputePassEncoder,
    a: { gate: TensorView; up: TensorView; out: TensorView; n: number },
  ): void;
  /** dgate, dup (overwritten) from dout. */
  swigluBackward(
    pass: GPUComputePassEncoder,
    a: {
      gate: TensorView;
      up: TensorView;
      dout: TensorView;
      dgate: TensorView;
      dup: TensorView;
      n: number;
    },
  ): void;
  /**
   * Cross-entropy of logits `[R, V]` against targets (i32 `[R]`, {@link IGNORE_TARGET} = no
   * loss): losses `[R]` per row (0 when ignored), and the logits overwritten by
   * `scale · (softmax − onehot)` (zero rows when ignored).
   */
  crossEntropy(
    pass: GPUComputePassEncoder,
    a: {
      logits: TensorView;
      targets: TensorView;
      losses: TensorView;
      rows: number;
      vocab: number;
      scale: number;
    },
  ): void;
  /**
   * {@link crossEntropy} (with `scale`) or {@link crossEntropyLoss} (`scale` null) over logits
   * stored as vocabulary blocks (`[R, width]` each, tiling `[0, V)` in order), for an LM head
   * split into row blocks; same bits as the unsplit call.
   */
  crossEntropyBlocked(
    pass: GPUComputePassEncoder,
    a: {
      blocks: readonly { logits: TensorView; start: number; width: number }[];
      targets: TensorView;
      losses: TensorView;
      rows: number;
      vocab: number;
      scale: number | null;
    },
  ): void;
  /** Forward-only cross-entropy: per-row losses `[R]` (0 when ignored); logits untouched. */
  crossEntropyLoss(
    pass: GPUComputePassEncoder,
    a: {
      logits: TensorView;
      targets: TensorView;
      losses: TensorView;
      rows: number;
      vocab: number;
    },
  ): void;
  /**
   * out `[n]` f16 (u32 words of two halves) = x `[n]` f32, rounded: the f16 weight copies and
   * saved activations of mixed precision.
   */
  castF16(pass: GPUComputePassEncoder, a: { x: TensorView; out: TensorView; n: number }): void;
  /** out `[n]` bf16 (u32 words of two) = x `[n]` f32, round to nearest even: bf16 precision. */
  castBf16(pass: GPUComputePassEncoder, a: { x: TensorView; out: TensorView; n: number }): void;
  /** y += x over n values (residual adds, gradient sums). */
  accumulate(pass: GPUComputePassEncoder, a: { x: TensorView; y: TensorView; n: number }): void;
  /**
   * out `[1]` = Σ x² over the inputs' values taken as one sequence, in a fixed order. Every input
   * but the last holds a multiple of {@link sumSquaresGranule} values; the result then has the
   * bits of one input holding them all (segmented gradients sum like one flat buffer).
   */
  sumSquares(
    pass: GPUComputePassEncoder,
    a: { inputs: readonly { x: TensorView; n: number }[]; out: TensorView },
  ): void;
  /** The granule of {@link sumSquares} in values (its chunk). */
  readonly sumSquaresGranule: number;
}

/**
 * Target meaning "no prediction here" (the last position of every sequence, and a masked label),
 * as torch's ignore index.
 */
export const IGNORE_TARGET = -100;
