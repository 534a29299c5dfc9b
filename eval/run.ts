/**
 * An eval from task files to scores: read a task's scored split (and its few-shot split), pick
 * the seeded sample, build the requests, score them, and tally `acc` and `acc_norm`.
 *
 * Preparing (files, tokens) is apart from scoring (GPU), so the window can be sized to the
 * longest request of all tasks, and the client can score a prepared task a few documents at a
 * time between its rounds.
 *
 * @module
 */
import { EvalDataError } from "./errors.ts";
import { readSplit, type TaskFileOptions, taskFolder } from "./files.ts";
import {
  documentRequests,
  fewshotPrefix,
  type ScoreRequest,
  type TextEncoder,
} from "./requests.ts";
import { documentOrder, fewshotIndices } from "./sample.ts";
import type { LogLikelihoodScorer } from "./scorer.ts";
import { type DocumentScore, type MetricSummary, scoreDocument, summarize } from "./scoring.ts";
import type { Document, Task } from "./tasks.ts";

/** How the documents of every task are chosen and framed. */
export interface EvalSettings {
  /** Few-shot examples before each question (`--eval-fewshot`, default 0). */
  readonly fewshot: number;
  /** Seed of the document sample and of the few-shot picks (`--eval-seed`, default 42). */
  readonly seed: number;
  /** Documents scored per task at most (`--eval-task-max-docs`); all when absent. */
  readonly limit?: number;
  /** The longest request in tokens: the model's `max_position_embeddings` or less. */
  readonly window: number;
}

/** A task read, sampled and tokenized: ready to score. */
export interface PreparedTask {
  readonly task: Task;
  /** The scored documents, in the seeded order. */
  readonly docs: readonly Document[];
  /** Every document's requests, document after document, choice after choice. */
  readonly requests: readonly ScoreRequest[];
  /** Index in `requests` of each document's first request. */
  readonly firstRequest: readonly number[];
}

/** Reads, samples and tokenizes one task. */
export async function prepareTask(
  task: Task,
  encoder: TextEncoder,
  settings: EvalSettings,
  files: TaskFileOptions = {},
): Promise<PreparedTask> {
  const folder = await taskFolder(task, files);
  const all = await readSplit(task, folder, task.split);
  if (all.length === 0) {
    throw new EvalDataError(`task "${task.name}": its ${task.split} split is empty`);
  }
  const docs = documentOrder(all.length, settings.seed, task.name, settings.limit).map((i) =>
    all[i]
  );
  const pool = settings.fewshot > 0 ? await readSplit(task, folder, task.fewshotSplit) : [];
  const requests: ScoreRequest[] = [];
  const firstRequest: number[] = [];
  docs.forEach((doc, d) => {
    const examples = fewshotIndices(pool.length, settings.fewshot, settings.seed, task.name, d)
      .map((i) => pool[i]);
    firstRequest.push(requests.length);
    requests.push(
      ...documentRequests(encoder, d, doc, fewshotPrefix(doc, examples), settings.window),
    );
  });
  return { task, docs, requests, firstRequest };
}

/** The smallest window holding every request, rounded up to a multiple of 8. */
export function windowFor(tasks: readonly PreparedTask[], max: number): number {
  let longest = 2;
  for (const t of tasks) for (const r of t.requests) longest = Math.max(longest, r.tokens.length);
  return Math.min(max, Math.ceil(longest / 8) * 8);
}

/** A task's scores. */
export interface TaskScores {
  readonly task: string;
  /** Documents scored. */
  readonly docs: number;
  readonly acc: MetricSummary;
  /** Present for tasks that define it. */
  readonly accNorm?: MetricSummary;
}

/** Per-document verdicts gathered into a task's scores. */
export class TaskTally {
  readonly #task: Task;
  readonly #scores: DocumentScore[] = [];

  constructor(task: Task) {
    this.#task = task;
  }

  get count(): number {
    return this.#scores.length;
  }

  add(score: DocumentScore): void {
    this.#scores.push(score);
  }

  /** The scores so far; throws when no document was scored. */
  summary(): TaskScores {
    const acc = summarize(this.#scores.map((s) => s.acc));
    const accNorm = this.#task.accNorm ? summarize(this.#scores.map((s) => s.accNorm)) : undefined;
    return { task: this.#task.name, docs: this.#scores.length, acc, accNorm };
  }

  /** The metric a task is known by: `acc_norm` where defined, else `acc` (as Psyche reports). */
  mainMetric(): { name: "acc" | "acc_norm"; value: number } {
    const s = this.summary();
    return s.accNorm !== undefined
      ? { name: "acc_norm", value: s.accNorm.value }
      : { name: "acc", value: s.acc.value };
  }
}

/**
 * Scores documents `from..to-1` of a prepared task into `tally`; `onBatch` hears how many of
 * this range's requests are done.
 */
export async function scoreDocuments(
  scorer: LogLikelihoodScorer,
  prepared: PreparedTask,
  tally: TaskTally,
  range: { from: number; to: number },
  onBatch?: (requestsDone: number, requests: number) => void,
): Promise<void> {
  const { docs, requests, firstRequest } = prepared;
  const first = firstRequest[range.from];
  const end = range.to >= docs.length ? requests.length : firstRequest[range.to];
  const lls = await scorer.score(
    requests.slice(first, end),
    (done) => onBatch?.(done, end - first),
  );
  for (let d = range.from; d < range.to; d++) {
    const doc = docs[d];
    const at = firstRequest[d] - first;
    tally.add(
      scoreDocument(Array.from(lls.subarray(at, at + doc.choices.length)), doc.choices, doc.answer),
    );
  }
}
