/**
 * A tiny Llama for this folder's tests (not part of the public surface).
 *
 * @module
 */
import { parseLlamaConfig } from "../../model/hf_config.ts";
import { initParams, llamaParamLayout } from "../../model/params.ts";
import type { SharedModel } from "./blobs.ts";

/** A 1-layer Llama of a few thousand parameters, seeded by `seed`. */
export function tinyModel(seed: number): SharedModel {
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
