/**
 * What activation recomputation (`--recompute`, model/recompute.ts) costs and saves on the
 * ~20M-parameter Llama (config/models/llama-20m) at a small shape, both in the same run: one
 * bench iteration is one full AdamW step (forward, backward with or without rebuilding each
 * layer, gradient norm, update) on B·T = 2·128 tokens, f32, with synthetic token ids.
 *
 * Run: `deno bench -A train/recompute_bench.ts`. After a warm-up it prints, for both settings,
 * the activation bytes saved for the backward (the memory plan's figure and the bytes of the
 * buffers `LlamaModel` made), the plan's device total, the step times (alternating settings so
 * both see the same background load) and the ratios recompute / keep; then the plan alone at a
 * training shape (8·1024 tokens), where activations outweigh the weights.
 *
 * @module
 */
import {
  formatBytes,
  initParams,
  llamaParamLayout,
  planMemory,
  readLlamaConfig,
} from "../model/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { adamwSteps, disposeOnUnload, mean, timeInTurn } from "./testing/timed_steps.ts";

const B = 2, T = 128;
const config = await readLlamaConfig(
  new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
);
const layout = llamaParamLayout(config);
const rt = await GpuRuntime.create();
const weights = initParams(layout, config, 1);

/** One model + optimizer per setting, and a function running one training step on it. */
const runs = [false, true].map((recompute) => {
  const plan = planMemory({
    config,
    microBatch: B,
    seqLen: T,
    slots: 1,
    optimizer: "adamw",
    precision: "f32",
    recompute,
  });
  const steps = adamwSteps(rt, { config, layout, weights, microBatch: B, seqLen: T, recompute });
  return { name: recompute ? "recompute" : "keep", plan, ...steps };
});
disposeOnUnload(rt, runs);

for (const r of runs) await r.step();
const stepTimes = await timeInTurn(runs, 6);
const timed = runs.map((r, k) => ({ ...r, times: stepTimes[k] }));
const planned = (r: typeof timed[number]) =>
  r.plan.device.find((i) => i.label.startsWith("activations saved"))!.bytes;
for (const r of timed) {
  console.log(
    `llama-20m ${B}x${T} f32 ${r.name} on ${rt.adapterName}: activations ` +
      `${formatBytes(planned(r))} planned, ${formatBytes(r.model.activationBytes)} allocated; ` +
      `device total ${formatBytes(r.plan.deviceBytes)}; step ${mean(r.times).toFixed(0)} ms ` +
      `mean, ${Math.min(...r.times).toFixed(0)} ms best`,
  );
}
const [keep, recompute] = timed;
console.log(
  `recompute / keep: activations ${(planned(recompute) / planned(keep)).toFixed(3)}x planned, ` +
    `${(recompute.model.activationBytes / keep.model.activationBytes).toFixed(3)}x allocated; ` +
    `device total ${(recompute.plan.deviceBytes / keep.plan.deviceBytes).toFixed(3)}x; step ` +
    `time ${(mean(recompute.times) / mean(keep.times)).toFixed(2)}x mean, ` +
    `${(Math.min(...recompute.times) / Math.min(...keep.times)).toFixed(2)}x best`,
);
// The plan alone at a training shape (nothing allocated): where recomputation matters.
const [PB, PT] = [8, 1024];
const atShape = [false, true].map((recompute) =>
  planMemory({
    config,
    microBatch: PB,
    seqLen: PT,
    slots: 1,
    optimizer: "adamw",
    precision: "f32",
    recompute,
  })
);
const acts = atShape.map((p) => p.device.find((i) => i.label.startsWith("activations saved"))!);
console.log(
  `planned at ${PB}x${PT}: activations ${formatBytes(acts[0].bytes)} -> ` +
    `${formatBytes(acts[1].bytes)} (${(acts[1].bytes / acts[0].bytes).toFixed(3)}x), device ` +
    `total ${formatBytes(atShape[0].deviceBytes)} -> ${formatBytes(atShape[1].deviceBytes)} ` +
    `(${(atShape[1].deviceBytes / atShape[0].deviceBytes).toFixed(3)}x)`,
);

for (const r of runs) {
  Deno.bench({
    name: `llama-20m train step, ${B}x${T} tokens, f32, ${r.name}`,
    group: "recompute",
    baseline: r.name === "keep",
    n: 2,
    warmup: 0,
    async fn() {
      await r.step();
    },
  });
}
