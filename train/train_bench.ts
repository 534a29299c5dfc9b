/**
 * Training throughput of the ~20M-parameter Llama (config/models/llama-20m) on this machine's
 * WebGPU adapter, in f32, mixed bf16 and (where the adapter has `shader-f16`) mixed f16
 * precision, in the same run: one bench iteration is one full optimizer step (forward, backward, gradient norm,
 * AdamW) on B·T = 4·256 = 1024 tokens, with synthetic token ids.
 *
 * Run: `deno bench -A train/train_bench.ts`; tokens/s = 1024 / (time per iteration). The
 * figures, with the bytes of activations each precision saves for the backward, are also printed
 * after a warm-up, so they can be read without the bench table.
 *
 * @module
 */
import { trainStep } from "./trainer.ts";
import {
  initParams,
  LlamaModel,
  llamaParamLayout,
  type ModelPrecision,
  readLlamaConfig,
} from "../model/mod.ts";
import { AdamW, ADAMW_DEFAULTS } from "../optimizer/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const B = 4, T = 256;
const config = await readLlamaConfig(
  new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
);
const layout = llamaParamLayout(config);
const rt = await GpuRuntime.create();
const weights = initParams(layout, config, 1);
const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 7919 + 11) % config.vocabSize);
const precisions: ModelPrecision[] = rt.hasF16 ? ["f32", "bf16", "f16"] : ["f32", "bf16"];

/** One model + optimizer per precision, and a function running one training step on it. */
const runs = precisions.map((precision) => {
  const model = new LlamaModel(rt, {
    config,
    layout,
    weights,
    microBatch: B,
    seqLen: T,
    slots: 1,
    precision,
  });
  const optimizer = new AdamW(rt, {
    size: layout.totalSize,
    segments: model.params.segments,
    config: ADAMW_DEFAULTS,
  });
  let stepNumber = 0;
  const step = () =>
    trainStep({ rt, model, optimizer }, {
      stepNumber: ++stepNumber,
      lr: 1e-4,
      microBatches: [tokens],
      clipGradients: true,
    });
  return { precision, model, optimizer, step };
});

// Free the device before the process exits (the bench runner gives no other hook).
globalThis.addEventListener("unload", () => {
  for (const r of runs) {
    r.optimizer[Symbol.dispose]();
    r.model[Symbol.dispose]();
  }
  rt[Symbol.dispose]();
});

// Warm-up (pipeline compiles), then printed measurements, alternating precisions so both see
// the same background load. The fastest step is reported beside the mean: on a shared machine it
// is the figure least disturbed by other work.
for (const r of runs) await r.step();
const timed = 3;
const times = new Map<ModelPrecision, number[]>(precisions.map((p) => [p, []]));
for (let i = 0; i < timed; i++) {
  for (const r of runs) {
    const t0 = performance.now();
    await r.step();
    times.get(r.precision)!.push((performance.now() - t0) / 1000);
  }
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const r of runs) {
  const ts = times.get(r.precision)!;
  const [avg, best] = [mean(ts), Math.min(...ts)];
  console.log(
    `llama-20m (${(layout.paramCount / 1e6).toFixed(1)}M params, ${r.precision}) on ` +
      `${rt.adapterName}: ${(B * T / avg).toFixed(0)} training tokens/s mean, ` +
      `${(B * T / best).toFixed(0)} best (${(avg * 1000).toFixed(0)} ms/step mean, B=${B}, ` +
      `T=${T}); saved activations ${(r.model.activationBytes / 2 ** 20).toFixed(1)} MiB`,
  );
}
const f32 = times.get("f32")!;
for (const p of precisions.filter((p) => p !== "f32")) {
  const half = times.get(p)!;
  console.log(
    `${p} / f32 tokens/s: ${(mean(f32) / mean(half)).toFixed(2)}x mean, ` +
      `${(Math.min(...f32) / Math.min(...half)).toFixed(2)}x best`,
  );
}

for (const r of runs) {
  Deno.bench({
    name: `llama-20m train step, ${B}x${T} tokens, ${r.precision}`,
    n: 2,
    warmup: 0,
    async fn() {
      await r.step();
    },
  });
}
