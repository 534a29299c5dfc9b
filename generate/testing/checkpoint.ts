/**
 * Tiny checkpoint folders for generation tests: a 2-layer Llama (4 heads on 2 key/value heads)
 * with seeded weights spread far from zero, so its greedy choices are clear-cut, written as
 * `deno task train` writes a model (config.json + model.safetensors).
 *
 * @module
 */
import {
  type LlamaConfig,
  llamaParamLayout,
  type ParamLayout,
  writeModelDir,
} from "../../model/mod.ts";
import { smallLlamaConfig, spreadWeights } from "../../model/testing/fixtures.ts";

/** A tiny model: `vocabSize` tokens (256: the byte tokenizer's), seeded by `seed`. */
export function tinyModel(
  options: { vocabSize?: number; seed?: number; maxPositions?: number } = {},
): { config: LlamaConfig; layout: ParamLayout; weights: Float32Array } {
  const config = smallLlamaConfig({
    vocab_size: options.vocabSize ?? 256,
    max_position_embeddings: options.maxPositions ?? 64,
    bos_token_id: null,
    eos_token_id: null,
  });
  const layout = llamaParamLayout(config);
  return { config, layout, weights: spreadWeights(layout, options.seed ?? 1, 0.3) };
}

/** Writes {@link tinyModel} into `dir` (config.json + model.safetensors, F32); `dir` is returned. */
export async function writeTinyCheckpoint(
  dir: string,
  options: { vocabSize?: number; seed?: number; maxPositions?: number } = {},
): Promise<string> {
  await writeModelDir(dir, tinyModel(options));
  return dir;
}
