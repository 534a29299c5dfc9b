/**
 * The error type of every configuration reader (run config, data-server config): a list of
 * problems, each naming the key path, the value found and the rule it broke, so one run of
 * `validate-config` shows the operator everything to fix instead of one mistake at a time.
 *
 * Values and keys are rendered with every control and bidi character escaped
 * (common/printable.ts): a config file must not be able to rewrite the operator's terminal.
 *
 * @module
 */
import { quoteForTerminal } from "./printable.ts";

/**
 * One problem in a configuration file.
 *
 * `path` is the dotted TOML key path (`config.warmup_time`,
 * `model.LLM.lr_schedule.Cosine.base_lr`); `found` is the offending value rendered as TOML,
 * or `null` when the key is missing or the problem is not about one value.
 */
export interface ConfigIssue {
  /** Dotted key path, `(toml)` for syntax errors. */
  path: string;
  /** The value found, rendered as TOML; `null` when missing or not about one value. */
  found: string | null;
  /** The rule broken or what was expected, e.g. `must be > 0`. */
  message: string;
}

/**
 * Renders one issue as `path = found: message` (or `path: message` when nothing was found).
 *
 * @example
 * ```ts
 * import { formatIssue } from "./config_error.ts";
 * const line = formatIssue({ path: "config.epoch_time", found: "0", message: "must be > 0" });
 * if (line !== "config.epoch_time = 0: must be > 0") throw new Error(line);
 * ```
 */
export function formatIssue(issue: ConfigIssue): string {
  return issue.found === null
    ? `${issue.path}: ${issue.message}`
    : `${issue.path} = ${issue.found}: ${issue.message}`;
}

/**
 * Thrown by the configuration parsers with every problem they found (never just the first).
 * `source` names the file (or other origin) the text came from.
 */
export class ConfigError extends Error {
  /** Where the configuration came from, e.g. a file path. */
  readonly source: string;
  /** Every problem found, in file order as far as the reader could tell. */
  readonly issues: readonly ConfigIssue[];

  /** Builds the error; the message lists every issue, one per line. */
  constructor(source: string, issues: readonly ConfigIssue[]) {
    const count = issues.length === 1 ? "1 problem" : `${issues.length} problems`;
    const lines = issues.map((issue) => `  - ${formatIssue(issue)}`);
    super(`${source}: ${count}:\n${lines.join("\n")}`);
    this.name = "ConfigError";
    this.source = source;
    this.issues = issues;
  }
}

const MAX_RENDERED_CHARS = 80;

/**
 * Renders a parsed TOML value for an error message: strings quoted, arrays and tables
 * abbreviated so one bad key never floods the output.
 */
export function renderValue(value: unknown): string {
  const text = renderUnbounded(value);
  return text.length > MAX_RENDERED_CHARS ? `${text.slice(0, MAX_RENDERED_CHARS - 3)}...` : text;
}

function renderUnbounded(value: unknown): string {
  if (typeof value === "string") return quoteForTerminal(value);
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint") {
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map(renderUnbounded).join(", ")}]`;
  if (value instanceof Date) return value.toISOString();
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    return keys.length === 0 ? "{}" : `{ ${keys.map(renderKey).join(", ")} }`;
  }
  return String(value);
}

/** A table key as TOML writes it: bare when it can be, else quoted with every escape. */
export function renderKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : quoteForTerminal(key);
}

/** Names the TOML type of a parsed value, for "expected X, found Y" messages. */
export function tomlTypeName(value: unknown): string {
  if (typeof value === "string") return "a string";
  if (typeof value === "boolean") return "a boolean";
  if (typeof value === "bigint") return "an integer";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a float";
  if (Array.isArray(value)) return "an array";
  if (value instanceof Date) return "a date";
  if (value !== null && typeof value === "object") return "a table";
  return typeof value;
}
