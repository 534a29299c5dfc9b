/**
 * Resumable checkpoints of the single-node trainer: a Hugging Face model folder (`config.json`,
 * `model.safetensors`, loadable by any tool that reads those) plus `trainer_state.json` and
 * `optimizer.safetensors` (train/train_state.ts, documented in docs/training.md). Folders are
 * written atomically (model/checkpoint.ts `writeDirAtomically`): a crash mid-save never leaves
 * a half-written folder where a checkpoint is expected.
 *
 * {@link captureTraining} reads the state off the GPU without disturbing the run, so a periodic
 * save followed by more steps gives the same bits as no save at all.
 *
 * @module
 */
import {
  CONFIG_FILE,
  type F32TensorSource,
  f32WeightSources,
  type FloatDtype,
  type LlamaConfig,
  type LlamaModel,
  llamaParamLayout,
  type ParamLayout,
  PREVIOUS_SUFFIX,
  readLlamaConfig,
  readModelDir,
  readSafetensors,
  WEIGHTS_FILE,
  writeDirAtomically,
  writeModelDir,
  writeSafetensors,
} from "../model/mod.ts";
import {
  type ChunkingOptions,
  chunkLayouts,
  type Optimizer,
  type OptimizerState,
} from "../optimizer/mod.ts";
import type { GpuRuntime } from "../shaders/mod.ts";
import {
  decodeTrainerState,
  encodeTrainerState,
  OPTIMIZER_FILE,
  optimizerFromSafetensors,
  type OptimizerGeometry,
  optimizerToSafetensors,
  TRAINER_STATE_FILE,
  type TrainerState,
  TrainerStateError,
} from "./train_state.ts";
import { openOptimizerFile, type OptimizerFile } from "./streamed_load.ts";

/** The GPU side of a run, as far as a checkpoint is concerned. */
export interface TrainingParts {
  rt: GpuRuntime;
  model: LlamaModel;
  optimizer: Optimizer;
  signal?: AbortSignal;
}

/** Everything a resumable checkpoint holds. */
export interface TrainingCheckpoint {
  config: LlamaConfig;
  layout: ParamLayout;
  /** `[P]` parameters after step `trainer.step` (settled: no DisTrO lookahead). */
  weights: Float32Array;
  trainer: TrainerState;
  optimizer: OptimizerState;
}

/** The tensor geometry of `kind`'s state over `layout` (DisTrO needs its chunking). */
export function optimizerGeometry(
  layout: ParamLayout,
  kind: "adamw" | "distro",
  chunking?: ChunkingOptions,
): OptimizerGeometry {
  if (kind === "adamw") return { layout };
  if (chunking === undefined) throw new RangeError("DisTrO state needs its chunking options");
  return { layout, chunks: chunkLayouts(layout.entries, chunking) };
}

/**
 * The parameters and optimizer state after the last step, read off the GPU. DisTrO's lookahead
 * is undone for the read and set up again with `lastLr` (the last step's learning rate), so the
 * run goes on exactly as before.
 */
export async function captureTraining(
  parts: TrainingParts,
  options: { lastLr: number },
): Promise<{ weights: Float32Array; optimizer: OptimizerState }> {
  const { rt, model, optimizer } = parts;
  const settle = rt.beginStep("settle for checkpoint");
  optimizer.encodeSettle?.(settle, model.params);
  await settle.submit();
  const weights = await model.readParams();
  const state = await optimizer.readState({ signal: parts.signal });
  const resume = rt.beginStep("resume after checkpoint");
  optimizer.encodeResume?.(resume, { params: model.params, lastLr: options.lastLr });
  await resume.submit();
  return { weights: weights.slice(0, model.layout.totalSize), optimizer: state };
}

/**
 * Loads `state` into the optimizer of a model built with the checkpoint's weights, and sets up
 * what the last step (trained with `lastLr`) left pending (DisTrO's lookahead).
 */
export async function restoreTraining(
  parts: TrainingParts,
  options: { optimizer: OptimizerState; lastLr: number },
): Promise<void> {
  const { rt, model, optimizer } = parts;
  optimizer.loadState(options.optimizer);
  const step = rt.beginStep("resume from checkpoint");
  optimizer.encodeResume?.(step, { params: model.params, lastLr: options.lastLr });
  await step.submit();
}

/**
 * Writes the checkpoint into `dir` atomically (replacing any folder there). `dtype` stores the
 * weights (default F32; only F32 resumes bit for bit).
 */
export async function writeTrainingCheckpoint(
  dir: string,
  checkpoint: TrainingCheckpoint,
  options: { geometry: OptimizerGeometry; dtype?: FloatDtype; maxShardBytes?: number },
): Promise<void> {
  const dtype = options.dtype ?? "F32";
  if (checkpoint.trainer.weightsDtype !== dtype) {
    throw new RangeError(
      `trainer state says weights are ${checkpoint.trainer.weightsDtype}, writing ${dtype}`,
    );
  }
  const optimizerFile = optimizerToSafetensors(checkpoint.optimizer, options.geometry);
  await writeDirAtomically(dir, async (tmp) => {
    await writeModelDir(tmp, {
      config: checkpoint.config,
      layout: checkpoint.layout,
      weights: checkpoint.weights,
      dtype,
      maxShardBytes: options.maxShardBytes,
    });
    await writeSafetensors(`${tmp}/${OPTIMIZER_FILE}`, optimizerFile);
    // Written last: its presence marks a complete resumable checkpoint.
    await Deno.writeTextFile(
      `${tmp}/${TRAINER_STATE_FILE}`,
      encodeTrainerState(checkpoint.trainer),
    );
  });
}

