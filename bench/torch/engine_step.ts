/**
 * Our side of the PyTorch comparison: load an HF model folder, build the {@link LlamaModel}
 * (fp32) and {@link AdamW} and run {@link trainStep} — the code `deno task train --precision f32`
 * runs — for `warmup + steps` steps on one batch, timing each step and reading the step-0
 * gradients for their per-tensor norms.
 *
 * F32 weights (what `writeSeededModel` writes) stream from their files into the parameter
 * buffers a chunk at a time (model/streamed_load.ts, as `deno task train --resume` does), and the
 * gradient norms are summed a chunk at a time off the device: the host never holds the model or
 * its gradients (4.9 GB each at 1B). BF16/F16 weights are read whole with `readModelDir`.
 *
 * @module
 */
import type { StepReport } from "./report.ts";
import {
  f32WeightSources,
  LlamaModel,
  llamaParamLayout,
  type ParamLayout,
  readLlamaConfig,
  readModelDir,
  SAVE_CHUNK_FLOATS,
  uploadF32Weights,
} from "../../model/mod.ts";
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
  /**
   * `"streamed"` (default): F32 weights go from their files into the parameter buffers a chunk
   * at a time; `"whole"`: read whole with `readModelDir` first (what other dtypes always do).
   * The same bits either way.
   */
  load?: "streamed" | "whole";
  /** AdamW settings (default: Psyche's, as `deno task train`). */
  adamw?: AdamWConfig;
  /** Milliseconds, monotonic (default `performance.now`). */
  clock?: () => number;
  signal?: AbortSignal;
}

/** `acc` plus the sum of the squares of `values`, in f64, in order. */
export function addSquares(acc: number, values: Float32Array): number {
  for (let i = 0; i < values.length; i++) acc += values[i] * values[i];
  return acc;
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
    out[e.name] = Math.sqrt(addSquares(0, flat.subarray(e.offset, e.offset + e.size)));
  }
  return out;
}

/**
 * Hands flat floats `[start, start + count)` (inside one tensor) to `visit`, which must use
 * them before it returns (they may live in a mapped readback buffer).
 */
export type FloatRangeVisitor = (
  start: number,
  count: number,
  visit: (values: Float32Array) => void,
) => Promise<void>;

/**
 * {@link tensorNorms} of a buffer read `chunkFloats` at a time through `read`: the same sums in
 * the same order (so the same bits), holding one chunk instead of the buffer.
 */
export async function tensorNormsStreamed(
  layout: ParamLayout,
  read: FloatRangeVisitor,
  chunkFloats: number = SAVE_CHUNK_FLOATS,
): Promise<Record<string, number>> {
  if (!Number.isInteger(chunkFloats) || chunkFloats < 1) {
    throw new RangeError(`chunkFloats must be a positive integer, got ${chunkFloats}`);
  }
  const out: Record<string, number> = {};
  for (const e of layout.entries) {
    let acc = 0;
    for (let start = 0; start < e.size; start += chunkFloats) {
      const count = Math.min(chunkFloats, e.size - start);
      await read(e.offset + start, count, (values) => {
        if (values.length !== count) {
          throw new RangeError(`asked for ${count} floats of "${e.name}", got ${values.length}`);
        }
        acc = addSquares(acc, values);
      });
    }
    out[e.name] = Math.sqrt(acc);
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
  const config = await readLlamaConfig(`${options.modelDir}/config.json`);
  const layout = llamaParamLayout(config);
  // F32 weights stream into the parameter buffers; other dtypes are decoded whole.
  const sources = options.load === "whole"
    ? null
    : await f32WeightSources(options.modelDir, layout);
  let weights: Float32Array | undefined;
  if (sources === null) {
    const whole = await readModelDir(options.modelDir);
    if (whole.weights === null) {
      throw new RangeError(`"${options.modelDir}" has no model.safetensors to start from`);
    }
    weights = whole.weights;
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
  if (sources !== null) {
    await uploadF32Weights(rt, model.params, sources, { signal: options.signal });
  }
  weights = undefined; // a whole-array load's host copy is garbage from here on
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
      gradNorms0 = await tensorNormsStreamed(layout, (start, count, visit) =>
        rt.withBytes(
          model.grads.slice(start, count),
          (b) => visit(new Float32Array(b.buffer, b.byteOffset, count)),
          { signal: options.signal },
        ));
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
