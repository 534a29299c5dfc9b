/**
 * Peak host memory (VmHWM) of one AdamW checkpoint save, for docs/benchmarks.md: `stream`
 * (train/streamed_save.ts `saveTraining`) or `whole` (whole_checkpoint.ts `captureTraining`,
 * then `writeTrainingCheckpoint`). Run each mode in its own process, since the high-water mark never
 * falls:
 *
 * ```sh
 * deno run -A train/testing/save_peak.ts stream 2 /tmp/save-peak   # Llama-1B shapes, 2 layers
 * deno run -A train/testing/save_peak.ts whole 2 /tmp/save-peak
 * ```
 *
 * Only the buffers a save reads are built (parameters, AdamW's moments), not the whole model:
 * on lavapipe they live in host memory and count in both modes alike.
 *
 * @module
 */
import {
  type LlamaModel,
  llamaParamLayout,
  ParamBuffers,
  paramSegments,
  readLlamaConfig,
  uploadSeededParams,
} from "../../model/mod.ts";
import { AdamW } from "../../optimizer/mod.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import { optimizerGeometry } from "../checkpoint.ts";
import { saveTraining } from "../streamed_save.ts";
import type { TrainerState } from "../train_state.ts";
import { captureTraining, writeTrainingCheckpoint } from "./whole_checkpoint.ts";

function vm(key: "VmHWM" | "VmRSS"): number {
  const line = Deno.readTextFileSync("/proc/self/status").split("\n").find((l) =>
    l.startsWith(`${key}:`)
  );
  return Number(line?.match(/(\d+) kB/)?.[1] ?? NaN) * 1024;
}

const [mode, layersArg, dir] = Deno.args;
if (mode !== "stream" && mode !== "whole") {
  throw new TypeError(`mode: stream or whole, got ${mode}`);
}
if (dir === undefined) throw new TypeError("third argument: the folder to save into");
const base = await readLlamaConfig(
  new URL("../../config/models/llama-1b/config.json", import.meta.url).pathname,
);
const config = { ...base, numLayers: Number(layersArg ?? base.numLayers) };
const layout = llamaParamLayout(config);
using rt = await GpuRuntime.create();
const segments = paramSegments(layout, rt.limits.maxBufferSize);
using params = new ParamBuffers(rt, { label: "params", layout, segments });
await uploadSeededParams(rt, params, { config, seed: 1 });
using optimizer = new AdamW(rt, {
  size: layout.totalSize,
  segments,
  config: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0 },
});
// What a save touches of the model: its parameters.
const model = { params, layout, readParams: () => params.read() } as unknown as LlamaModel;
const parts = { rt, model, optimizer };
const trainer: TrainerState = {
  step: 0,
  optimizer: "adamw",
  totalBatch: 1,
  sequenceLength: 16,
  data: { sequences: 1, shuffleSeed: null, nextSequence: 0 },
  lrSchedule: { kind: "Constant", baseLr: 1e-3, warmupSteps: 0, warmupInitLr: 0 },
  weightsDtype: "F32",
};
const geometry = optimizerGeometry(layout, "adamw");
const before = vm("VmRSS");
const t0 = performance.now();
if (mode === "stream") {
  await saveTraining(dir, parts, { config, layout, trainer, geometry, lastLr: 1e-3 });
} else {
  const state = await captureTraining(parts, { lastLr: 1e-3 });
  await writeTrainingCheckpoint(dir, {
    config,
    layout,
    weights: state.weights,
    trainer,
    optimizer: state.optimizer,
  }, { geometry });
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
