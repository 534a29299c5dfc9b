/**
 * Our side of the PyTorch comparison: load an HF model folder with `readModelDir`, build the
 * {@link LlamaModel} (fp32) and {@link AdamW} and run {@link trainStep} — the code
 * `deno task train --precision f32` runs — for `warmup + steps` steps on one batch, timing each
 * step and reading the step-0 gradients for their per-tensor norms.
 *
 * @module
 */
import type { StepReport } from "./report.ts";
import { LlamaModel, type ParamLayout, readModelDir } from "../../model/mod.ts";
import { trainStep } from "../../train/mod.ts";
import { AdamW, ADAMW_DEFAULTS, type AdamWConfig } from "../../optimizer/mod.ts";
import { median } from "../../common/mod.ts";
import type { GpuRuntime } from "../../shaders/mod.ts";

/** What {@link runEngineSteps} runs. */
export interface EngineStepOptions {
  /** HF folder with config.json and model.safetensors. */
  modelDir: string;
  /** `[batch, seqLen]` token ids (one micro-batch per step). */
  tokens: Uint32Array;
  batch: number;
  seqLen: number;
  /** Untimed steps first (at least 1: step 0 gives the loss and gradient norms). */
  warmup: number;
  /** Timed steps. */
  steps: number;
  /** Constant learning rate. */
  lr: number;
  /** Recompute activations in the backward (default false), as `deno task train --recompute`. */
  recompute?: boolean;
  /** AdamW settings (default: Psyche's, as `deno task train`). */
  adamw?: AdamWConfig;
  /** Milliseconds, monotonic (default `performance.now`). */
  clock?: () => number;
  signal?: AbortSignal;
}

/**
 * L2 norm of every tensor of a flat buffer laid out by `layout`, summed in f64, by HF name.
 */
export function tensorNorms(layout: ParamLayout, flat: Float32Array): Record<string, number> {
  if (flat.length !== layout.totalSize) {
    throw new RangeError(`expected ${layout.totalSize} floats, found ${flat.length}`);
  }
  const out: Record<string, number> = {};
  for (const e of layout.entries) {
    let s = 0;
    for (let i = e.offset; i < e.offset + e.size; i++) s += flat[i] * flat[i];
    out[e.name] = Math.sqrt(s);
  }
  return out;
}

/** Trains on one batch with the engine's real step and reports like `llama_step.py`. */
export async function runEngineSteps(
  rt: GpuRuntime,
  options: EngineStepOptions,
): Promise<StepReport> {
  const { batch, seqLen, warmup, steps, lr } = options;
  if (!Number.isInteger(warmup) || warmup < 1) {
    throw new RangeError(`warmup must be >= 1 (step 0 gives the gradient norms), got ${warmup}`);
  }
  if (!Number.isInteger(steps) || steps < 1) {
    throw new RangeError(`steps must be >= 1, got ${steps}`);
  }
  const clock = options.clock ?? (() => performance.now());
  const { config, layout, weights } = await readModelDir(options.modelDir);
  if (weights === null) {
    throw new RangeError(`"${options.modelDir}" has no model.safetensors to start from`);
  }
  using model = new LlamaModel(rt, {
    config,
    layout,
    weights,
    microBatch: batch,
    seqLen,
    slots: 1,
    precision: "f32", // issue 3 compares fp32 training, whatever the adapter offers
    recompute: options.recompute ?? false,
  });
  const adamw = options.adamw ?? ADAMW_DEFAULTS;
  using optimizer = new AdamW(rt, {
    size: layout.totalSize,
    segments: model.params.segments,
    config: adamw,
  });
  const losses: number[] = [];
  const stepMs: number[] = [];
  let gradNorm0 = NaN;
  let gradNorms0: Record<string, number> = {};
  for (let s = 0; s < warmup + steps; s++) {
    const t0 = clock();
    const result = await trainStep({ rt, model, optimizer, signal: options.signal }, {
      stepNumber: s + 1,
      lr,
      microBatches: [options.tokens],
      clipGradients: adamw.maxGradNorm > 0,
    });
    const elapsed = clock() - t0;
    if (!Number.isFinite(result.loss)) throw new Error(`step ${s}: loss is ${result.loss}`);
    losses.push(result.loss);
    if (s >= warmup) stepMs.push(elapsed);
    if (s === 0) {
      // The optimizer reads the gradients without changing them, so they are step 0's.
      gradNorm0 = result.gradNorm;
      gradNorms0 = tensorNorms(layout, await model.readGrads());
    }
  }
  return {
    engine: "webgpu-engine",
    version: `deno ${Deno.version.deno}`,
    device: "webgpu",
    deviceName: rt.adapterName,
    params: layout.paramCount,
    batch,
    seqLen,
    losses,
    gradNorm0,
    gradNorms0,
    stepMs,
    medianStepMs: median(stepMs),
  };
}
