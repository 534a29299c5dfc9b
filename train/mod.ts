/**
 * Single-node training: the trainer loop and its reusable step, the Optimizer seam, batch
 * geometry, progress logs, resumable checkpoints and the `deno task train` command-line.
 *
 * @module
 */
export {
  encodeGradients,
  evaluate,
  meanLoss,
  runTraining,
  type StepResult,
  type TrainerParts,
  type TrainingResult,
  type TrainSettings,
  trainStep,
} from "./trainer.ts";
export {
  type OpenedCheckpoint,
  openTrainingCheckpoint,
  optimizerGeometry,
  type TrainingCheckpoint,
  type TrainingParts,
} from "./checkpoint.ts";
export { type SaveOptions, saveTraining } from "./streamed_save.ts";
export { openOptimizerFile, type OptimizerFile, restoreTrainingStreamed } from "./streamed_load.ts";
export {
  decodeTrainerState,
  encodeTrainerState,
  nextSequence,
  OPTIMIZER_FILE,
  type OptimizerArray,
  optimizerFilePlan,
  optimizerFromSafetensors,
  type OptimizerGeometry,
  type OptimizerTensor,
  optimizerToSafetensors,
  STATE_FORMAT,
  STATE_VERSION,
  TRAINER_STATE_FILE,
  type TrainerState,
  TrainerStateError,
} from "./train_state.ts";
export { type BatchPlan, microBatchRanges, readRanges } from "./batches.ts";
export {
  consoleLogger,
  type EndInfo,
  type EvalRecord,
  formatDuration,
  jsonLogger,
  type ReadRecord,
  type SaveProgressRecord,
  type SaveRecord,
  type StartInfo,
  type StepRecord,
  type TrainLogger,
} from "./log.ts";
export {
  DEMO_CORPUS,
  DEMO_DEFAULTS,
  DEMO_MODEL,
  LR_SCHEDULES,
  type LrScheduleName,
  type OptimizerName,
  OPTIMIZERS,
  parseTrainArgs,
  TRAIN_SPEC,
  type TrainFlags,
  type TrainOptions,
  trainOptions,
} from "./cli.ts";
export { scheduleFor, sequenceLengthFor, shuffleSeed, train, type TrainOutcome } from "./main.ts";
