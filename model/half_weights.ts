/**
 * The half-precision copies of the weights that mixed-precision training multiplies with: the
 * f32 masters stay in the flat parameter buffer (model/params.ts), where the optimizer and the
 * DisTrO apply update them; before each step's first forward pass, every matmul weight is
 * converted into one f16 (or bf16) buffer, which the forward and backward matmuls read at half
 * the memory traffic. Gradients never pass through f16. Both 16-bit types have the same layout
 * (two elements per u32 word), so only the conversion and the matmuls' operand type differ.
 *
 * Offsets in the f16 buffer are multiples of {@link HALF_ALIGN} elements (256 bytes, WebGPU's
 * storage-binding alignment), so they differ from the f32 layout's.
 *
 * @module
 */
import type { LlamaConfig } from "./hf_config.ts";
import type { ParamBuffers } from "./param_buffers.ts";
import {
  LAYER_TENSORS,
  layerTensorName,
  lmHeadWeightName,
  paramEntry,
  type ParamLayout,
} from "./params.ts";
import type { GpuRuntime, TensorView } from "../shaders/mod.ts";

/** The 16-bit storage types of mixed precision. */
export type HalfType = "f16" | "bf16";

/** f16 offsets are multiples of this many elements (256 bytes). */
export const HALF_ALIGN = 128;

/** One tensor of the f16 buffer: element offset and count. */
export interface HalfEntry {
  readonly name: string;
  /** First element in the f16 buffer (a multiple of HALF_ALIGN). */
  readonly offset: number;
  readonly size: number;
}

/**
 * The matmul weights of a Llama: every `*_proj.weight` of every layer and the LM head's weight
 * (`lm_head.weight`, or the embedding matrix when tied).
 */
export function matmulWeightNames(
  config: Pick<LlamaConfig, "numLayers" | "tieWordEmbeddings">,
): string[] {
  const out: string[] = [];
  for (let l = 0; l < config.numLayers; l++) {
    for (const s of LAYER_TENSORS) if (s.endsWith("_proj.weight")) out.push(layerTensorName(l, s));
  }
  out.push(lmHeadWeightName(config));
  return out;
}

/** Lays `names` out in one f16 buffer; returns the entries by name and the element count. */
export function halfLayout(
  layout: ParamLayout,
  names: readonly string[],
): { entries: Map<string, HalfEntry>; total: number } {
  const entries = new Map<string, HalfEntry>();
  let total = 0;
  for (const name of names) {
    const { size } = paramEntry(layout, name);
    entries.set(name, { name, offset: total, size });
    total += Math.ceil(size / HALF_ALIGN) * HALF_ALIGN;
  }
  return { entries, total };
}

/** The conversion the refresh runs (model/llama_kernels.ts `castF16` or `castBf16`). */
export type CastToF16 = (
  pass: GPUComputePassEncoder,
  a: { x: TensorView; out: TensorView; n: number },
) => void;

/** f16 (or bf16) copies of a model's matmul weights, in one GPU buffer. Dispose to free it. */
export class HalfWeights implements Disposable {
  /** The f16 buffer. */
  readonly buffer: GPUBuffer;
  /** Storage type of the copies (the matmuls' operand type). */
  readonly type: HalfType;
  readonly #rt: GpuRuntime;
  readonly #layout: ParamLayout;
  readonly #entries: Map<string, HalfEntry>;

  constructor(
    rt: GpuRuntime,
    options: { layout: ParamLayout; names: readonly string[]; type?: HalfType },
  ) {
    this.#rt = rt;
    this.type = options.type ?? "f16";
    this.#layout = options.layout;
    const { entries, total } = halfLayout(options.layout, options.names);
    this.#entries = entries;
    this.buffer = rt.buffer(`llama ${this.type} weights`, total * 2);
  }

  /** Bytes of the f16 buffer. */
  get bytes(): number {
    return this.buffer.size;
  }

  /** The f16 view of tensor `name`, or of its rows `[row0, row0 + rows)` of `width` elements. */
  view(name: string, rows?: { row0: number; rows: number; width: number }): TensorView {
    const e = this.#entries.get(name);
    if (e === undefined) throw new RangeError(`no f16 copy of "${name}"`);
    const first = rows ? rows.row0 * rows.width : 0;
    const count = rows ? rows.rows * rows.width : e.size;
    return { buffer: this.buffer, offset: (e.offset + first) * 2, size: count * 2 };
  }

  /**
   * Encodes the conversion of every copied tensor from the f32 `params` (flat layout), in ranges
   * that fit one storage binding of `maxBindingBytes`.
   */
  encodeRefresh(
    pass: GPUComputePassEncoder,
    args: { params: ParamBuffers; cast: CastToF16; maxBindingBytes: number },
  ): void {
    const per = Math.floor(args.maxBindingBytes / 4 / HALF_ALIGN) * HALF_ALIGN;
    if (per < HALF_ALIGN) {
      throw new RangeError(
        `storage bindings of ${args.maxBindingBytes} bytes cannot hold ${HALF_ALIGN} floats`,
      );
    }
    for (const e of this.#entries.values()) {
      const src = paramEntry(this.#layout, e.name);
      for (let start = 0; start < e.size; start += per) {
        const n = Math.min(per, e.size - start);
        args.cast(pass, {
          x: args.params.slice(src.offset + start, n),
          out: { buffer: this.buffer, offset: (e.offset + start) * 2, size: Math.ceil(n / 2) * 4 },
          n,
        });
      }
    }
  }

  /** Frees the f16 buffer. */
  [Symbol.dispose](): void {
    this.#rt.destroyBuffer(this.buffer);
  }
}
