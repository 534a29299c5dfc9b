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
import {
  initParams,
  llamaParamLayout,
  type ModelPrecision,
  readLlamaConfig,
} from "../model/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { adamwSteps, disposeOnUnload, mean, timeInTurn } from "./testing/timed_steps.ts";

const B = 4, T = 256;
const config = await readLlamaConfig(
  new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
);
const layout = llamaParamLayout(config);
const rt = await GpuRuntime.create();
const weights = initParams(layout, config, 1);
const precisions: ModelPrecision[] = rt.hasF16 ? ["f32", "bf16", "f16"] : ["f32", "bf16"];

/** One model + optimizer per precision, and a function running one training step on it. */
const runs = precisions.map((precision) => ({
  precision,
  ...adamwSteps(rt, { config, layout, weights, microBatch: B, seqLen: T, precision }),
}));
disposeOnUnload(rt, runs);

// Warm-up (pipeline compiles), then printed measurements, alternating precisions so both see
// the same background load. The fastest step is reported beside the mean: on a shared machine it
// is the figure least disturbed by other work.
for (const r of runs) await r.step();
const seconds = (await timeInTurn(runs, 3)).map((ms) => ms.map((t) => t / 1000));
const times = new Map(precisions.map((p, k) => [p, seconds[k]]));
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
