/**
 * The multiple-choice tasks, as lm-evaluation-harness frames them: where each task's published
 * files live on the Hub, which split is scored and which one lends few-shot examples, and how a
 * row of those files becomes a {@link Document} (a context, the choices, the right answer).
 *
 * Prompts follow lm-evaluation-harness's task files, which is what published scores mean;
 * Psyche's own tasks differ in small ways (PIQA's prompt, BoolQ's choice order) and
 * docs/using-the-model.md lists them. Pure: rows come in as plain objects.
 *
 * @module
 */
import { EvalDataError } from "./errors.ts";

/** One row of a task's files (a parquet row or a JSON line). */
export type Row = Readonly<Record<string, unknown>>;

/** One question: the text before the answer, the answers to choose from, and the right one. */
export interface Document {
  /** The prompt, ending where an answer begins (no trailing delimiter). */
  readonly context: string;
  /** The candidate continuations, without the delimiter that joins them to the context. */
  readonly choices: readonly string[];
  /** Index of the right choice. */
  readonly answer: number;
  /** Text put before the few-shot examples (MMLU names the subject there). */
  readonly description?: string;
}

/** A task: its files, its splits and its framing. */
export interface Task {
  /** The name used on the command line and in reports (`hellaswag`). */
  readonly name: string;
  /** The Hub dataset holding its files. */
  readonly repo: string;
  /** The dataset configuration (a folder of the repo), when it has several. */
  readonly subset?: string;
  /** The split that is scored. */
  readonly split: string;
  /** The split few-shot examples are drawn from. */
  readonly fewshotSplit: string;
  /** Whether the task reports `acc_norm` (log-likelihood divided by the choice's length). */
  readonly accNorm: boolean;
  /** Reads one row; throws {@link EvalDataError} naming the field when the row is malformed. */
  toDocument(row: Row): Document;
}

/** What joins a context to a choice (lm-evaluation-harness's `target_delimiter`). */
export const TARGET_DELIMITER = " ";
/** What separates few-shot examples from each other and from the question. */
export const FEWSHOT_DELIMITER = "\n\n";

function field(row: Row, name: string): unknown {
  if (!(name in row)) throw new EvalDataError(`the row has no "${name}" field`);
  return row[name];
}

function text(row: Row, name: string): string {
  const v = field(row, name);
  if (typeof v !== "string") {
    throw new EvalDataError(`"${name}" should be text, found ${describe(v)}`);
  }
  return v;
}

function texts(v: unknown, name: string): string[] {
  if (!Array.isArray(v) || v.length < 2 || v.some((s) => typeof s !== "string")) {
    throw new EvalDataError(
      `"${name}" should be a list of at least two texts, found ${describe(v)}`,
    );
  }
  return v as string[];
}

function index(v: unknown, name: string, count: number): number {
  const n = typeof v === "bigint" ? Number(v) : typeof v === "string" && /^\d+$/.test(v) ? +v : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0 || n >= count) {
    throw new EvalDataError(
      `"${name}" should be an answer index below ${count}, found ${describe(v)}`,
    );
  }
  return n;
}

/** `{text: [...], label: [...]}` choices with an `answerKey` naming one label (ARC, OpenBookQA). */
function labelledChoices(row: Row, keyField: string): { choices: string[]; answer: number } {
  const group = field(row, "choices");
  if (group === null || typeof group !== "object" || Array.isArray(group)) {
    throw new EvalDataError(`"choices" should be {text, label}, found ${describe(group)}`);
  }
  const g = group as Record<string, unknown>;
  const choices = texts(g.text, "choices.text");
  const labels = texts(g.label, "choices.label");
  if (labels.length !== choices.length) {
    throw new EvalDataError(
      `"choices" has ${choices.length} texts but ${labels.length} labels`,
    );
  }
  const key = text(row, keyField).trim();
  const answer = labels.indexOf(key);
  if (answer < 0) {
    throw new EvalDataError(`"${keyField}" is "${key}", not one of the labels ${labels.join(",")}`);
  }
  return { choices, answer };
}

function describe(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return `a list of ${v.length}`;
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v);
  return typeof v === "object" ? "an object" : `${typeof v} ${String(v)}`;
}

/** HellaSwag's cleanup of WikiHow text: `[title]` markers become sentence ends, tags vanish. */
export function hellaswagPreprocess(s: string): string {
  return s.trim().replaceAll(" [title]", ". ").replace(/\[.*?\]/g, "").replaceAll("  ", " ");
}

