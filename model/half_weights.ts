/**
 * The half-precision copies of the weights that mixed-precision training multiplies with: the
 * f32 masters stay in the parameter segment buffers (model/param_buffers.ts), where the optimizer
 * and the DisTrO apply update them; before each step's first forward pass, every matmul weight is
 * converted into f16 (or bf16) buffers, which the forward and backward matmuls read at half the
 * memory traffic. Gradients never pass through f16. Both 16-bit types have the same layout (two
 * elements per u32 word), so only the conversion and the matmuls' operand type differ.
 *
 * The copies have their own layout ({@link halfLayout}: offsets in 16-bit elements, multiples of
 * {@link HALF_ALIGN}, i.e. 256 bytes, the largest storage-offset alignment WebGPU allows), split
 * into as many buffers as `maxBufferSize` requires on whole tensors by the parameters' own
 * `paramSegments` (model/params.ts). A matmul binds one tensor (or, for the LM head, one row
 * block) of one segment buffer, so every binding offset stays a multiple of 256 bytes.
 *
 * @module
 */
import type { LlamaConfig } from "./hf_config.ts";
import type { ParamBuffers } from "./param_buffers.ts";
import {
  LAYER_TENSORS,
  layerTensorName,
  lmHeadWeightName,
  packLayout,
  paramEntry,
  type ParamLayout,
  type ParamSegment,
  paramSegments,
  segmentIndex,
} from "./params.ts";
import type { GpuRuntime, TensorView } from "../shaders/mod.ts";

/** The 16-bit storage types of mixed precision. */
export type HalfType = "f16" | "bf16";

/** Offsets of the copies are multiples of this many 16-bit elements (256 bytes). */
export const HALF_ALIGN = 128;

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

/**
 * The layout of the copies of `names` (tensors of the f32 `layout`): offsets, sizes and
 * `totalSize` count 16-bit elements, each tensor at a multiple of HALF_ALIGN.
 */
export function halfLayout(layout: ParamLayout, names: readonly string[]): ParamLayout {
  return packLayout(names.map((name) => paramEntry(layout, name)), HALF_ALIGN);
}

/**
 * How the copies of `names` split into buffers of at most `maxBufferBytes`: the parameters'
 * segmentation (model/params.ts `paramSegments`) at two bytes an element.
 */
export function halfSegments(
  layout: ParamLayout,
  options: { names: readonly string[]; maxBufferBytes: number },
): ParamSegment[] {
  const half = halfLayout(layout, options.names);
  return paramSegments(half, options.maxBufferBytes, { elementBytes: 2 });
}

/** The conversion the refresh runs (model/llama_kernels.ts `castF16` or `castBf16`). */
export type CastToF16 = (
  pass: GPUComputePassEncoder,
  a: { x: TensorView; out: TensorView; n: number },
) => void;

/** Where one copy lives: its segment's buffer and its first byte there. */
interface Placement {
  readonly buffer: GPUBuffer;
  readonly byteOffset: number;
  readonly size: number;
}

/**
 * f16 (or bf16) copies of a model's matmul weights, in one GPU buffer per segment of
 * {@link halfSegments}. Dispose to free them.
 */
export class HalfWeights implements Disposable {
  /** Storage type of the copies (the matmuls' operand type). */
  readonly type: HalfType;
  /** The copies' layout, in 16-bit elements. */
  readonly layout: ParamLayout;
  /** Its split into buffers (one when the copies fit `maxBufferSize`). */
  readonly segments: readonly ParamSegment[];
  /** `buffers[s]` holds `[segments[s].size]` 16-bit elements, two per u32 word. */
  readonly buffers: readonly GPUBuffer[];
  readonly #rt: GpuRuntime;
  readonly #masters: ParamLayout;
  readonly #placements = new Map<string, Placement>();

  /**
   * `layout`: the f32 masters' layout; `names`: the tensors to copy; `maxBufferBytes`: the
   * largest buffer (default the adapter's `maxBufferSize`).
   */
  constructor(
    rt: GpuRuntime,
    options: {
      layout: ParamLayout;
      names: readonly string[];
      type?: HalfType;
      maxBufferBytes?: number;
    },
  ) {
    this.#rt = rt;
    this.type = options.type ?? "f16";
    this.#masters = options.layout;
    this.layout = halfLayout(options.layout, options.names);
    this.segments = paramSegments(
      this.layout,
      options.maxBufferBytes ?? rt.limits.maxBufferSize,
      { elementBytes: 2 },
    );
    this.buffers = this.segments.map((seg, i) => {
      const label = this.segments.length === 1
        ? `llama ${this.type} weights`
        : `llama ${this.type} weights segment ${i}`;
      // Segment sizes are multiples of HALF_ALIGN, so whole u32 words.
      return rt.buffer(label, seg.size * 2);
    });
    for (const e of this.layout.entries) {
      const s = segmentIndex(this.segments, e.offset);
      this.#placements.set(e.name, {
        buffer: this.buffers[s],
        byteOffset: (e.offset - this.segments[s].start) * 2,
        size: e.size,
      });
    }
  }

  /** Bytes of all copy buffers together. */
  get bytes(): number {
    return this.buffers.reduce((sum, b) => sum + b.size, 0);
  }

  /** The 16-bit view of tensor `name`, or of its rows `[row0, row0 + rows)` of `width` elements. */
  view(
    name: string,
    rows?: { row0: number; rows: number; width: number },
  ): { buffer: GPUBuffer; offset: number; size: number } {
    const p = this.#placements.get(name);
    if (p === undefined) throw new RangeError(`no ${this.type} copy of "${name}"`);
    const first = rows ? rows.row0 * rows.width : 0;
    const count = rows ? rows.rows * rows.width : p.size;
    if (first < 0 || first + count > p.size) {
      throw new RangeError(
        `elements [${first}, ${first + count}) are outside "${name}" of ${p.size}`,
      );
    }
    return { buffer: p.buffer, offset: p.byteOffset + first * 2, size: count * 2 };
  }

  /**
   * Encodes the conversion of every copied tensor from the f32 `params` (laid out like the
   * masters), segment by segment, in ranges that fit one storage binding of `maxBindingBytes`.
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
    for (const seg of this.segments) {
      for (const e of this.layout.entries.slice(seg.first, seg.end)) {
        const src = paramEntry(this.#masters, e.name);
        const { buffer, byteOffset } = this.#placements.get(e.name)!;
        for (let start = 0; start < e.size; start += per) {
          const n = Math.min(per, e.size - start);
          args.cast(pass, {
            x: args.params.slice(src.offset + start, n),
            out: { buffer, offset: byteOffset + start * 2, size: Math.ceil(n / 2) * 4 },
            n,
          });
        }
      }
    }
  }

  /** Frees the copy buffers. */
  [Symbol.dispose](): void {
    for (const b of this.buffers) this.#rt.destroyBuffer(b);
  }
}
