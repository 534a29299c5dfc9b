/**
 * Eval throughput on this machine's WebGPU adapter: scoring requests (one forward pass per
 * request row) against the baseline of a training forward and backward of the same rows, for
 * the demo's byte model (config/models/llama-bytes) at B·T = 8·128.
 *
 * Run: `deno bench -A eval/eval_bench.ts`. Requests/s = 8 / (time per iteration); a 4-choice
 * task scores 8 requests in two items, so items/s is a quarter of requests/s.
 *
 * @module
 */
import { initParams, LlamaModel, llamaParamLayout, readLlamaConfig } from "../model/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { LogLikelihoodScorer } from "./scorer.ts";
import type { ScoreRequest } from "./requests.ts";

const B = 8, T = 128;
const config = await readLlamaConfig(
  new URL("../config/models/llama-bytes/config.json", import.meta.url).pathname,
);
const layout = llamaParamLayout(config);
const weights = initParams(layout, config, 1);
const rt = await GpuRuntime.create();
const train = new LlamaModel(rt, { config, layout, weights, microBatch: B, seqLen: T, slots: 1 });
const scorer = new LogLikelihoodScorer(rt, {
  config,
  layout,
  weights,
  seqLen: T,
  microBatch: B,
  slots: 1,
});
globalThis.addEventListener("unload", () => {
  train[Symbol.dispose]();
  scorer[Symbol.dispose]();
  rt[Symbol.dispose]();
});

const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 31 + 7) % 256);
// Requests as a multiple-choice task makes them: a long context and a short continuation.
const requests: ScoreRequest[] = Array.from({ length: B }, (_, b) => ({
  doc: b >> 2,
  choice: b & 3,
  tokens: Array.from(tokens.subarray(b * T, (b + 1) * T)),
  start: T - 12,
}));

async function trainStep(): Promise<void> {
  train.writeTokens(0, tokens);
  const step = rt.beginStep("bench train");
  train.encodeZeroGrads(step);
  train.encodeForwardBackward(step, { slot: 0, lossScale: 1 });
  await step.submit({ wait: false });
  await train.readStats(1);
}

// Warm-up: pipelines compile on first use.
await trainStep();
await scorer.score(requests);

Deno.bench(`train forward+backward, ${B}x${T}`, { group: "eval", baseline: true }, async () => {
  await trainStep();
});

Deno.bench(`score ${B} requests of ${T} tokens`, { group: "eval" }, async () => {
  await scorer.score(requests);
});
