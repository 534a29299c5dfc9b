/**
 * The single-node reference trainer: read it top to bottom.
 *
 * Contract
 * - Inputs (all injected, nothing global): a GPU runtime, a {@link LlamaModel} holding the
 *   parameters and gradient buffers, an {@link Optimizer}, a {@link DataProvider}, a
 *   {@link TrainLogger}, a millisecond clock and an optional AbortSignal.
 * - Step `s` (1-based) reads sequences `[(s−1)·G, s·G)` modulo the dataset size (G = total batch),
 *   in micro-batches of `microBatch` sequences; step s+1's reads overlap step s's GPU work.
 * - One GPU submission per step: zero the gradients, forward + backward of every micro-batch
 *   (gradients accumulate, each scaled so their sum is the gradient of the step's mean loss),
 *   the squared gradient norm, the optimizer update. Then one small readback: the step's loss sum
 *   and squared gradient norm.
 * - The loss reported for step `s` is the mean cross-entropy over the step's predictions
 *   (`G·(T−1)`; fewer where the data's labels mask some with -100, model/rows.ts), computed
 *   with the weights before the step's update; 0, with zero gradients, when every label of the
 *   step is masked. Position ids and packed documents, when the data has them, set RoPE's
 *   positions and restrict attention to each token's document.
 * - Learning rate of step `s` is `learningRate(schedule, s)` (common/lr_schedule.ts).
 * - With held-out data, the mean loss on its first sequences is logged every `evalEvery` steps
 *   and after the last step (forward only; evaluation time is not counted in the step's ms).
 * - Deterministic: the same weights, data and settings give the same losses, step for step, on
 *   one adapter (every kernel reduces in a fixed order).
 * - Resumable: a run may start at `firstStep` > 1 with the weights and optimizer state saved
 *   after step `firstStep − 1` (train/checkpoint.ts); it then continues bit for bit as if it had
 *   never stopped. `stop` ends the run cleanly between two steps (the step in flight finishes);
 *   `checkpoint` is called every `saveEvery` steps, between steps.
 *
 * The networked client reuses {@link encodeGradients} (gradients of its assigned batch) or the
 * whole {@link trainStep}; only the data assignment and the optimizer's exchange differ.
 *
 * @module
 */
import { microBatchRanges, readRanges } from "./batches.ts";
import type { TrainLogger } from "./log.ts";
import { learningRate, type LrSchedule } from "../common/mod.ts";
import type { Optimizer } from "../optimizer/mod.ts";
import type { DataProvider } from "../data/mod.ts";
import type { LlamaModel, ParamBuffers, TrainingRows } from "../model/mod.ts";
import type { GpuRuntime, GpuStep, TensorView } from "../shaders/mod.ts";

/** The parts a training run is built from. */
export interface TrainerParts {
  rt: GpuRuntime;
  model: LlamaModel;
  optimizer: Optimizer;
  data: DataProvider;
  /** Held-out sequences for {@link evaluate}, if any. */
  evalData?: DataProvider;
  logger: TrainLogger;
  /** Milliseconds, monotonic (default `performance.now`). */
  clock?: () => number;
  /** Aborts at once (the step in flight is lost): a second Ctrl-C. */
  signal?: AbortSignal;
  /** Ends the run after the step in flight: the run returns with `stopped` set. */
  stop?: AbortSignal;
  /** Saves a checkpoint after step `step` (trained with `lr`); called every `saveEvery` steps. */
  checkpoint?: (step: number, lr: number) => Promise<void>;
}

/** How long and how big. */
export interface TrainSettings {
  /** Optimizer steps to run (steps `1..steps`). */
  steps: number;
  /** Sequences per step. */
  totalBatch: number;
  /** Sequences per forward/backward; divides totalBatch and is at most the model's capacity. */
  microBatch: number;
  schedule: LrSchedule;
  /** Whether the optimizer clips (the squared gradient norm is then computed every step). */
  clipGradients: boolean;
  /** Evaluate every this many steps (0: only after the last step); needs `parts.evalData`. */
  evalEvery?: number;
  /** Evaluation sequences (the first ones of `evalData`), a multiple of the micro-batch. */
  evalSequences?: number;
  /** The first step to run (default 1); the state must be that after step `firstStep − 1`. */
  firstStep?: number;
  /** Call `parts.checkpoint` after every this many steps (0, the default: never). */
  saveEvery?: number;
}

/** What {@link runTraining} did. */
export interface TrainingResult {
  /** The loss of every step run, in order (from `firstStep`). */
  losses: number[];
  /** The last step done (`firstStep − 1` when stopped before the first). */
  lastStep: number;
  /** The learning rate of the last step done (0 when none was). */
  lastLr: number;
  /** True when `parts.stop` ended the run before `steps`. */
  stopped: boolean;
  seconds: number;
  tokensPerSec: number;
}

