/**
 * Where every Llama weight lives: one flat f32 buffer plus a table of `{name, shape, offset}`
 * under the standard Hugging Face tensor names. Gradients and optimizer state use the same
 * layout, so one GPU buffer of `layout.totalSize` floats holds each of them and any tensor is a
 * sub-range of it.
 *
 * Dimensions: V vocab, C hidden, F intermediate, L layers, NH heads, NKV key/value heads,
 * HD head width (C / NH). Matrices are `[out, in]` like `torch.nn.Linear.weight`.
 *
 * @module
 */
import type { LlamaConfig } from "./hf_config.ts";

/** Offsets are multiples of this many floats (256 bytes: WebGPU's storage-binding alignment). */
export const PARAM_ALIGN = 64;

/** One tensor in the flat buffer. */
export interface ParamEntry {
  /** Hugging Face name, e.g. `model.layers.0.self_attn.q_proj.weight`. */
  name: string;
  /** Row-major shape. */
  shape: number[];
  /** First element, in floats from the start of the buffer (a multiple of PARAM_ALIGN). */
  offset: number;
  /** Element count (product of shape). */
  size: number;
  /** How the tensor is initialised: normal(0, initializer_range) or all ones (norm gains). */
  init: "normal" | "ones";
}

/** The whole table, in buffer order. */
export interface ParamLayout {
  entries: ParamEntry[];
  byName: Map<string, ParamEntry>;
  /** Floats in the flat buffer, alignment padding included (padding stays zero). */
  totalSize: number;
  /** Sum of the tensors' sizes (no padding). */
  paramCount: number;
}

/** The per-layer tensor name suffixes, in buffer order. */
export const LAYER_TENSORS = [
  "input_layernorm.weight",
  "self_attn.q_proj.weight",
  "self_attn.k_proj.weight",
  "self_attn.v_proj.weight",
  "self_attn.o_proj.weight",
  "post_attention_layernorm.weight",
  "mlp.gate_proj.weight",
  "mlp.up_proj.weight",
  "mlp.down_proj.weight",
] as const;
/** One per-layer tensor suffix. */
export type LayerTensor = typeof LAYER_TENSORS[number];

/** The full name of a per-layer tensor. */
export function layerTensorName(layer: number, suffix: LayerTensor): string {
  return `model.layers.${layer}.${suffix}`;
}

/**
 * The tensor the LM head multiplies by: `lm_head.weight`, or with `tie_word_embeddings` the
 * embedding matrix itself (`model.embed_tokens.weight`, `[V, C]` either way).
 */
export function lmHeadWeightName(config: Pick<LlamaConfig, "tieWordEmbeddings">): string {
  return config.tieWordEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight";
}

/**
 * The expected shape of every tensor, in buffer order. A tied model (`tie_word_embeddings`) has
 * no `lm_head.weight`: its head is the embedding matrix, as in HF, whose tied checkpoints do
 * not store it either.
 */
export function llamaTensorShapes(config: LlamaConfig): [string, number[], "normal" | "ones"][] {
  const { hiddenSize: c, intermediateSize: f, vocabSize: v, numLayers: l } = config;
  const kv = config.numKvHeads * config.headDim;
  const perLayer: Record<LayerTensor, [number[], "normal" | "ones"]> = {
    "input_layernorm.weight": [[c], "ones"],
    "self_attn.q_proj.weight": [[c, c], "normal"],
    "self_attn.k_proj.weight": [[kv, c], "normal"],
    "self_attn.v_proj.weight": [[kv, c], "normal"],
    "self_attn.o_proj.weight": [[c, c], "normal"],
    "post_attention_layernorm.weight": [[c], "ones"],
    "mlp.gate_proj.weight": [[f, c], "normal"],
    "mlp.up_proj.weight": [[f, c], "normal"],
    "mlp.down_proj.weight": [[c, f], "normal"],
  };
  const out: [string, number[], "normal" | "ones"][] = [
    ["model.embed_tokens.weight", [v, c], "normal"],
  ];
  for (let i = 0; i < l; i++) {
    for (const s of LAYER_TENSORS) out.push([layerTensorName(i, s), ...perLayer[s]]);
  }
  out.push(["model.norm.weight", [c], "ones"]);
  if (!config.tieWordEmbeddings) out.push(["lm_head.weight", [v, c], "normal"]);
  return out;
}

/**
 * Lays the model's tensors out in one flat buffer, each aligned to PARAM_ALIGN floats (a tied
 * model without `lm_head.weight`, see {@link llamaTensorShapes}).
 */
