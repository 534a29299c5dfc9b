/**
 * Evals while training (`--eval-tasks`), as Psyche's clients run them: the tasks are scored
 * again and again on the run's current parameters, a few documents at a time, only while the
 * GPU has no training work queued. Each chunk is one forward submission of `microBatch`
 * requests, a fraction of one training micro-batch's forward and backward, so a round that
 * begins while a chunk runs waits at most that long.
 *
 * A pass takes a copy of the parameters when it starts (the scorer holds its own model, sized
 * for the requests, not the training batch) and reports each task's scores when it ends; the
 * witness metadata carries the latest finished pass's main metric per task (`<task>_acc_norm`
 * where the task defines it, else `<task>_acc`), which the coordinator's dashboard and
 * `/metrics` show.
 *
 * @module
 */
import {
  EvalDataError,
  evalTokenizer,
  LogLikelihoodScorer,
  type PreparedTask,
  prepareTask,
  scoreDocuments,
  type Task,
  TaskTally,
  windowFor,
} from "../eval/mod.ts";
import type { LlamaConfig, ParamLayout } from "../model/mod.ts";
import type { GpuRuntime } from "../shaders/mod.ts";
import type { ClientLogger } from "./log.ts";

/** What to evaluate (the client's `--eval-*` flags). */
export interface BackgroundEvalOptions {
  readonly tasks: readonly Task[];
  /** `--eval-fewshot`. */
  readonly fewshot: number;
  /** `--eval-seed`. */
  readonly seed: number;
  /** `--eval-task-max-docs`. */
  readonly limit?: number;
  /** `--eval-tasks-dir`. */
  readonly tasksDir?: string;
  /** `--eval-tokenizer`; default from the model's vocabulary. */
  readonly tokenizer?: string;
  /** Requests per chunk (default 8). */
  readonly microBatch?: number;
}

/** The model a pass evaluates: its shape and a way to read its current parameters. */
export interface EvalModelSource {
  readonly rt: GpuRuntime;
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  /** The run step whose parameters `readParams` returns. */
  readonly step: number;
  readParams(): Promise<Float32Array>;
}

/** A metadata entry: a metric's name and value (the witness's `evals`). */
export interface EvalMetric {
  readonly name: string;
  readonly value: number;
}

interface Pass {
  readonly scorer: LogLikelihoodScorer;
  readonly step: number;
  readonly started: number;
  task: number;
  doc: number;
  tally: TaskTally;
  chunks: number;
}

/** The client's evals: prepared once per model shape, then scored chunk by chunk. */
export class BackgroundEvals implements Disposable {
  readonly #options: BackgroundEvalOptions;
  readonly #logger: ClientLogger;
  readonly #now: () => number;
  #prepared: { config: LlamaConfig; tasks: PreparedTask[]; window: number } | null = null;
  #pass: Pass | null = null;
  #disabled = false;
  readonly #latest = new Map<string, EvalMetric>();

  constructor(options: BackgroundEvalOptions, logger: ClientLogger, now: () => number = Date.now) {
    this.#options = options;
    this.#logger = logger;
    this.#now = now;
  }

  /** False once the task files proved unusable for this model (logged as `eval_disabled`). */
  get enabled(): boolean {
    return !this.#disabled;
  }

  /** The latest finished pass's main metric per task, for the witness metadata. */
  metrics(): EvalMetric[] {
    return [...this.#latest.values()];
  }

  /**
   * Scores the next chunk: starts a pass (reading the parameters) when none is running, ends it
   * after its last document. Never throws for bad task files: it logs once and stops evaluating.
   */
  async runChunk(model: EvalModelSource): Promise<void> {
    if (this.#disabled) return;
    try {
      await this.#chunk(model);
    } catch (e) {
      if (!(e instanceof EvalDataError)) throw e;
      this.#disabled = true;
      this.#endPass();
      this.#logger.log("eval_disabled", { error: e.message });
    }
  }

  async #chunk(model: EvalModelSource): Promise<void> {
    const prepared = await this.#prepare(model.config);
    if (this.#pass === null) {
      this.#pass = {
        scorer: new LogLikelihoodScorer(model.rt, {
          config: model.config,
          layout: model.layout,
          weights: await model.readParams(),
          seqLen: prepared.window,
          microBatch: this.#options.microBatch ?? 8,
          slots: 1,
        }),
        step: model.step,
        started: this.#now(),
        task: 0,
        doc: 0,
        tally: new TaskTally(prepared.tasks[0].task),
        chunks: 0,
      };
    }
    const pass = this.#pass;
    const task = prepared.tasks[pass.task];
    // Whole documents, as many as fit one submission (at least one).
    let to = pass.doc + 1, requests = task.docs[pass.doc].choices.length;
    while (
      to < task.docs.length && requests + task.docs[to].choices.length <= pass.scorer.batchSize
    ) {
      requests += task.docs[to].choices.length;
      to++;
    }
    await scoreDocuments(pass.scorer, task, pass.tally, { from: pass.doc, to });
    pass.chunks++;
    pass.doc = to;
    if (pass.doc < task.docs.length) return;
    this.#report(task.task, pass);
    pass.task++;
    if (pass.task === prepared.tasks.length) {
      this.#endPass();
      return;
    }
    pass.doc = 0;
    pass.tally = new TaskTally(prepared.tasks[pass.task].task);
  }

  #report(task: Task, pass: Pass): void {
    const s = pass.tally.summary();
    const main = pass.tally.mainMetric();
    this.#latest.set(task.name, { name: `${task.name}_${main.name}`, value: main.value });
    this.#logger.log("eval", {
      task: task.name,
      step: pass.step,
      docs: s.docs,
      acc: s.acc.value,
      acc_stderr: s.acc.stderr,
      acc_norm: s.accNorm?.value ?? null,
      acc_norm_stderr: s.accNorm?.stderr ?? null,
      chunks: pass.chunks,
      seconds: (this.#now() - pass.started) / 1000,
    });
  }

  async #prepare(config: LlamaConfig) {
    if (this.#prepared !== null && this.#prepared.config === config) return this.#prepared;
    this.#endPass();
    const o = this.#options;
    const encoder = evalTokenizer(config.vocabSize, o.tokenizer);
    const settings = {
      fewshot: o.fewshot,
      seed: o.seed,
      limit: o.limit,
      window: config.maxPositionEmbeddings,
    };
    const tasks: PreparedTask[] = [];
    for (const task of o.tasks) tasks.push(await prepareTask(task, encoder, settings, o));
    this.#prepared = { config, tasks, window: windowFor(tasks, config.maxPositionEmbeddings) };
    return this.#prepared;
  }

  #endPass(): void {
    this.#pass?.scorer[Symbol.dispose]();
    this.#pass = null;
  }

  [Symbol.dispose](): void {
    this.#endPass();
  }
}
