/**
 * The whole-array reference for train/streamed_save.ts and train/streamed_load.ts: a checkpoint
 * saved and loaded with every array on the host at once, as the trainer once did. The streamed
 * paths must produce the same files and the same resumed bits as this (streamed_save_test.ts,
 * tests/param_segments_test.ts); tests also read checkpoints with it to inspect their state, and
 * train/testing/save_peak.ts measures its memory against the streamed save. Not for product code:
 * it holds 3·4·P bytes for AdamW (14 GiB for a 1B model) where the streamed paths hold a chunk.
 *
 * {@link captureTraining} reads the state off the GPU without disturbing the run, so a save
 * followed by more steps gives the same bits as no save at all.
 *
 * @module
 */
import {
  type FloatDtype,
  type ParamLayout,
  readModelDir,
  readSafetensors,
  writeDirAtomically,
  writeModelDir,
  writeSafetensors,
} from "../../model/mod.ts";
import type { ChunkingOptions, OptimizerState } from "../../optimizer/mod.ts";
import {
  noWeights,
  optimizerGeometry,
  readTrainerFile,
  type TrainingCheckpoint,
  type TrainingParts,
} from "../checkpoint.ts";
import {
  encodeTrainerState,
  OPTIMIZER_FILE,
  optimizerFromSafetensors,
  type OptimizerGeometry,
  optimizerToSafetensors,
  readOptimizerFile,
  TRAINER_STATE_FILE,
  type TrainerState,
} from "../train_state.ts";

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

async function readTrainingState(
  dir: string,
  layout: ParamLayout,
  expect: { optimizer: "adamw" | "distro"; chunking?: ChunkingOptions },
): Promise<{ trainer: TrainerState; optimizer: OptimizerState }> {
  const trainer = await readTrainerFile(dir, expect);
  const path = `${dir}/${OPTIMIZER_FILE}`;
  const file = await readOptimizerFile(dir, readSafetensors);
  const optimizer = optimizerFromSafetensors(file, {
    ...optimizerGeometry(layout, expect.optimizer, expect.chunking),
    kind: expect.optimizer,
    step: trainer.step,
    path,
  });
  return { trainer, optimizer };
}