/** What one step produced. */
export interface StepResult {
  loss: number;
  /** Global L2 norm of the gradient before clipping. */
  gradNorm: number;
}

/**
 * Encodes the gradient half of a step into `step`: queue the micro-batches' tokens, zero the
 * gradients, forward + backward of each micro-batch (scaled so the sum is the gradient of the mean
 * loss over all of them), then the squared gradient norm. A networked client calls this and then
 * its own optimizer calls; {@link trainStep} adds the optimizer and the readback. With
 * `weights`, forward and backward read the weights there instead of the model's parameters.
 * `negate` flips the gradient's sign (the loss scale's): an attack tests order (client/attacks.ts),
 * never training. A micro-batch is token ids or {@link TrainingRows} with labels, positions and
 * packed documents. Returns the number of predictions (for the mean loss; 0 when every label
 * is masked, and then the gradient is zero) and the `[1]` squared-norm buffer.
 */
export function encodeGradients(
  model: LlamaModel,
  step: GpuStep,
  microBatches: readonly (Uint32Array | TrainingRows)[],
  weights?: ParamBuffers,
  options: { negate?: boolean } = {},
): { predictions: number; gradSumSq: TensorView } {
  if (microBatches.length < 1 || microBatches.length > model.slots) {
    throw new RangeError(
      `a step needs 1 to ${model.slots} micro-batches (the model's slots), got ${microBatches.length}`,
    );
  }
  let predictions = 0;
  for (const [i, m] of microBatches.entries()) {
    predictions += m instanceof Uint32Array
      ? model.writeTokens(i, m)
      : model.writeTokens(i, m.tokens, m);
  }
  model.encodeZeroGrads(step);
  const lossScale = predictions === 0 ? 0 : (options.negate ? -1 : 1) / predictions;
  for (let i = 0; i < microBatches.length; i++) {
    model.encodeForwardBackward(step, { slot: i, lossScale, weights });
  }
  return { predictions, gradSumSq: model.encodeGradSumSq(step) };
}

/**
 * One optimizer step on the given micro-batches (each `[microBatch, T]` token ids): gradients of
 * the mean loss over all of them, then the optimizer update, in one GPU step (one
 * submission, or one per layer where the profile hands layers over early: `GpuStep.flush`).
 */
export async function trainStep(
  parts: Pick<TrainerParts, "rt" | "model" | "optimizer" | "signal">,
  args: {
    stepNumber: number;
    lr: number;
    microBatches: readonly (Uint32Array | TrainingRows)[];
    clipGradients: boolean;
  },
): Promise<StepResult> {
  const { model, optimizer, rt } = parts;
  const step = rt.beginStep(`train step ${args.stepNumber}`);
  const { predictions, gradSumSq } = encodeGradients(model, step, args.microBatches);
  optimizer.encodeStep(step, {
    params: model.params,
    grads: model.grads,
    lr: args.lr,
    stepNumber: args.stepNumber,
    gradSumSq: args.clipGradients ? gradSumSq : null,
  });
  await step.submit({ wait: false }); // the read below waits for the step
  const { lossSum, gradSumSq: sumsq } = await model.readStats(args.microBatches.length, {
    signal: parts.signal,
  });
  return { loss: meanLoss(lossSum, predictions), gradNorm: Math.sqrt(sumsq) };
}

/** The mean loss over `predictions` (0 when there are none: every label masked). */
export function meanLoss(lossSum: number, predictions: number): number {
  return predictions === 0 ? 0 : lossSum / predictions;
}

/**
 * Mean loss of the model on sequences `0..sequences−1` of `data`: forward only, in micro-batches
 * of the model's size, up to `model.slots` of them per GPU submission. Leaves the gradients alone.
 */
export async function evaluate(
  parts: { rt: GpuRuntime; model: LlamaModel; data: DataProvider; signal?: AbortSignal },
  options: { sequences: number },
): Promise<number> {
  const { rt, model, data } = parts;
  const B = model.microBatch, T = model.seqLen;
  const { sequences } = options;
  if (!Number.isInteger(sequences) || sequences < B || sequences % B !== 0) {
    throw new RangeError(
      `evaluation needs a positive multiple of ${B} sequences, got ${sequences}`,
    );
  }
  if (sequences > data.numSequences) {
    throw new RangeError(
      `evaluation asks for ${sequences} sequences, the data has ${data.numSequences}`,
    );
  }
  if (data.seqLen !== T) {
    throw new RangeError(`evaluation sequences have ${data.seqLen} tokens, the model expects ${T}`);
  }
  let lossSum = 0, predictions = 0;
  for (let first = 0; first < sequences; first += B * model.slots) {
    const groups = Math.min(model.slots, (sequences - first) / B);
    for (let g = 0; g < groups; g++) {
      const start = first + g * B;
      const batch = await data.getSamples({ start, end: start + B - 1 }, { signal: parts.signal });
      predictions += model.writeTokens(g, batch.tokens, batch);
    }
    const step = rt.beginStep(`evaluate sequences ${first}..`);
    for (let g = 0; g < groups; g++) model.encodeLoss(step, { slot: g });
    await step.submit({ wait: false });
    lossSum += (await model.readStats(groups, { signal: parts.signal })).lossSum;
  }
  return meanLoss(lossSum, predictions);
}

