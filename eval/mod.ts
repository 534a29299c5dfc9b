/**
 * Evals as Psyche's clients run them: multiple-choice tasks scored by the log-likelihood of
 * each choice (lm-evaluation-harness's framing), read from local task files, on the GPU.
 * `deno task eval` is eval/main.ts; the client's `--eval-tasks` uses the same pieces.
 *
 * @module
 */
export { EvalDataError } from "./errors.ts";
export { readRows, splitFiles, type TaskFileOptions, taskFolder } from "./files.ts";
export {
  documentRequests,
  encodePair,
  fewshotPrefix,
  type ScoreRequest,
  type TextEncoder,
} from "./requests.ts";
export {
  type EvalSettings,
  type PreparedTask,
  prepareTask,
  scoreDocuments,
  type TaskScores,
  TaskTally,
  windowFor,
} from "./run.ts";
export { documentOrder, fewshotIndices } from "./sample.ts";
export { LogLikelihoodScorer, type ScorerOptions } from "./scorer.ts";
export { argmax, choiceLength, type MetricSummary, scoreDocument, summarize } from "./scoring.ts";
export { type Document, type Row, type Task, TASKS, tasksNamed } from "./tasks.ts";
export { evalTokenizer } from "./text_encoders.ts";
