/**
 * Peak host memory (VmHWM) of one seeded start into segment buffers, for docs/benchmarks.md:
 * `stream` (model/seeded_upload.ts) or `whole` (initParams, then one upload). Run each mode in
 * its own process, since the high-water mark never falls:
 *
 * ```sh
 * deno run -A model/testing/seeded_start_peak.ts stream 2   # Llama-1B shapes, 2 layers
 * deno run -A model/testing/seeded_start_peak.ts whole 2
 * ```
 *
 * @module
 */
import { readLlamaConfig } from "../hf_config.ts";
import { initParams, llamaParamLayout, paramSegments } from "../params.ts";
import { ParamBuffers } from "../param_buffers.ts";
import { uploadSeededParams } from "../seeded_upload.ts";
import { GpuRuntime } from "../../shaders/mod.ts";

function vm(key: "VmHWM" | "VmRSS"): number {
  const line = Deno.readTextFileSync("/proc/self/status").split("\n").find((l) =>
    l.startsWith(`${key}:`)
  );
  return Number(line?.match(/(\d+) kB/)?.[1] ?? NaN) * 1024;
}

const [mode, layersArg] = Deno.args;
if (mode !== "stream" && mode !== "whole") {
  throw new TypeError(`mode: stream or whole, got ${mode}`);
}
const base = await readLlamaConfig(
  new URL("../../config/models/llama-1b/config.json", import.meta.url).pathname,
);
const config = { ...base, numLayers: Number(layersArg ?? base.numLayers) };
const layout = llamaParamLayout(config);
using rt = await GpuRuntime.create();
const segments = paramSegments(layout, rt.limits.maxBufferSize);
const before = vm("VmRSS");
const t0 = performance.now();
if (mode === "stream") {
  using params = new ParamBuffers(rt, { label: "params", layout, segments });
  await uploadSeededParams(rt, params, { config, seed: 1 });
} else {
  using _params = new ParamBuffers(rt, {
    label: "params",
    layout,
    segments,
    init: initParams(layout, config, 1),
  });
  await rt.untilIdle();
}
const GiB = 2 ** 30;
console.log(JSON.stringify({
  mode,
  layers: config.numLayers,
  parameterGiB: +(layout.totalSize * 4 / GiB).toFixed(3),
  rssBeforeGiB: +(before / GiB).toFixed(3),
  peakGiB: +(vm("VmHWM") / GiB).toFixed(3),
  seconds: +((performance.now() - t0) / 1000).toFixed(1),
}));
