/**
 * What `deno task eval` prints: a human line per task and progress while scoring, or one JSON
 * object per event (`--logs json`, docs/logs.md): `eval_start`, `eval_progress`, `eval_task`,
 * `eval_end`. The writer and clock are injected, so tests capture lines.
 *
 * @module
 */
import { logLine } from "../cli/entry.ts";
import type { TaskScores } from "./run.ts";

/** Where the lines go, and what time it is. */
export interface EvalLogIo {
  readonly out: (line: string) => void;
  readonly now: () => number;
}

/** The eval's events. */
export interface EvalLogger {
  start(
    info: {
      model: string;
      tasks: string[];
      tokenizer: string;
      window: number;
      fewshot: number;
      seed: number;
      requests: number;
    },
  ): void;
  progress(task: string, done: number, total: number): void;
  task(scores: TaskScores, seconds: number): void;
  end(seconds: number): void;
}

const pct = (v: number) => (100 * v).toFixed(2);

/** The logger of `--logs console` or `--logs json`. */
export function evalLogger(format: "console" | "json", io: EvalLogIo): EvalLogger {
  if (format === "json") {
    const emit = (event: string, fields: Record<string, unknown>) =>
      io.out(logLine(io.now(), "info", event, fields));
    return {
      start: (i) =>
        emit("eval_start", {
          model: i.model,
          tasks: i.tasks,
          tokenizer: i.tokenizer,
          window: i.window,
          fewshot: i.fewshot,
          seed: i.seed,
          requests: i.requests,
        }),
      progress: (task, done, total) =>
        emit("eval_progress", { task, requests_done: done, requests: total }),
      task: (s, seconds) =>
        emit("eval_task", {
          task: s.task,
          docs: s.docs,
          acc: s.acc.value,
          acc_stderr: s.acc.stderr,
          ...(s.accNorm === undefined
            ? {}
            : { acc_norm: s.accNorm.value, acc_norm_stderr: s.accNorm.stderr }),
          seconds,
          docs_per_sec: s.docs / Math.max(seconds, 1e-9),
        }),
      end: (seconds) => emit("eval_end", { seconds }),
    };
  }
  let lastProgress = 0;
  return {
    start: (i) =>
      io.out(
        `evaluating ${i.model} on ${i.tasks.join(", ")}: ${i.requests} requests, ` +
          `${i.fewshot}-shot, seed ${i.seed}, tokenizer ${i.tokenizer}, window ${i.window}`,
      ),
    progress: (task, done, total) => {
      // A line every few seconds at most: enough to show it moves.
      if (done < total && io.now() - lastProgress < 5000) return;
      lastProgress = io.now();
      io.out(`  ${task}: ${done}/${total} requests`);
    },
    task: (s, seconds) =>
      io.out(
        `${s.task.padEnd(14)} acc ${pct(s.acc.value)}% ± ${pct(s.acc.stderr)}%` +
          (s.accNorm === undefined
            ? ""
            : `  acc_norm ${pct(s.accNorm.value)}% ± ${pct(s.accNorm.stderr)}%`) +
          `  (${s.docs} docs, ${(s.docs / Math.max(seconds, 1e-9)).toFixed(1)} docs/s)`,
      ),
    end: (seconds) => io.out(`done in ${seconds.toFixed(1)} s`),
  };
}
