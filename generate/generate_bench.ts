/**
 * Generation speed with the KV cache against without it, in one run: each iteration generates 64
 * tokens greedily after a 128-byte prompt with the bundled byte model (config/models/llama-bytes,
 * 1.9M parameters, seeded weights). With the cache the prompt is read once and each token costs
 * one token's pass; without it (the baseline) every token re-reads the whole sequence, 129 to 191
 * tokens. Tokens per second = 64 / the time per iteration. docs/benchmarks.md has the figures.
 *
 * ```sh
 * deno bench -A generate/generate_bench.ts
 * ```
 */
import { generateTokens } from "./generator.ts";
import { TokenSampler } from "./sampler.ts";
import { GREEDY } from "./sampling.ts";
import { LlamaDecoder } from "../model/inference/mod.ts";
import { initParams, llamaParamLayout, readLlamaConfig } from "../model/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const PROMPT_TOKENS = 128, NEW_TOKENS = 64;
const config = await readLlamaConfig(
  new URL("../config/models/llama-bytes/config.json", import.meta.url).pathname,
);
const layout = llamaParamLayout(config);
const rt = await GpuRuntime.create();
const decoder = new LlamaDecoder(rt, {
  config,
  layout,
  weights: initParams(layout, config, 1),
  contextLength: PROMPT_TOKENS + NEW_TOKENS,
});
const prompt = Array.from(new TextEncoder().encode("The jury said it did find that the ".repeat(4)))
  .slice(0, PROMPT_TOKENS);

const generate = (cache: boolean) => async () => {
  const r = await generateTokens(decoder, prompt, {
    maxNewTokens: NEW_TOKENS,
    sampler: new TokenSampler(GREEDY, 0),
    cache,
  });
  if (r.tokens.length !== NEW_TOKENS) throw new Error(`${r.tokens.length} tokens (${r.stop})`);
};

Deno.bench({
  name: `${NEW_TOKENS} tokens after ${PROMPT_TOKENS}, KV cache`,
  group: "generate",
  n: 4,
  warmup: 1,
  fn: generate(true),
});

Deno.bench({
  name: `${NEW_TOKENS} tokens after ${PROMPT_TOKENS}, no cache (whole sequence per token)`,
  group: "generate",
  baseline: true,
  n: 4,
  warmup: 1,
  fn: generate(false),
});
