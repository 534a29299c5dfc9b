/**
 * Fixtures for tests that need a model (not part of the public surface): a small Llama with
 * every feature, weights far from zero so gradients are well conditioned, random tokens, and a
 * tiny seeded Llama for tests that move whole models around.
 *
 * @module
 */
import { type LlamaConfig, parseLlamaConfig } from "../hf_config.ts";
import type { LlamaModelOptions } from "../llama.ts";
import { initParams, llamaParamLayout, type ParamLayout, seededNormals } from "../params.ts";

/**
 * Small but with every feature: 2 layers, GQA (4 heads on 2 kv heads), RoPE, an odd
 * vocabulary. `overrides` replaces keys of the HF config.json.
 */
export function smallLlamaConfig(overrides: Record<string, unknown> = {}): LlamaConfig {
  return parseLlamaConfig({
    hidden_size: 32,
    intermediate_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    vocab_size: 37,
    max_position_embeddings: 64,
    rms_norm_eps: 1e-5,
    rope_theta: 1000,
    ...overrides,
  });
}

/**
 * Seeded weights with standard deviation `std` around each tensor's init (norm gains around
 * 1), so activations and gradients are far from zero.
 */
export function spreadWeights(layout: ParamLayout, seed: number, std: number): Float32Array {
  const p = new Float32Array(layout.totalSize);
  for (const e of layout.entries) {
    const z = seededNormals(seed, e.name, e.size);
    for (let i = 0; i < e.size; i++) p[e.offset + i] = (e.init === "ones" ? 1 : 0) + std * z[i];
  }
  return p;
}

/** `n` seeded token ids below `vocabSize`. */
export function seededTokens(seed: number, n: number, vocabSize: number): Uint32Array {
  const z = seededNormals(seed, "tokens", n);
  return Uint32Array.from(z, (x) => Math.floor(Math.abs(x) * 1000) % vocabSize);
}

/** A 1-layer Llama of a few thousand parameters, seeded by `seed`. */
export function tinyModel(
  seed: number,
): { config: LlamaConfig; layout: ParamLayout; weights: Float32Array } {
  const config = parseLlamaConfig({
    hidden_size: 16,
    intermediate_size: 32,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 2,
    vocab_size: 32,
    max_position_embeddings: 16,
    rms_norm_eps: 1e-5,
  });
  const layout = llamaParamLayout(config);
  return { config, layout, weights: initParams(layout, config, seed) };
}

/**
 * A binding cap of 16 KiB for {@link splitHeadLlama}: every tensor but the embedding and the LM
 * head (`[331, 32]` f32: 42 KB) fits, so the cap splits exactly those, into 128, 128 and 75
 * vocabulary rows.
 */
export const SPLIT_HEAD_CAP = 16384;

/** What {@link splitHeadLlama} gives: the model, its batch shape, and options to build it. */
export interface SplitHeadLlama {
  config: LlamaConfig;
  layout: ParamLayout;
  /** Sequences per micro-batch (B) and tokens per sequence (T). */
  microBatch: number;
  seqLen: number;
  /** LlamaModel's options but `slots`, with a fresh copy of the same seeded weights each call. */
  modelOptions(): Pick<
    LlamaModelOptions,
    "config" | "layout" | "weights" | "microBatch" | "seqLen"
  >;
}

/**
 * A small Llama whose embedding and LM head a {@link SPLIT_HEAD_CAP} binding cap splits into
 * vocabulary blocks (331 words of 32), with `layers` layers, micro-batches of 2 sequences of 8
 * tokens, and seeded weights 0.2 around each tensor's init.
 */
export function splitHeadLlama(layers: number): SplitHeadLlama {
  const config = smallLlamaConfig({
    intermediate_size: 64,
    num_hidden_layers: layers,
    vocab_size: 331,
    max_position_embeddings: 16,
    rope_theta: 10000,
  });
  const layout = llamaParamLayout(config);
  const microBatch = 2, seqLen = 8;
  return {
    config,
    layout,
    microBatch,
    seqLen,
    modelOptions: () => ({
      config,
      layout,
      weights: spreadWeights(layout, 3, 0.2),
      microBatch,
      seqLen,
    }),
  };
}
