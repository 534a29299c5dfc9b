/**
 * The LM head and the loss of the Llama model: `logits = hf·Wᵀ`, softmax cross-entropy against
 * the next tokens, and their backward (`d hf = dlogits·W`, `dW += dlogitsᵀ·hf`), R rows at a time
 * so the logits never exceed a few tens of MB.
 *
 * Shapes: hf, d hf `[N, C]`; W `[V, C]` (`lm_head.weight`); targets i32 and losses `[N]`; one
 * chunk's logits `[R, V]`, overwritten in place by their gradient.
 *
 * Tied embeddings (`tie_word_embeddings`): W is `model.embed_tokens.weight`, and `dW` is added
 * into the embedding's gradient. The model encodes this head's backward before the embedding
 * lookup's (a scatter-add into the same gradient), so the embedding gradient is the head's
 * contribution, chunk by chunk, then the lookup's: the same order on every client.
 *
 * A head over one storage binding (a 32000 × 2048 f32 head is 262 MB; lavapipe binds 128 MiB) is
 * split into vocabulary blocks `[Vb, C]`, and each chunk's logits are stored block by block
 * (`[R, Vb]` each): logits per block, the cross-entropy carried across blocks
 * (`CrossEntropy.blocked`), `dW_b += dlogits_bᵀ·hf`, and `d hf = Σ_b dlogits_b·W_b` as one chained
 * sum (`accumulate: "chain"`). Each matmul part is forced onto the variant, the tiling and the
 * split-K slices of the whole product (a part is narrower than the whole, so by its own shape the
 * profile's table could pick another tiling, and split-K other slices), so under the CPU profile
 * the split gives the unsplit bits
 * (model/llama_split_test.ts). Under the GPU profile it does not yet: blocked and whole heads
 * differ in the last bits (found 2026-11-26; the suspect is the blocked cross-entropy, which does
 * not share the workgroup row reduction's order). Blocking depends only on the adapter's binding
 * limit, so clients with the same limits still agree. A blocked head's input gradient never
 * splits K (a chained sum cannot); a head of one block splits it as any product.
 *
 * @module
 */
import type { HalfWeights } from "./half_weights.ts";
import type { LlamaConfig } from "./hf_config.ts";
import type { LlamaKernels } from "./llama_kernels.ts";
import { lmHeadWeightName, paramEntry, type ParamLayout } from "./params.ts";
import type { ParamBuffers } from "./param_buffers.ts";
import {
  type GpuRuntime,
  type MatmulArgs,
  type RowBlock,
  type TensorView,
} from "../shaders/mod.ts";
import { lmHeadBlocks, logitsChunkRows } from "./memory_plan.ts";

