/**
 * The tiny Llama (config/models/llama-tiny) trained a few steps with AdamW or DisTrO, or two
 * networked DisTrO rounds: the fixtures of the tests that hold a split, capped, saved or resumed
 * run against the plain one (tests/param_segments_test.ts, tests/distro_bindings_test.ts,
 * train/streamed_save_test.ts). Both sides of each comparison
 * are built here, so they differ only in what the test varies.
 *
 * @module
 */
import { initParams, LlamaModel, llamaParamLayout, readLlamaConfig } from "../../model/mod.ts";
import type { ModelPrecision } from "../../model/mod.ts";
import { seededTokens } from "../../model/testing/fixtures.ts";
import {
  AdamW,
  type AdamWConfig,
  aggregateFixed,
  type DistroConfig,
  DistroOptimizer,
  type Optimizer,
  type SparseParam,
} from "../../optimizer/mod.ts";
import type { GpuRuntime } from "../../shaders/mod.ts";
import { encodeGradients, type StepResult, type TrainerState, trainStep } from "../../train/mod.ts";

const TINY = new URL("../../config/models/llama-tiny/config.json", import.meta.url).pathname;
/** config/models/llama-tiny. */
export const TINY_CONFIG = await readLlamaConfig(TINY);
/** The tiny model's parameter layout. */
export const TINY_LAYOUT = llamaParamLayout(TINY_CONFIG);
/**
 * The largest tensor's bytes: under this `maxBufferBytes` the embedding and the LM head get a
 * buffer each, so the parameters, gradients and optimizer state split into several segments.
 */
export const SEGMENT_CAP = Math.max(...TINY_LAYOUT.entries.map((e) => e.size)) * 4;
/** Tokens per sequence. */
export const SEQ_LEN = 8;
/** The learning rate of every step. */
export const LR = 1e-2;
/** DisTrO's chunking: the tiny tensors still hold several chunks each. */
export const CHUNKING = { chunk: 32, topk: 8 };
/** Clipping is active at this norm (the first step's gradient norm is above it). */
const MAX_GRAD_NORM = 0.5;
const ADAMW: AdamWConfig = {
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0.1,
  maxGradNorm: MAX_GRAD_NORM,
};
/** DisTrO as the tests run it (unquantised, so a resume can be compared bit for bit). */
export const DISTRO: DistroConfig = {
  ...CHUNKING,
  decay: 0.999,
  weightDecay: 0.1,
  clipGradNorm: MAX_GRAD_NORM,
  quantize1bit: false,
};

/** The optimizers the fixtures build. */
export type Kind = "adamw" | "distro";

/** A model and its optimizer on one runtime: what `trainStep` and a checkpoint take. */
export interface TinyParts {
  rt: GpuRuntime;
  model: LlamaModel;
  optimizer: Optimizer;
}

/** Two micro-batches of one seeded sequence each for step `step`. */
export function stepBatches(step: number): Uint32Array[] {
  return [0, 1].map((i) => seededTokens(100 * step + i, SEQ_LEN, TINY_CONFIG.vocabSize));
}

/**
 * The tiny model (with `weights`, default the seed-7 init) and a `kind` optimizer over its
 * parameter segments, with two token slots (DisTrO with `distro`, default {@link DISTRO}). The
 * caller disposes both.
 */
export function tinyParts(
  rt: GpuRuntime,
  kind: Kind,
  options: { weights?: Float32Array; precision?: ModelPrecision; distro?: DistroConfig } = {},
): TinyParts {
  const model = new LlamaModel(rt, {
    config: TINY_CONFIG,
    layout: TINY_LAYOUT,
    weights: options.weights ?? initParams(TINY_LAYOUT, TINY_CONFIG, 7),
    microBatch: 1,
    seqLen: SEQ_LEN,
    slots: 2,
    precision: options.precision ?? "f32",
  });
  const segments = model.params.segments;
  const size = TINY_LAYOUT.totalSize;
  const optimizer: Optimizer = kind === "adamw"
    ? new AdamW(rt, { size, segments, config: ADAMW })
    : new DistroOptimizer(rt, {
      params: TINY_LAYOUT.entries,
      size,
      segments,
      config: options.distro ?? DISTRO,
    });
  return { rt, model, optimizer };
}

/** Steps `from..to` (1-based) of {@link stepBatches} at {@link LR}; their statistics. */
export async function trainSteps(parts: TinyParts, from: number, to: number) {
  const stats: StepResult[] = [];
  for (let s = from; s <= to; s++) {
    stats.push(
      await trainStep(parts, {
        stepNumber: s,
        lr: LR,
        microBatches: stepBatches(s),
        clipGradients: true,
      }),
    );
  }
  return stats;
}

/**
 * Two networked DisTrO rounds of a fresh tiny model (weights of seed 3), in the client's order:
 * the lookahead apart, the gradients at the lookahead, generate, this client's result read; then
 * the exact aggregate of that result and the `peers` results made from it, applied. Returns what
 * the rounds leave: parameters, the lookahead, optimizer state and this client's last result.
 */
export async function networkedDistroRounds(
  rt: GpuRuntime,
  peers: (own: SparseParam[]) => SparseParam[][] = () => [],
) {
  const parts = tinyParts(rt, "distro", { weights: initParams(TINY_LAYOUT, TINY_CONFIG, 3) });
  using model = parts.model;
  using opt = parts.optimizer as DistroOptimizer;
  for (let r = 1; r <= 2; r++) {
    const step = rt.beginStep(`round ${r}`);
    opt.encodeLookaheadApart(step, { params: model.params, prevLr: LR, lr: LR });
    const { gradSumSq } = encodeGradients(model, step, stepBatches(r), opt.lookaheadWeights);
    opt.encodeGenerate(step, { params: model.params, grads: model.grads, lr: LR, gradSumSq });
    await step.submit();
    const own = await opt.readResult();
    const results = [own, ...peers(own)];
    const update = opt.layouts.map((l, n) => aggregateFixed(l, results.map((x) => x[n])));
    const apply = rt.beginStep(`apply ${r}`);
    opt.encodeApply(apply, { params: model.params, lr: LR, update });
    await apply.submit();
  }
  return {
    params: await model.readParams(),
    ahead: await opt.lookaheadWeights.read(),
    state: await opt.readState(),
    own: await opt.readOwn(),
  };
}

/** `trainer_state.json` after step 2 of a `kind` run, its weights stored as `dtype`. */
export function trainerAfterStep2(kind: Kind, dtype: TrainerState["weightsDtype"]): TrainerState {
  return {
    step: 2,
    optimizer: kind,
    totalBatch: 2,
    sequenceLength: SEQ_LEN,
    data: { sequences: 8, shuffleSeed: null, nextSequence: 4 },
    lrSchedule: { kind: "Constant", baseLr: LR, warmupSteps: 0, warmupInitLr: 0 },
    weightsDtype: dtype,
  };
}
