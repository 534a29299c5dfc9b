/**
 * Where a training step's GPU time goes, kernel by kernel, on whatever adapter this machine has:
 * `deno run -A bench/step_profile.ts [--config DIR] [--batch B] [--seq-len T] [--steps N]
 * [--precision f32|f16|bf16] [--recompute] [--tiling rows,cols,wx,wy,depth] [--split-k auto|off]
 * [--upload chunked|mapped] [--attention rows|tiled|ROWSxSTAGED[xQUERIES][,ra]] [--flush-layers auto|off]`.
 *
 * It builds the model of `--config` from quick pseudo-random weights (uniform with the init's
 * variance: timing does not depend on the values, and the seeded normals of `initParams` take a
 * minute for a 1B model; no weights file is read or written), prints the adapter's limits and the memory plan, times `--steps`
 * plain AdamW steps (the step `deno task train` runs), then reruns them on a profiled runtime
 * (shaders/dispatch_profile.ts: every dispatch in a timed pass of its own) and prints each
 * pipeline's share of the GPU time, the kernel families' shares, and the sum against the plain
 * step's wall time. The gap between the two is what the GPU did not spend in kernels: launch and
 * pass overheads, waits and host work. `--tiling` replaces the adapter profile's matmul tiling, to
 * try a kernel shape on a whole step; `--split-k off` turns the profile's split-K off (the
 * baseline the split is measured against). `--upload` chooses how the weights reach the GPU:
 * `chunked` (the default) writes 16 MiB at a time, each flushed, printing progress
 * (model/weights_upload.ts); `mapped` copies each segment whole into a buffer mapped at creation,
 * as a model built with its weights does, the path the 1B model stalled on. `--attention` picks
 * the attention kernels (shaders/attention.ts: `rows`, the CPU profile's, `tiled`, the GPU
 * profile's 64x64 tiles in workgroup memory, or tiles written out, e.g. `64x64x4` for four query
 * rows per invocation) whatever the adapter's profile says. `--flush-layers off` submits each plain
 * step at once, where the profile hands it to the GPU a layer at a time (`GpuStep.flush`), to
 * measure what that overlap of encoding and GPU work saves.
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  formatMemoryPlan,
  llamaParamLayout,
  type ModelPrecision,
  readLlamaConfig,
  runtimeMemoryLimits,
  uploadParams,
  uploadProgressLines,
} from "../model/mod.ts";
import { adamwSteps } from "../train/testing/timed_steps.ts";
import {
  formatTiling,
  GpuRuntime,
  parseAttentionTiling,
  parseTiling,
  profileFor,
  requestGpuAdapter,
  SPLIT_K_OFF,
  summarizeTimings,
  type TuningProfile,
} from "../shaders/mod.ts";
import { median } from "../common/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    config: { type: "string", default: "config/models/llama-20m" },
    batch: { type: "string", default: "4" },
    "seq-len": { type: "string", default: "256" },
    steps: { type: "string", default: "3" },
    precision: { type: "string", default: "f32" },
    tiling: { type: "string" },
    recompute: { type: "boolean", default: false },
    "split-k": { type: "string", default: "auto" },
    upload: { type: "string", default: "chunked" },
    attention: { type: "string" },
    "flush-layers": { type: "string", default: "auto" },
  },
});
const B = Number(values.batch), T = Number(values["seq-len"]), steps = Number(values.steps);
for (const [flag, v] of [["--batch", B], ["--seq-len", T], ["--steps", steps]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new RangeError(`${flag} must be a positive integer`);
}
if (!["f32", "f16", "bf16"].includes(values.precision)) {
  throw new RangeError(`--precision must be f32, f16 or bf16, got ${values.precision}`);
}
const precision = values.precision as ModelPrecision;
if (values.upload !== "chunked" && values.upload !== "mapped") {
  throw new RangeError(`--upload must be chunked or mapped, got ${values.upload}`);
}
const chunkedUpload = values.upload === "chunked";
const config = await readLlamaConfig(`${values.config}/config.json`);
const layout = llamaParamLayout(config);
let t0 = performance.now();
const weights = quickWeights();
console.log(
  `${values.config}: ${(layout.paramCount / 1e6).toFixed(2)}M params, ${B}x${T} tokens, ` +
    `${precision}${values.recompute ? ", recompute" : ""}, init ${
      ((performance.now() - t0) / 1000).toFixed(1)
    } s`,
);

/**
 * The adapter's own profile with the `--tiling` matmul and `--split-k off`, or undefined (the
 * adapter's profile).
 */