/** The LM head and loss of one model. Dispose it to free the logits buffer. */
export class LmHead implements Disposable {
  /** R: rows per chunk. */
  readonly chunkRows: number;
  /** Vocabulary blocks (one when `[V, C]` and a logits chunk fit one binding). */
  readonly blocks: readonly RowBlock[];
  readonly #rt: GpuRuntime;
  readonly #k: LlamaKernels;
  readonly #config: LlamaConfig;
  readonly #rows: number;
  /** Byte offset of each block's `[R, Vb]` logits in the chunk buffer. */
  readonly #offsets: number[] = [];
  readonly #logits: GPUBuffer;
  /**
   * f32 `[V, C]` head: the parameter buffer holding it (unless an encode names another), its
   * gradient view, and its view inside any buffer laid out as the parameters.
   */
  readonly #head: {
    params: ParamBuffers;
    grads: TensorView;
    view: (flat: ParamBuffers) => TensorView;
  };
  readonly #half: HalfWeights | null;
  /** `lm_head.weight`, or the embedding matrix of a tied model. */
  readonly #weightName: string;

  /**
   * `rows` = N = B·T (the targets say which rows are predictions);
   * `half`: the f16 weight copies the matmuls read in mixed precision (null: the f32 masters).
   */
  constructor(
    rt: GpuRuntime,
    options: {
      config: LlamaConfig;
      layout: ParamLayout;
      kernels: LlamaKernels;
      params: ParamBuffers;
      grads: ParamBuffers;
      rows: number;
      half: HalfWeights | null;
    },
  ) {
    const { config, rows } = options;
    const { hiddenSize: C, vocabSize: V } = config;
    this.#rt = rt;
    this.#k = options.kernels;
    this.#config = config;
    this.#rows = rows;
    this.#half = options.half;
    this.chunkRows = logitsChunkRows(rows, V, rt.profile.logitsChunkBytes);
    const { maxStorageBufferBindingSize: maxBytes, minStorageBufferOffsetAlignment: alignBytes } =
      rt.limits;
    this.blocks = lmHeadBlocks(V, C, this.chunkRows, {
      maxBytes,
      alignBytes,
      half: Boolean(options.half),
    });
    let bytes = 0;
    for (const b of this.blocks) {
      this.#offsets.push(bytes);
      bytes += Math.ceil((this.chunkRows * b.rows * 4) / alignBytes) * alignBytes;
    }
    this.#logits = rt.buffer("llama logits chunk", bytes);
    this.#weightName = lmHeadWeightName(config);
    paramEntry(options.layout, this.#weightName);
    const view = (flat: ParamBuffers) => flat.view(this.#weightName);
    this.#head = { params: options.params, grads: view(options.grads), view };
  }

  /**
   * Encodes the head, the per-row losses and (with `lossScale`) the backward: d hf is written to
   * `dh`, `lossScale · (softmax − onehot)` back-propagated into the head's gradient (added).
   * With `lossScale` null only the losses are computed (evaluation; `dh` untouched).
   */
  encode(
    pass: GPUComputePassEncoder,
    io: {
      /** The flat buffers holding the head's weights (the parameters unless told otherwise). */
      params?: ParamBuffers;
      hf: GPUBuffer;
      dh: GPUBuffer;
      targets: GPUBuffer;
      losses: GPUBuffer;
      lossScale: number | null;
    },
  ): void {
    const N = this.#rows, C = this.#config.hiddenSize;
    const head = this.#head.view(io.params ?? this.#head.params);
    for (let r0 = 0; r0 < N; r0 += this.chunkRows) {
      const R = Math.min(this.chunkRows, N - r0);
      const rows = (buffer: GPUBuffer, width: number): TensorView => ({
        buffer,
        offset: r0 * width * 4,
        size: R * width * 4,
      });
      this.#chunk(pass, {
        head,
        r0,
        R,
        hf: rows(io.hf, C),
        dh: rows(io.dh, C),
        targets: rows(io.targets, 1),
        losses: rows(io.losses, 1),
        lossScale: io.lossScale,
      });
    }
  }

  /** Frees the logits buffer. */
  [Symbol.dispose](): void {
    this.#rt.destroyBuffer(this.#logits);
  }

  /** Rows `b` of `head` as the matmuls read them: the f16 copy in mixed precision. */
  #weights(head: TensorView, b: RowBlock): TensorView {
    const C = this.#config.hiddenSize;
    if (this.#half) {
      return this.#half.view(this.#weightName, { row0: b.start, rows: b.rows, width: C });
    }
    return this.#rows0(head, b);
  }

  /** Rows `b` of a `[V, C]` view. */
  #rows0(view: TensorView, b: RowBlock): TensorView {
    const C = this.#config.hiddenSize;
    const { buffer, offset } = view as { buffer: GPUBuffer; offset: number };
    return { buffer, offset: offset + b.start * C * 4, size: b.rows * C * 4 };
  }

  #chunk(
    pass: GPUComputePassEncoder,
    io: {
      head: TensorView;
      r0: number;
      R: number;
      hf: TensorView;
      dh: TensorView;
      targets: TensorView;
      losses: TensorView;
      lossScale: number | null;
    },
  ): void {
    const k = this.#k;
    const { hiddenSize: C, vocabSize: V } = this.#config;
    const { R, hf, dh, targets, losses, lossScale } = io;
    const inputType = { a: "f32", b: this.#half?.type ?? "f32" } as const;
    const parts = this.blocks.map((block, i) => ({
      block,
      logits: { buffer: this.#logits, offset: this.#offsets[i], size: R * block.rows * 4 },
    }));
    // The whole products, whose variants every part runs (their views are never bound).
    const all = { start: 0, rows: V };
    const logits = { buffer: this.#logits, offset: 0, size: R * V * 4 };
    const forward: MatmulArgs = {
      a: hf,
      b: this.#weights(io.head, all),
      inputType,
      c: logits,
      m: R,
      n: V,
      k: C,
      layout: "nt",
    };
    const forwardPins = wholePins(k, forward);
    for (const { block, logits } of parts) {
      k.matmul(pass, {
        ...forward,
        b: this.#weights(io.head, block),
        c: logits,
        n: block.rows,
        ...forwardPins,
      });
    }
    if (parts.length > 1) {
      k.crossEntropyBlocked(pass, {
        blocks: parts.map(({ block, logits }) => ({
          logits,
          start: block.start,
          width: block.rows,
        })),
        targets,
        losses,
        rows: R,
        vocab: V,
        scale: lossScale,
      });
    } else if (lossScale === null) {
      k.crossEntropyLoss(pass, { logits, targets, losses, rows: R, vocab: V });
    } else {
      // One pass: loss, then the gradient over the logits in place (same bits as the blocked).
      k.crossEntropy(pass, {
        logits,
        targets,
        losses,
        rows: R,
        vocab: V,
        scale: lossScale,
      });
    }
    if (lossScale === null) return;
    // d hf = Σ_b dlogits_b·W_b (W [V, C]), chained over the blocks;  dW_b += dlogits_bᵀ·hf.
    const input: MatmulArgs = {
      a: logits,
      b: this.#weights(io.head, all),
      inputType,
      c: dh,
      m: R,
      n: C,
      k: V,
      layout: "nn",
    };
    const inputPins = wholePins(k, input);
    const weight: MatmulArgs = {
      a: logits,
      b: hf,
      c: this.#head.grads,
      m: V,
      n: C,
      k: R,
      layout: "tn",
      accumulate: true,
    };
    const weightPins = wholePins(k, weight);
    for (const [i, { block, logits }] of parts.entries()) {
      k.matmul(pass, {
        ...input,
        a: logits,
        b: this.#weights(io.head, block),
        k: block.rows,
        accumulate: i === 0 ? false : "chain",
        ...inputPins,
        // A chained sum never splits K; a head of one block is no chain, and splits as the
        // policy says (at 1 x 128 the 1B's unsplit product walked K = 128,256 with 64
        // workgroups: 15 of the step's 370 ms on an H200).
        ...(parts.length > 1 ? { sliceK: V } : {}),
      });
      k.matmul(pass, {
        ...weight,
        a: logits,
        c: this.#rows0(this.#head.grads, block),
        m: block.rows,
        ...weightPins,
      });
    }
  }
}

/**
 * What every part of the whole product `whole` is forced onto: its variant, its tiling and its
 * split-K slice length, so the parts run and sum as the whole would.
 */
function wholePins(
  k: LlamaKernels,
  whole: MatmulArgs,
): Pick<MatmulArgs, "variant" | "tiling" | "sliceK"> {
  return {
    variant: k.matmulVariant(whole),
    tiling: k.matmulTiling(whole),
    sliceK: k.matmulSliceK(whole),
  };
}
