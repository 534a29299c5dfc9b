/**
 * The flags of `deno task eval`, parsed into settings. The task flags mirror the client's
 * (`--eval-tasks`, `--eval-fewshot`, `--eval-seed`, `--eval-task-max-docs`, as in Psyche)
 * without their `eval-` prefix.
 *
 * @module
 */
import type { ParsedFlags } from "../cli/entry.ts";
import { TOKENIZER_NAMES } from "../data/mod.ts";
import { UsageError } from "../common/mod.ts";
import { TASKS } from "./tasks.ts";

/** The flags of `deno task eval`. */
export const EVAL_SPEC = {
  usage: "deno task eval --model DIR --tasks hellaswag,arc_easy [--tasks-dir DIR] [options]",
  summary: "Scores a checkpoint on multiple-choice tasks by the log-likelihood of each choice, " +
    "as lm-evaluation-harness does, reading each task's published files (parquet or JSON " +
    `lines) from a local folder. Tasks: ${[...TASKS.keys()].join(", ")}.`,
  flags: {
    model: {
      type: "string",
      value: "DIR",
      description: "a checkpoint folder (config.json and safetensors), or a Hub repo id on disk",
      required: true,
    },
    tasks: { type: "string", value: "LIST", description: "comma-separated tasks", required: true },
    "tasks-dir": {
      type: "string",
      value: "DIR",
      description: "folder of the task datasets (<task>/ or <owner>/<name>/; else the HF cache)",
    },
    fewshot: {
      type: "string",
      value: "N",
      description: "few-shot examples per question",
      default: "0",
    },
    seed: {
      type: "string",
      value: "N",
      description: "seed of the sample and few-shot picks",
      default: "42",
    },
    limit: {
      type: "string",
      value: "N",
      description: "documents per task at most (a seeded sample)",
    },
    tokenizer: {
      type: "string",
      value: TOKENIZER_NAMES.join("|"),
      description: "the model's tokenizer (default: from its vocabulary size)",
    },
    "max-length": {
      type: "string",
      value: "N",
      description: "longest request in tokens (default: the model's max_position_embeddings)",
    },
    "micro-batch": {
      type: "string",
      value: "N",
      description: "requests per forward pass",
      default: "8",
    },
    logs: {
      type: "string",
      value: "console|json",
      description: "human lines, or one JSON object per line (docs/logs.md)",
      default: "console",
    },
  },
  footer: "Exit status: 0 scored, 1 unreadable model or task files, 2 bad arguments.",
} as const;

/** What `deno task eval` was asked to do. */
export interface EvalArgs {
  readonly model: string;
  readonly tasks: string;
  readonly tasksDir?: string;
  readonly fewshot: number;
  readonly seed: number;
  readonly limit?: number;
  readonly tokenizer?: string;
  readonly maxLength?: number;
  readonly microBatch: number;
  readonly logs: "console" | "json";
}

/** A whole number of at least `min` from a flag's text; a {@link UsageError} naming it if not. */
export function wholeNumber(flag: string, text: string, min: number): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new UsageError(`--${flag} must be a whole number of at least ${min}, got "${text}"`);
  }
  return n;
}

/** Reads the parsed flags. */
export function evalArgs({ values }: ParsedFlags<typeof EVAL_SPEC>): EvalArgs {
  if (values.model === undefined) throw new UsageError("--model DIR is required");
  if (values.tasks === undefined) throw new UsageError("--tasks LIST is required");
  const logs = values.logs ?? "console";
  if (logs !== "console" && logs !== "json") {
    throw new UsageError(`--logs must be console or json, got "${logs}"`);
  }
  return {
    model: values.model,
    tasks: values.tasks,
    tasksDir: values["tasks-dir"],
    fewshot: wholeNumber("fewshot", values.fewshot ?? "0", 0),
    seed: wholeNumber("seed", values.seed ?? "42", 0),
    limit: values.limit === undefined ? undefined : wholeNumber("limit", values.limit, 1),
    tokenizer: values.tokenizer,
    maxLength: values["max-length"] === undefined
      ? undefined
      : wholeNumber("max-length", values["max-length"], 2),
    microBatch: wholeNumber("micro-batch", values["micro-batch"] ?? "8", 1),
    logs,
  };
}
