/**
 * The client's parameter digest for the 20M model (config/models/llama-20m, 80 MB of f32):
 * the GPU block digest (shaders/digest.ts) against the sha256 of a full readback it replaced,
 * in the same run (`group`/`baseline`, so `deno bench` prints the ratio).
 * Run: `deno bench -A shaders/digest_bench.ts`.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { GpuDigest } from "./digest.ts";
import { GpuRuntime } from "./gpu.ts";
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
globalThis.addEventListener("unload", () => {
  digest[Symbol.dispose]();
  rt[Symbol.dispose]();
});

Deno.bench({
  name: `readback + sha256 of ${size} f32 (before)`,
  group: "digest",
  baseline: true,
  n: 10,
  warmup: 2,
  fn: async () => {
    await rt.withBytes(params, (b) => createHash("sha256").update(b).digest("hex"));
  },
});
Deno.bench({
  name: `GPU block digest of ${size} f32`,
  group: "digest",
  n: 10,
  warmup: 2,
  fn: async () => {
    await digest.digest(params);
  },
});
