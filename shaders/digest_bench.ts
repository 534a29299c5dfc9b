/**
 * The client's parameter digest for the 20M model (config/models/llama-20m, 80 MB of f32):
 * the GPU block digest (shaders/digest.ts) against the sha256 of a full readback it replaced,
 * in the same run (`group`/`baseline`, so `deno bench` prints the ratio), and the same digest
 * over the parameters split into segment buffers (model/params.ts `paramSegments`), whose
 * straddling blocks are gathered first.
 * Run: `deno bench -A shaders/digest_bench.ts`.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { GpuDigest } from "./digest.ts";
import { GpuRuntime } from "./gpu.ts";
import { randomF32 } from "./testing/kernels.ts";
import { llamaParamLayout, paramSegments, readLlamaConfig } from "../model/mod.ts";

const rt = await GpuRuntime.create();
console.log(`adapter: ${rt.adapterName}`);
const config = await readLlamaConfig(
  new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
);
const layout = llamaParamLayout(config);
const size = layout.totalSize;
const values = randomF32(1, size, -0.02, 0.02);
const params = rt.buffer("params", values);
// As an adapter whose maxBufferSize barely holds the embedding would split θ.
const largest = Math.max(...layout.entries.map((e) => e.size));
const segments = paramSegments(layout, Math.ceil(largest * 4 * 1.05 / 4) * 4);
const split = segments.map((s, i) =>
  rt.buffer(`params segment ${i}`, values.subarray(s.start, s.start + s.size))
);
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
Deno.bench({
  name: `GPU block digest of ${size} f32 in ${segments.length} segment buffers`,
  group: "digest",
  n: 10,
  warmup: 2,
  fn: async () => {
    await digest.digest(split);
  },
});
