/**
 * Resumable checkpoints of the single-node trainer: a Hugging Face model folder (`config.json`,
 * `model.safetensors`, loadable by any tool that reads those) plus `trainer_state.json` and
 * `optimizer.safetensors` (train/train_state.ts, documented in docs/training.md). Folders are
 * written atomically (model/checkpoint.ts `writeDirAtomically`): a crash mid-save never leaves
 * a half-written folder where a checkpoint is expected.
 *
 * The save streams the GPU state into the files (train/streamed_save.ts); a resume opens the
 * folder here ({@link openTrainingCheckpoint}) and streams it back (model/streamed_load.ts,
 * train/streamed_load.ts). The whole-array save and load they are tested against lives in
 * train/testing/whole_checkpoint.ts.
 *
 * @module
 */
import {
  CONFIG_FILE,
  type F32TensorSource,
  f32WeightSources,
  type LlamaConfig,
  type LlamaModel,
  llamaParamLayout,
  type ParamLayout,
  PREVIOUS_SUFFIX,
  readLlamaConfig,
  readModelDir,
  type ReadProgress,
  WEIGHTS_FILE,
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
  type OptimizerGeometry,
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

/** A checkpoint for `--resume` whose f32 weights are left in their files, to upload in chunks. */
export type OpenedCheckpoint = Omit<TrainingCheckpoint, "weights" | "optimizer"> & {
  /** The weights whole (BF16/F16 files), or where each f32 tensor lies in its file. */
  weights: Float32Array | F32TensorSource[];
  /** `optimizer.safetensors` with its header checked, for `restoreTrainingStreamed`. */
  optimizer: OptimizerFile;
};

/**
 * A checkpoint folder for `--resume`, without reading the f32 weights or the optimizer state: their
 * headers are checked against the model (and the shard index) and the optimizer, and only where
 * their bytes lie is kept, for model/streamed_load.ts `uploadF32Weights` and
 * train/streamed_load.ts `restoreTrainingStreamed`. BF16/F16 weights are still read whole (they
 * convert on the host).
 */
export async function openTrainingCheckpoint(
  dir: string,
  /** `optimizer` null: the one the checkpoint was trained with. */
  expect: {
    optimizer: "adamw" | "distro" | null;
    chunking?: ChunkingOptions;
    /** Hears how far a whole read of BF16/F16 weights got (readModelDir's onProgress). */
    onProgress?: ReadProgress;
  },
): Promise<OpenedCheckpoint> {
  const { config, layout } = await readModelConfig(dir);
  const sources = await f32WeightSources(dir, layout);
  let weights: Float32Array | F32TensorSource[];
  if (sources !== null) {
    weights = sources;
  } else {
    const whole = await readModelDir(dir, { onProgress: expect.onProgress });
    if (whole.weights === null) throw noWeights(dir);
    weights = whole.weights;
  }
  const trainer = await readTrainerFile(dir, expect);
  const kind = expect.optimizer ?? trainer.optimizer;
  const optimizer = await openOptimizerFile(dir, {
    kind,
    step: trainer.step,
    geometry: optimizerGeometry(layout, kind, expect.chunking),
  });
  return { config, layout, weights, trainer, optimizer };
}

/** The error for a checkpoint folder with a config but no weights. */
export function noWeights(dir: string): TrainerStateError {
  return new TrainerStateError(
    `Cannot resume from "${dir}": it has ${CONFIG_FILE} but no ${WEIGHTS_FILE}`,
  );
}

/** The config of `dir` and its layout (readModelDir's checks, without the weights). */
export async function readModelConfig(
  dir: string,
): Promise<{ config: LlamaConfig; layout: ParamLayout }> {
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

/** `trainer_state.json`, checked against the run's optimizer. */
export async function readTrainerFile(
  dir: string,
  /** `optimizer` null: any. */
  expect: { optimizer: "adamw" | "distro" | null },
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
  if (expect.optimizer !== null && trainer.optimizer !== expect.optimizer) {
    throw new TrainerStateError(
      `Cannot resume from "${dir}": it was trained with --optimizer ${trainer.optimizer}, ` +
        `this run uses --optimizer ${expect.optimizer}`,
    );
  }
  return trainer;
}