/**
 * Runs steps `firstStep..steps`, logging each, until done or `parts.stop` aborts; returns the
 * per-step losses.
 */
export async function runTraining(
  parts: TrainerParts,
  settings: TrainSettings,
): Promise<TrainingResult> {
  const { model, data, logger } = parts;
  const clock = parts.clock ?? (() => performance.now());
  const { steps, totalBatch, microBatch } = settings;
  const firstStep = settings.firstStep ?? 1;
  const saveEvery = settings.saveEvery ?? 0;
  if (totalBatch % microBatch !== 0) {
    throw new RangeError(
      `total batch ${totalBatch} is not a multiple of micro-batch ${microBatch}`,
    );
  }
  if (microBatch !== model.microBatch) {
    throw new RangeError(
      `micro-batch ${microBatch} but the model was built for ${model.microBatch}`,
    );
  }
  if (data.seqLen !== model.seqLen) {
    throw new RangeError(
      `data sequences have ${data.seqLen} tokens, the model expects ${model.seqLen}`,
    );
  }
  if (!Number.isInteger(firstStep) || firstStep < 1 || firstStep > steps) {
    throw new RangeError(`first step ${firstStep} outside [1, ${steps}]`);
  }
  const plan = { totalBatch, microBatch, numSequences: data.numSequences };
  const perStep = totalBatch / microBatch;
  const tokensPerStep = totalBatch * model.seqLen;
  const losses: number[] = [];
  const t0 = clock();
  const fetchStep = async (s: number): Promise<TrainingRows[]> => {
    const out: TrainingRows[] = [];
    for (let m = 0; m < perStep; m++) {
      out.push(await readRanges(data, microBatchRanges(s, m, plan), { signal: parts.signal }));
    }
    return out;
  };
  // The next step's data is read while the GPU runs the current step.
  let next: Promise<TrainingRows[]> | null = fetchStep(firstStep);
  next.catch(() => {}); // surfaced by the await below, or dropped when the run stops first
  let lastStep = firstStep - 1;
  let lastLr = 0;
  let stopped = false;
  try {
    for (let s = firstStep; s <= steps; s++) {
      parts.signal?.throwIfAborted();
      if (parts.stop?.aborted) {
        stopped = true;
        break;
      }
      const start = clock();
      const microBatches: TrainingRows[] = await next!;
      next = null;
      if (s < steps) {
        next = fetchStep(s + 1);
        next.catch(() => {});
      }
      const lr = learningRate(settings.schedule, s);
      const result = await trainStep(parts, {
        stepNumber: s,
        lr,
        microBatches,
        clipGradients: settings.clipGradients,
      });
      if (!Number.isFinite(result.loss)) {
        throw new Error(`step ${s}: loss is ${result.loss} (training diverged)`);
      }
      lastStep = s;
      lastLr = lr;
      const now = clock();
      const ms = now - start;
      losses.push(result.loss);
      // ETA from the mean wall time of this run's steps so far (evaluations and saves included).
      const done = s - firstStep + 1;
      logger.step({
        step: s,
        steps,
        loss: result.loss,
        lr,
        gradNorm: result.gradNorm,
        tokensPerSec: tokensPerStep / (ms / 1000),
        ms,
        etaSeconds: ((now - t0) / done) * (steps - s) / 1000,
      });
      const every = settings.evalEvery ?? 0;
      if (parts.evalData && (s === steps || (every > 0 && s % every === 0))) {
        const sequences = settings.evalSequences ?? model.microBatch;
        const loss = await evaluate({ ...parts, data: parts.evalData }, { sequences });
        logger.eval({ step: s, loss, sequences });
      }
      if (parts.checkpoint && saveEvery > 0 && s % saveEvery === 0 && s < steps) {
        await parts.checkpoint(s, lr);
      }
    }
  } finally {
    // No read may outlive the run: the caller closes the data provider next.
    await next?.catch(() => {});
  }
  const seconds = (clock() - t0) / 1000;
  const ran = lastStep - firstStep + 1;
  return {
    losses,
    lastStep,
    lastLr,
    stopped,
    seconds,
    tokensPerSec: seconds > 0 ? (tokensPerStep * ran) / seconds : 0,
  };
}