/**
 * Reads a checkpoint folder for `--resume`: the model, the trainer state and the optimizer
 * state, checked against the optimizer the run uses. Errors name the folder and what is wrong
 * (no weights, no trainer state, another optimizer, a missing or misshaped tensor).
 */
export async function readTrainingCheckpoint(
  dir: string,
  expect: { optimizer: "adamw" | "distro"; chunking?: ChunkingOptions },
): Promise<TrainingCheckpoint> {
  const { config, layout, weights } = await readModelDir(dir);
  if (weights === null) throw noWeights(dir);
  return { config, layout, weights, ...await readTrainingState(dir, layout, expect) };
}

/** A checkpoint for `--resume` whose f32 weights are left in their files, to upload in chunks. */
export type OpenedCheckpoint = Omit<TrainingCheckpoint, "weights" | "optimizer"> & {
  /** The weights whole (BF16/F16 files), or where each f32 tensor lies in its file. */
  weights: Float32Array | F32TensorSource[];
  /** `optimizer.safetensors` with its header checked, for `restoreTrainingStreamed`. */
  optimizer: OptimizerFile;
};

/**
 * {@link readTrainingCheckpoint} without reading the f32 weights or the optimizer state: their
 * headers are checked against the model (and the shard index) and the optimizer, and only where
 * their bytes lie is kept, for model/streamed_load.ts `uploadF32Weights` and
 * train/streamed_load.ts `restoreTrainingStreamed`. BF16/F16 weights are still read whole (they
 * convert on the host).
 */
export async function openTrainingCheckpoint(
  dir: string,
  expect: { optimizer: "adamw" | "distro"; chunking?: ChunkingOptions },
): Promise<OpenedCheckpoint> {
  const { config, layout } = await readModelConfig(dir);
  const sources = await f32WeightSources(dir, layout);
  let weights: Float32Array | F32TensorSource[];
  if (sources !== null) {
    weights = sources;
  } else {
    const whole = await readModelDir(dir);
    if (whole.weights === null) throw noWeights(dir);
    weights = whole.weights;
  }
  const trainer = await readTrainerFile(dir, expect);
  const optimizer = await openOptimizerFile(dir, {
    kind: expect.optimizer,
    step: trainer.step,
    geometry: optimizerGeometry(layout, expect.optimizer, expect.chunking),
  });
  return { config, layout, weights, trainer, optimizer };
}

function noWeights(dir: string): TrainerStateError {
  return new TrainerStateError(
    `Cannot resume from "${dir}": it has ${CONFIG_FILE} but no ${WEIGHTS_FILE}`,
  );
}

/** The config of `dir` and its layout (readModelDir's checks, without the weights). */
async function readModelConfig(dir: string): Promise<{ config: LlamaConfig; layout: ParamLayout }> {
  if (!(await exists(dir)) && (await exists(`${dir}${PREVIOUS_SUFFIX}`))) {
    // readModelDir names the cut-off save and how to recover from it.
    await readModelDir(dir);
  }
  const config = await readLlamaConfig(`${dir}/${CONFIG_FILE}`);
  return { config, layout: llamaParamLayout(config) };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

async function readTrainingState(
  dir: string,
  layout: ParamLayout,
  expect: { optimizer: "adamw" | "distro"; chunking?: ChunkingOptions },
): Promise<{ trainer: TrainerState; optimizer: OptimizerState }> {
  const trainer = await readTrainerFile(dir, expect);
  const path = `${dir}/${OPTIMIZER_FILE}`;
  let file;
  try {
    file = await readSafetensors(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new TrainerStateError(`Cannot resume from "${dir}": ${OPTIMIZER_FILE} is missing`);
  }
  const optimizer = optimizerFromSafetensors(file, {
    ...optimizerGeometry(layout, expect.optimizer, expect.chunking),
    kind: expect.optimizer,
    step: trainer.step,
    path,
  });
  return { trainer, optimizer };
}

/** `trainer_state.json`, checked against the run's optimizer. */
async function readTrainerFile(
  dir: string,
  expect: { optimizer: "adamw" | "distro" },
): Promise<TrainerState> {
  let text: string;
  try {
    text = await Deno.readTextFile(`${dir}/${TRAINER_STATE_FILE}`);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new TrainerStateError(
      `Cannot resume from "${dir}": it has no ${TRAINER_STATE_FILE} (a model folder, not a ` +
        `training checkpoint; --model ${dir} starts a new run from its weights)`,
    );
  }
  const trainer = decodeTrainerState(text, `${dir}/${TRAINER_STATE_FILE}`);
  if (trainer.optimizer !== expect.optimizer) {
    throw new TrainerStateError(
      `Cannot resume from "${dir}": it was trained with --optimizer ${trainer.optimizer}, ` +
        `this run uses --optimizer ${expect.optimizer}`,
    );
  }
  return trainer;
}