export function llamaParamLayout(config: LlamaConfig): ParamLayout {
  const tensors = llamaTensorShapes(config).map(([name, shape, init]) => ({ name, shape, init }));
  return packLayout(tensors, PARAM_ALIGN);
}

/**
 * Lays `tensors` out back to back in their order, each starting at a multiple of `align`
 * elements: the f32 layout ({@link llamaParamLayout}) and the 16-bit weight copies
 * (model/half_weights.ts), whose elements are half as wide, so their alignment twice as many.
 */
export function packLayout(
  tensors: Iterable<Pick<ParamEntry, "name" | "shape" | "init">>,
  align: number,
): ParamLayout {
  const entries: ParamEntry[] = [];
  let offset = 0;
  let paramCount = 0;
  for (const { name, shape, init } of tensors) {
    const size = shape.reduce((a, b) => a * b, 1);
    entries.push({ name, shape, offset, size, init });
    offset += Math.ceil(size / align) * align;
    paramCount += size;
  }
  return {
    entries,
    byName: new Map(entries.map((e) => [e.name, e])),
    totalSize: offset,
    paramCount,
  };
}

/** The entry for `name`; throws a RangeError naming it when the layout has no such tensor. */
export function paramEntry(layout: ParamLayout, name: string): ParamEntry {
  const e = layout.byName.get(name);
  if (e === undefined) throw new RangeError(`no parameter named "${name}"`);
  return e;
}

/** The view of tensor `name` inside a flat buffer laid out by `layout`. */
export function paramView(layout: ParamLayout, flat: Float32Array, name: string): Float32Array {
  const e = paramEntry(layout, name);
  return flat.subarray(e.offset, e.offset + e.size);
}

/**
 * Splits `[0, size)` floats of a flat buffer into `[start, count]` ranges whose bytes fit in one
 * storage binding of `maxBindingBytes`, each starting at a multiple of PARAM_ALIGN floats (the
 * binding-offset alignment). Kernels over the whole buffer dispatch once per range.
 */
export function bindingRanges(size: number, maxBindingBytes: number): [number, number][] {
  const per = Math.floor(maxBindingBytes / 4 / PARAM_ALIGN) * PARAM_ALIGN;
  if (per < PARAM_ALIGN) {
    throw new RangeError(`storage bindings of ${maxBindingBytes} bytes are too small`);
  }
  const out: [number, number][] = [];
  for (let start = 0; start < size; start += per) out.push([start, Math.min(per, size - start)]);
  return out;
}

/** murmur3's 32-bit finaliser: a bijective mix in which every input bit flips ~half the output. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a-32 of a string's UTF-16 code units (tensor names are ASCII). */
function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The key every element of tensor `name` mixes in (see {@link seededNormals}). */
function tensorKey(seed: number, name: string): number {
  return fmix32((seed >>> 0) ^ fnv1a32(name));
}

/** Element `i` of the normals keyed by `key` (see {@link seededNormals}). */
function normalAt(key: number, i: number): number {
  const u0 = (fmix32(key ^ fmix32(2 * i)) + 0.5) / 4294967296;
  const u1 = (fmix32(key ^ fmix32(2 * i + 1)) + 0.5) / 4294967296;
  return Math.sqrt(-2 * Math.log(u0)) * Math.cos(2 * Math.PI * u1);
}

/**
 * Deterministic standard normals for one tensor: element `i` uses the counter-based uniforms
 * `u_k = (fmix32(key ^ fmix32(2i + k)) + 0.5) / 2^32` for k = 0, 1 with
 * `key = fmix32(seed ^ fnv1a32(name))`, then Box-Muller `sqrt(-2 ln u_0) cos(2π u_1)`.
 * Each element depends only on (seed, name, i), so any slice can be generated independently
 * and every client gets the same bits for the same seed.
 */
export function seededNormals(seed: number, name: string, count: number): Float64Array {
  const key = tensorKey(seed, name);
  const out = new Float64Array(count);
  for (let i = 0; i < count; i++) out[i] = normalAt(key, i);
  return out;
}

/**
 * Floats a seeded upload generates and writes at a time (16 MiB of f32): the host's share of a
 * seeded start, whatever the model's size (model/seeded_upload.ts, model/memory_plan.ts).
 */
export const SEEDED_CHUNK_FLOATS = 1 << 22;

