/**
 * What `snapshot_dtype = "bf16"` adds to a client's Cooldown for the 20M model
 * (config/models/llama-20m, 19.8 M f32 parameters): the in-place bf16 rounding (round_bf16.ts)
 * against the parameter digest the client computes right after it anyway (the baseline, in the
 * same run, so `deno bench` prints the ratio). Each rounding waits for the GPU; after the first
 * the values are bf16-exact, which costs the kernel the same (it reads and writes every word).
 * Run: `deno bench -A shaders/round_bf16_bench.ts`.
 *
 * @module
 */

import { GpuDigest } from "./digest.ts";
import { GpuRuntime } from "./gpu.ts";
import { RoundBf16 } from "./round_bf16.ts";
import { randomF32 } from "./testing/kernels.ts";
import { llamaParamLayout, readLlamaConfig } from "../model/mod.ts";

const rt = await GpuRuntime.create();
console.log(`adapter: ${rt.adapterName}`);
const config = await readLlamaConfig(
  new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
);
const size = llamaParamLayout(config).totalSize;
const params = rt.buffer("params", randomF32(1, size, -0.02, 0.02));
const digest = new GpuDigest(rt);
const round = new RoundBf16(rt);
globalThis.addEventListener("unload", () => {
  digest[Symbol.dispose]();
  rt[Symbol.dispose]();
});

Deno.bench({
  name: `GPU digest of ${size} f32 (baseline: done at every snapshot)`,
  group: "snapshot",
  baseline: true,
  n: 10,
  warmup: 2,
  fn: async () => {
    await digest.digest(params);
  },
});
Deno.bench({
  name: `round ${size} f32 to bf16 in place`,
  group: "snapshot",
  n: 10,
  warmup: 2,
  fn: async () => {
    const step = rt.beginStep("round");
    round.encode(step.pass, { x: params, n: size });
    await step.submit();
  },
});