async function chosenProfile(): Promise<TuningProfile | undefined> {
  const splitK = values["split-k"], flush = values["flush-layers"];
  if (splitK !== "auto" && splitK !== "off") {
    throw new RangeError(`--split-k must be auto or off, got ${splitK}`);
  }
  if (flush !== "auto" && flush !== "off") {
    throw new RangeError(`--flush-layers must be auto or off, got ${flush}`);
  }
  const attention = values.attention === undefined
    ? undefined
    : parseAttentionTiling(values.attention);
  if (
    values.tiling === undefined && splitK === "auto" && attention === undefined && flush === "auto"
  ) {
    return undefined;
  }
  const adapter = await requestGpuAdapter();
  if (!adapter) throw new Error("no WebGPU adapter");
  const own = profileFor(adapter.info);
  return {
    ...own,
    // --tiling runs one tiling for every shape, so the profile's table goes with it.
    ...(values.tiling === undefined
      ? {}
      : { matmul: parseTiling(values.tiling), matmulByShape: [] }),
    splitK: splitK === "off" ? SPLIT_K_OFF : own.splitK,
    attention: attention ?? own.attention,
    flushLayers: flush === "off" ? false : own.flushLayers,
  };
}
const profile = await chosenProfile();

/**
 * Weights for timing only: xorshift32 uniforms in ±√3·σ (the variance of HF's normal init), norm
 * gains 1. About 20x faster than the seeded normals.
 */
function quickWeights(): Float32Array {
  const flat = new Float32Array(layout.totalSize);
  const half = Math.sqrt(3) * config.initializerRange;
  let x = 2463534242;
  for (const e of layout.entries) {
    const view = flat.subarray(e.offset, e.offset + e.size);
    if (e.init === "ones") {
      view.fill(1);
      continue;
    }
    for (let i = 0; i < view.length; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      view[i] = ((x >>> 0) / 4294967296 * 2 - 1) * half;
    }
  }
  return flat;
}

