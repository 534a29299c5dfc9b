/**
 * Training throughput of the ~20M-parameter Llama (config/models/llama-20m) on this machine's
 * WebGPU adapter: one bench iteration is one full optimizer step (forward, backward, gradient
 * norm, AdamW) on B·T = 4·256 = 1024 tokens, with synthetic token ids.
 *
 * Run: `deno bench -A train/train_bench.ts`; tokens/s = 1024 / (time per iteration). The
 * figure is also printed after a warm-up, so it can be read without the bench table.
 *
 * @module
 */
import { readLlamaConfig } from "../model/hf_config.ts";
import { LlamaModel } from "../model/llama.ts";
import { initParams, llamaParamLayout } from "../model/params.ts";
import { AdamW, ADAMW_DEFAULTS } from "../optimizer/adamw.ts";
import { GpuRuntime } from "../shaders/gpu.ts";
import { trainStep } from "./trainer.ts";

const B = 4, T = 256;
const config = await readLlamaConfig(
  new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
);
const layout = llamaParamLayout(config);
const rt = await GpuRuntime.create();
const model = new LlamaModel(rt, {
  config,
  layout,
  weights: initParams(layout, config, 1),
  microBatch: B,
  seqLen: T,
  slots: 1,
});
const optimizer = new AdamW(rt, { size: layout.totalSize, config: ADAMW_DEFAULTS });
const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 7919 + 11) % config.vocabSize);
let stepNumber = 0;
const step = () =>
  trainStep({ rt, model, optimizer }, {
    stepNumber: ++stepNumber,
    lr: 1e-4,
    microBatches: [tokens],
    clipGradients: true,
  });

// Free the device before the process exits (the bench runner gives no other hook).
globalThis.addEventListener("unload", () => {
  optimizer[Symbol.dispose]();
  model[Symbol.dispose]();
  rt[Symbol.dispose]();
});

// Warm-up (pipeline compiles), then a printed measurement.
await step();
const t0 = performance.now();
const timed = 2;
for (let i = 0; i < timed; i++) await step();
const seconds = (performance.now() - t0) / 1000 / timed;
console.log(
  `llama-20m (${(layout.paramCount / 1e6).toFixed(1)}M params) on ${rt.adapterName}: ` +
    `${(B * T / seconds).toFixed(0)} training tokens/s (${
      (seconds * 1000).toFixed(0)
    } ms/step, B=${B}, T=${T})`,
);

Deno.bench({
  name: `llama-20m train step, ${B}x${T} tokens`,
  n: 2,
  warmup: 0,
  async fn() {
    await step();
  },
});