/**
 * Writes elements `[start, start + out.length)` of tensor `entry`'s seeded initial value into
 * `out` (norm gains 1, else {@link seededNormals} × initializer_range rounded to f32): the same
 * bits as that range of {@link initParams}, without the rest of the model, so
 * a large model can be initialised one slice at a time (model/seeded_upload.ts).
 */
export function initTensorSlice(
  entry: ParamEntry,
  options: { config: Pick<LlamaConfig, "initializerRange">; seed: number; start: number },
  out: Float32Array,
): void {
  const { config, seed, start } = options;
  if (!Number.isInteger(start) || start < 0 || start + out.length > entry.size) {
    throw new RangeError(
      `slice [${start}, ${start + out.length}) is outside tensor "${entry.name}" of ${entry.size}`,
    );
  }
  if (entry.init === "ones") {
    out.fill(1);
    return;
  }
  const key = tensorKey(seed, entry.name);
  // The product in f64, then rounded to f32.
  for (let j = 0; j < out.length; j++) out[j] = normalAt(key, start + j) * config.initializerRange;
}

/**
 * Initial weights like HF's `LlamaPreTrainedModel._init_weights`: matrices and the embedding
 * are normal(0, initializer_range), norm gains are 1. Deterministic in `seed`.
 */
export function initParams(layout: ParamLayout, config: LlamaConfig, seed: number): Float32Array {
  const flat = new Float32Array(layout.totalSize);
  // Straight into the flat array: no f64 copy of a tensor (2 GiB for a 1B model's embedding).
  for (const e of layout.entries) {
    initTensorSlice(e, { config, seed, start: 0 }, flat.subarray(e.offset, e.offset + e.size));
  }
  return flat;
}

/**
 * One GPU buffer's share of the flat layout: the elements `[start, start + size)`, a run of whole
 * tensors `entries[first..end)` with their padding. A tensor at flat offset `o` sits at
 * `o − start` inside its segment's buffer.
 */
export interface ParamSegment {
  /** First element of the segment in the flat layout (a tensor's offset). */
  start: number;
  /** Elements in the segment (up to the next segment's start, or `totalSize`). */
  size: number;
  /** Index of the segment's first entry. */
  first: number;
  /** One past the index of its last entry. */
  end: number;
}

/**
 * Splits the layout into as few segments as buffers of `maxBufferBytes` allow (WebGPU's
 * `maxBufferSize`): consecutive whole tensors, greedily. Parameters, gradients and every
 * optimizer state share this split, so a tensor is (segment, offset) in each. When everything
 * fits, the result is the one segment `[0, totalSize)`. Throws a RangeError naming a tensor too
 * large for any buffer. `elementBytes` is 4 for f32 layouts (the default) and 2 for the 16-bit
 * weight copies (model/half_weights.ts), which are split the same way.
 */
export function paramSegments(
  layout: ParamLayout,
  maxBufferBytes: number,
  options: { elementBytes?: 2 | 4 } = {},
): ParamSegment[] {
  const elementBytes = options.elementBytes ?? 4;
  const maxElements = Math.floor(maxBufferBytes / elementBytes);
  const { entries, totalSize } = layout;
  const segments: ParamSegment[] = [];
  const close = (first: number, end: number) => {
    const start = entries[first].offset;
    const stop = end < entries.length ? entries[end].offset : totalSize;
    segments.push({ start, size: stop - start, first, end });
  };
  let first = 0;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    const stop = i + 1 < entries.length ? entries[i + 1].offset : totalSize;
    if (stop - e.offset > maxElements) {
      throw new RangeError(
        `tensor "${e.name}" ${JSON.stringify(e.shape)} holds ${e.size} ` +
          `${elementBytes === 4 ? "floats" : "16-bit values"} ` +
          `(${(stop - e.offset) * elementBytes} bytes padded), more than one GPU buffer ` +
          `(maxBufferSize ${maxBufferBytes} bytes)`,
      );
    }
    if (stop - entries[first].offset > maxElements) {
      close(first, i);
      first = i;
    }
  }
  if (entries.length > 0) close(first, entries.length);
  return segments;
}

/** Index of the segment holding flat float `offset` (binary search). */
export function segmentIndex(segments: readonly ParamSegment[], offset: number): number {
  let lo = 0, hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (segments[mid].start <= offset) lo = mid;
    else hi = mid - 1;
  }
  const s = segments[lo];
  if (s === undefined || offset < s.start || offset >= s.start + s.size) {
    throw new RangeError(`flat offset ${offset} is outside every parameter segment`);
  }
  return lo;
}
