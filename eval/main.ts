/**
 * `deno task eval --model DIR --tasks hellaswag,arc_easy`: scores a checkpoint on
 * multiple-choice tasks (see eval/cli.ts for the flags).
 *
 * @module
 */
import { EXIT_INVALID, EXIT_OK, parseOrExit } from "../cli/entry.ts";
import { HubCheckpointError, loadHubCheckpoint } from "../model/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { EVAL_SPEC, type EvalArgs, evalArgs } from "./cli.ts";
import { EvalDataError } from "./errors.ts";
import { evalLogger, type EvalLogIo } from "./log.ts";
import { prepareTask, scoreDocuments, type TaskScores, TaskTally, windowFor } from "./run.ts";
import { LogLikelihoodScorer } from "./scorer.ts";
import { tasksNamed } from "./tasks.ts";
import { evalTokenizer } from "./text_encoders.ts";

/** Runs the eval `args` asks for; resolves to every task's scores. */
export async function runEval(args: EvalArgs, io: EvalLogIo): Promise<TaskScores[]> {
  const started = io.now();
  const log = evalLogger(args.logs, io);
  const tasks = tasksNamed(args.tasks);
  const model = await loadHubCheckpoint({ repoId: args.model, revision: null });
  if (model.weights === null) {
    throw new EvalDataError(`"${model.folder}" has a config.json but no weights to evaluate`);
  }
  const { config } = model;
  const encoder = evalTokenizer(config.vocabSize, args.tokenizer);
  const cap = Math.min(
    args.maxLength ?? config.maxPositionEmbeddings,
    config.maxPositionEmbeddings,
  );
  const settings = { fewshot: args.fewshot, seed: args.seed, limit: args.limit, window: cap };
  const prepared = [];
  for (const task of tasks) {
    prepared.push(await prepareTask(task, encoder, settings, { tasksDir: args.tasksDir }));
  }
  const window = windowFor(prepared, cap);
  log.start({
    model: model.folder,
    tasks: tasks.map((t) => t.name),
    tokenizer: encoder.name,
    window,
    fewshot: args.fewshot,
    seed: args.seed,
    requests: prepared.reduce((n, p) => n + p.requests.length, 0),
  });
  using rt = await GpuRuntime.create();
  using scorer = new LogLikelihoodScorer(rt, {
    config,
    layout: model.layout,
    weights: model.weights,
    seqLen: window,
    microBatch: args.microBatch,
  });
  const results: TaskScores[] = [];
  for (const p of prepared) {
    const taskStart = io.now();
    const tally = new TaskTally(p.task);
    await scoreDocuments(
      scorer,
      p,
      tally,
      { from: 0, to: p.docs.length },
      (done, total) => log.progress(p.task.name, done, total),
    );
    const scores = tally.summary();
    log.task(scores, (io.now() - taskStart) / 1000);
    results.push(scores);
  }
  log.end((io.now() - started) / 1000);
  return results;
}

async function main(argv: string[]): Promise<number> {
  const args = parseOrExit(EVAL_SPEC, evalArgs, { argv });
  try {
    await runEval(args, { out: (line) => console.log(line), now: () => Date.now() });
    return EXIT_OK;
  } catch (e) {
    if (e instanceof EvalDataError || e instanceof HubCheckpointError) {
      console.error(`error: ${e.message}`);
      return EXIT_INVALID;
    }
    throw e;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