/** Runs `warmup + steps` AdamW steps on a fresh runtime; the wall time of each timed one. */
async function run(profileDispatches: boolean, warmup: number) {
  using rt = await GpuRuntime.create({ profileDispatches, profile });
  if (!profileDispatches) {
    const l = rt.limits;
    console.log(
      `adapter: ${rt.adapterName}, matmul tiling ${JSON.stringify(rt.profile.matmul)}, by shape ` +
        `[${
          rt.profile.matmulByShape.map((r) =>
            `${r.name} from ${r.minWorkgroups} tiles: ${formatTiling(r.tiling)}`
          ).join("; ")
        }], split-K ${JSON.stringify(rt.profile.splitK)}, ` +
        `attention ${JSON.stringify(rt.profile.attention)}, flush layers ${rt.profile.flushLayers}`,
    );
    console.log(
      `limits: maxBufferSize ${l.maxBufferSize}, maxStorageBufferBindingSize ` +
        `${l.maxStorageBufferBindingSize}`,
    );
    const plan = formatMemoryPlan(
      {
        config,
        microBatch: B,
        seqLen: T,
        slots: 1,
        optimizer: "adamw",
        precision,
        logitsChunkBytes: rt.profile.logitsChunkBytes,
        splitKScratchBytes: rt.profile.splitK.scratchBytes,
        transposeScratch: rt.profile.matmul.strategy === "register",
        recompute: values.recompute,
      },
      runtimeMemoryLimits(rt),
      { flags: { microBatch: "--batch", seqLen: "--seq-len", recompute: "--recompute" } },
    );
    for (const line of plan.lines) console.log(line);
    if (plan.refusal !== null) throw new Error(plan.refusal);
  }
  const which = profileDispatches ? "profiled" : "plain";
  t0 = performance.now();
  console.log(`${which}: building the model (${values.upload} upload)`);
  using stepper = adamwSteps(rt, {
    config,
    layout,
    weights: chunkedUpload ? undefined : weights,
    microBatch: B,
    seqLen: T,
    precision,
    recompute: values.recompute,
  });
  if (chunkedUpload) {
    const progress = uploadProgressLines(`${which}: upload`, console.log, () => performance.now());
    await uploadParams(rt, stepper.model.params, weights, { onProgress: progress });
  }
  // Until the GPU holds the weights: queued uploads would otherwise land in the first step.
  await rt.untilIdle();
  const buildMs = performance.now() - t0;
  // Progress as it happens: a large model's upload and first step (its pipelines) take minutes
  // on some adapters, and a run cut off by a time limit should still say how far it got.
  console.log(
    `${which}: model and optimizer built and uploaded in ${buildMs.toFixed(0)} ms (${
      (layout.totalSize * 4 / 1e6 / (buildMs / 1000)).toFixed(0)
    } MB/s of weights); first step next (it builds the GPU pipelines)`,
  );
  const wall: number[] = [];
  for (let s = 0; s < warmup + steps; s++) {
    if (s === warmup) rt.dispatchTimings?.splice(0);
    const start = performance.now();
    const result = await stepper.step();
    if (!Number.isFinite(result.loss)) throw new Error(`step ${s}: loss is ${result.loss}`);
    const ms = performance.now() - start;
    if (s >= warmup) wall.push(ms);
    console.log(
      `${which}: step ${s + 1} (${s < warmup ? "warm-up" : "timed"}) ${ms.toFixed(1)} ms, ` +
        `loss ${result.loss.toFixed(4)}`,
    );
  }
  return { wall, buildMs, timings: rt.dispatchTimings ? [...rt.dispatchTimings] : [] };
}

const plain = await run(false, 2);
console.log(
  `model upload ${plain.buildMs.toFixed(0)} ms; plain step: median ${
    median(plain.wall).toFixed(1)
  } ms over ${steps} (${(B * T / median(plain.wall) * 1000).toFixed(0)} tokens/s)`,
);
const profiled = await run(true, 1);
const gpuMs = profiled.timings.reduce((s, t) => s + t.ms, 0) / steps;
console.log(
  `profiled step: median wall ${median(profiled.wall).toFixed(1)} ms, ` +
    `${profiled.timings.length / steps} dispatches per step, GPU time in kernels ${
      gpuMs.toFixed(1)
    } ms per step = ${
      (100 * gpuMs / median(plain.wall)).toFixed(0)
    }% of the plain step's wall time`,
);
const row = (name: string, dispatches: number, ms: number, share: number) =>
  `| ${name} | ${dispatches / steps} | ${(ms / steps).toFixed(2)} | ${(100 * share).toFixed(1)}% |`;
console.log("\n| kernel family | dispatches per step | ms per step | share of kernel time |");
console.log("|---|---:|---:|---:|");
for (const r of summarizeTimings(profiled.timings, (name) => name.split("/")[0])) {
  console.log(row(r.name, r.dispatches, r.ms, r.share));
}
console.log("\n| pipeline (top 25) | dispatches per step | ms per step | share of kernel time |");
console.log("|---|---:|---:|---:|");
for (const r of summarizeTimings(profiled.timings).slice(0, 25)) {
  console.log(row(r.name, r.dispatches, r.ms, r.share));
}
