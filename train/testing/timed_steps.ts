/**
 * What the training benches share (train/train_bench.ts, train/recompute_bench.ts,
 * bench/step_profile.ts): a model and AdamW stepped one full optimizer step at a time (forward,
 * backward, gradient norm, update: the step `deno task train` runs) on synthetic token ids, and
 * step times taken in alternation, so every setting sees the same background load.
 *
 * @module
 */
import type { LlamaConfig, ModelPrecision, ParamLayout } from "../../model/mod.ts";
import { LlamaModel } from "../../model/mod.ts";
import { AdamW, ADAMW_DEFAULTS } from "../../optimizer/mod.ts";
import type { GpuRuntime } from "../../shaders/mod.ts";
import { type StepResult, trainStep } from "../trainer.ts";

/** `count` token ids below `vocabSize`, spread over the vocabulary (timing ignores the values). */
export function syntheticTokens(count: number, vocabSize: number): Uint32Array {
  return Uint32Array.from({ length: count }, (_, i) => (i * 7919 + 11) % vocabSize);
}

/** What {@link adamwSteps} builds. */
export interface StepsOptions {
  config: LlamaConfig;
  layout: ParamLayout;
  /** The weights, copied in at construction; absent: zeros, for a caller that uploads them. */
  weights?: Float32Array;
  /** B: sequences per step (one micro-batch). */
  microBatch: number;
  /** T: tokens per sequence. */
  seqLen: number;
  precision?: ModelPrecision;
  recompute?: boolean;
}

/** A model and its AdamW, stepped on one batch of synthetic tokens. */
export interface AdamwSteps extends Disposable {
  readonly model: LlamaModel;
  readonly optimizer: AdamW;
  /** Runs the next step (numbered from 1) on B·T synthetic tokens at lr 1e-4, clipping on. */
  step(): Promise<StepResult>;
}

/** Builds the model (one token slot) and an AdamW with default settings over its segments. */
export function adamwSteps(rt: GpuRuntime, options: StepsOptions): AdamwSteps {
  const { config, layout, microBatch, seqLen } = options;
  const model = new LlamaModel(rt, {
    config,
    layout,
    weights: options.weights,
    microBatch,
    seqLen,
    slots: 1,
    precision: options.precision ?? "f32",
    recompute: options.recompute,
  });
  const optimizer = new AdamW(rt, {
    size: layout.totalSize,
    segments: model.params.segments,
    config: ADAMW_DEFAULTS,
  });
  const tokens = syntheticTokens(microBatch * seqLen, config.vocabSize);
  let stepNumber = 0;
  return {
    model,
    optimizer,
    step: () =>
      trainStep({ rt, model, optimizer }, {
        stepNumber: ++stepNumber,
        lr: 1e-4,
        microBatches: [tokens],
        clipGradients: true,
      }),
    [Symbol.dispose]() {
      optimizer[Symbol.dispose]();
      model[Symbol.dispose]();
    },
  };
}

/**
 * Times `rounds` steps of every run, one step of each in turn per round, so all see the same
 * background load: the milliseconds of each run's steps, in `runs` order.
 */
export async function timeInTurn(
  runs: readonly { step(): Promise<unknown> }[],
  rounds: number,
): Promise<number[][]> {
  const times = runs.map(() => [] as number[]);
  for (let i = 0; i < rounds; i++) {
    for (const [k, r] of runs.entries()) {
      const t0 = performance.now();
      await r.step();
      times[k].push(performance.now() - t0);
    }
  }
  return times;
}

/** Frees the runs and the runtime when the process exits (the bench runner gives no other hook). */
export function disposeOnUnload(rt: GpuRuntime, runs: readonly Disposable[]): void {
  globalThis.addEventListener("unload", () => {
    for (const r of runs) r[Symbol.dispose]();
    rt[Symbol.dispose]();
  });
}

/** The mean of step times. */
export function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
