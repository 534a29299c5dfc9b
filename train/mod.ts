/**
 * Single-node training: the trainer loop and its reusable step, the Optimizer seam, batch
 * geometry, progress logs and the `deno task train` command-line.
 *
 * @module
 */
export {
  encodeGradients,
  evaluate,
  runTraining,
  type StepResult,
  type TrainerParts,
  type TrainSettings,
  trainStep,
} from "./trainer.ts";
export { type BatchPlan, microBatchRanges, readRanges } from "./batches.ts";
export {
  consoleLogger,
  type EndInfo,
  type EvalRecord,
  jsonLogger,
  type StartInfo,
  type StepRecord,
  type TrainLogger,
} from "./log.ts";
export {
  LR_SCHEDULES,
  type LrScheduleName,
  type OptimizerName,
  OPTIMIZERS,
  parseTrainArgs,
  type TrainOptions,
  USAGE,
} from "./cli.ts";
export { scheduleFor, shuffleSeed, train } from "./main.ts";