/** Python's `str.capitalize`, which the harness calls: the first letter up, the rest down. */
function capitalize(s: string): string {
  return s.length === 0 ? s : s[0].toUpperCase() + s.slice(1).toLowerCase();
}

const hellaswag: Task = {
  name: "hellaswag",
  repo: "Rowan/hellaswag",
  split: "validation",
  fewshotSplit: "train",
  accNorm: true,
  toDocument(row) {
    const context = hellaswagPreprocess(
      `${text(row, "activity_label")}: ${text(row, "ctx_a")} ${capitalize(text(row, "ctx_b"))}`,
    );
    const choices = texts(field(row, "endings"), "endings").map(hellaswagPreprocess);
    return { context, choices, answer: index(field(row, "label"), "label", choices.length) };
  },
};

function arc(name: string, subset: string): Task {
  return {
    name,
    repo: "allenai/ai2_arc",
    subset,
    split: "test",
    fewshotSplit: "train",
    accNorm: true,
    toDocument(row) {
      return {
        context: `Question: ${text(row, "question")}\nAnswer:`,
        ...labelledChoices(row, "answerKey"),
      };
    },
  };
}

const piqa: Task = {
  name: "piqa",
  repo: "ybisk/piqa",
  split: "validation",
  fewshotSplit: "train",
  accNorm: true,
  toDocument(row) {
    const choices = [text(row, "sol1"), text(row, "sol2")];
    return {
      context: `Question: ${text(row, "goal")}\nAnswer:`,
      choices,
      answer: index(field(row, "label"), "label", 2),
    };
  },
};

const boolq: Task = {
  name: "boolq",
  repo: "google/boolq",
  split: "validation",
  fewshotSplit: "train",
  accNorm: false,
  toDocument(row) {
    const answer = field(row, "answer");
    if (typeof answer !== "boolean") {
      throw new EvalDataError(`"answer" should be true or false, found ${describe(answer)}`);
    }
    return {
      context: `${text(row, "passage")}\nQuestion: ${text(row, "question")}?\nAnswer:`,
      choices: ["no", "yes"],
      answer: answer ? 1 : 0,
    };
  },
};

const openbookqa: Task = {
  name: "openbookqa",
  repo: "allenai/openbookqa",
  subset: "main",
  split: "test",
  fewshotSplit: "train",
  accNorm: true,
  toDocument(row) {
    return { context: text(row, "question_stem"), ...labelledChoices(row, "answerKey") };
  },
};

const LETTERS = ["A", "B", "C", "D"];

const mmlu: Task = {
  name: "mmlu",
  repo: "cais/mmlu",
  subset: "all",
  split: "test",
  fewshotSplit: "dev",
  accNorm: false,
  toDocument(row) {
    const options = texts(field(row, "choices"), "choices");
    if (options.length !== 4) {
      throw new EvalDataError(`"choices" should hold 4 options, found ${options.length}`);
    }
    const subject = text(row, "subject").replaceAll("_", " ");
    const lines = options.map((o, i) => `${LETTERS[i]}. ${o}`).join("\n");
    return {
      context: `${text(row, "question").trim()}\n${lines}\nAnswer:`,
      choices: LETTERS,
      answer: index(field(row, "answer"), "answer", 4),
      description: `The following are multiple choice questions (with answers) about ${subject}.` +
        FEWSHOT_DELIMITER,
    };
  },
};

/** Every task, by name. */
export const TASKS: ReadonlyMap<string, Task> = new Map(
  [
    hellaswag,
    arc("arc_easy", "ARC-Easy"),
    arc("arc_challenge", "ARC-Challenge"),
    piqa,
    boolq,
    openbookqa,
    mmlu,
  ].map((t) => [t.name, t]),
);

/**
 * The tasks of a comma-separated list (`hellaswag,arc_easy`), in order, each once.
 * Throws {@link EvalDataError} naming an unknown task and listing the known ones.
 */
export function tasksNamed(list: string): Task[] {
  const names = list.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
  if (names.length === 0) throw new EvalDataError("no task named (e.g. hellaswag,arc_easy)");
  const out: Task[] = [];
  for (const name of names) {
    const task = TASKS.get(name.toLowerCase());
    if (task === undefined) {
      throw new EvalDataError(`unknown task "${name}" (known: ${[...TASKS.keys()].join(", ")})`);
    }
    if (!out.includes(task)) out.push(task);
  }
  return out;
}
