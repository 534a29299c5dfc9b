/**
 * Every command line's flags, declared once: the declaration ({@link CommandSpec}) parses the
 * arguments, reads the environment variable of each flag, suggests the flag meant when one is
 * misspelt, and generates the `--help` text, so no entry point writes its usage by hand and no
 * help text can fall out of step with its parser.
 *
 * Pure: the environment comes in as a lookup function, so tests pass a plain object.
 *
 * Conventions (docs/cli.md):
 * - `--name VALUE` or `--name=VALUE`; `-x VALUE` for the short flags Psyche has; `--` ends flags.
 * - Every flag but `--help` may also be set as `PSYCHE_NAME` (upper case, `-` as `_`); a flag on
 *   the command line wins. A boolean reads `1|true|yes` or `0|false|no`; a repeatable flag takes a
 *   comma-separated list.
 * - `-h`/`--help` on every command and subcommand.
 *
 * @example
 * ```ts
 * import { parseFlags } from "./flags.ts";
 * const spec = {
 *   usage: "deno task demo --state FILE",
 *   flags: { state: { type: "string", value: "FILE", description: "the run config" } },
 * } as const;
 * const parsed = parseFlags(spec, [], { env: { PSYCHE_STATE: "state.toml" } });
 * if (parsed.values.state !== "state.toml") throw new Error("the environment was not read");
 * ```
 *
 * @module
 */
import { UsageError } from "../common/mod.ts";

/** One flag: its kind, what it does, and how help shows it. */
export interface FlagSpec {
  /** A string takes a value; a boolean is present or not. */
  readonly type: "string" | "boolean";
  /** What the flag does, for the help text (one sentence, no trailing period). */
  readonly description: string;
  /** The value's placeholder in help, e.g. `FILE`, `HOST:PORT` (string flags; default `VALUE`). */
  readonly value?: string;
  /** One-letter alias (`-s`), only where Psyche has it. */
  readonly short?: string;
  /** May be given more than once; the values come back as an array. */
  readonly multiple?: boolean;
  /** Applied when neither the command line nor the environment gives the flag; shown in help. */
  readonly default?: string;
  /** Shown in help as the default when the parser computes it (`any free port`). */
  readonly defaultText?: string;
  /** Shown in help; the command's own parser enforces it (with its own message). */
  readonly required?: boolean;
}

/** A command (or subcommand): its usage lines, its flags and the text around them. */
export interface CommandSpec {
  /** Usage line(s), without the `Usage: ` prefix. */
  readonly usage: string | readonly string[];
  /** A paragraph after the usage saying what the command does. */
  readonly summary?: string;
  /** Every flag, by long name without `--`. `help` is added to every command. */
  readonly flags: Readonly<Record<string, FlagSpec>>;
  /** Names of the positional arguments the command takes, for help; none allowed when absent. */
  readonly positionals?: readonly { readonly name: string; readonly description: string }[];
  /** Text after the options: exit statuses, examples. */
  readonly footer?: string;
}

type ValueOf<F extends FlagSpec> = F extends { type: "boolean" }
  ? F extends { multiple: true } ? boolean[] : boolean
  : F extends { multiple: true } ? string[]
  : string;

/** The values of a command's flags, typed from its spec; absent when not given and no default. */
export type FlagValues<S extends CommandSpec> = {
  -readonly [K in keyof S["flags"]]?: ValueOf<S["flags"][K]>;
};

/** What {@link parseFlags} found. */
export interface ParsedFlags<S extends CommandSpec> {
  /** `-h` or `--help` was given: print {@link helpText} and exit 0. */
  readonly help: boolean;
  readonly values: FlagValues<S>;
  readonly positionals: string[];
  /** Flags whose value came from the environment, with the variable's name. */
  readonly fromEnv: ReadonlyMap<string, string>;
}

/** Looks up an environment variable; `Deno.env.get` at the edge, a plain object in tests. */
export type EnvLookup = ((name: string) => string | undefined) | Record<string, string>;

/** The environment variable of flag `--name`: `PSYCHE_NAME`, dashes as underscores. */
export function envName(flag: string): string {
  return `PSYCHE_${flag.toUpperCase().replaceAll("-", "_")}`;
}

const HELP: FlagSpec = { type: "boolean", short: "h", description: "show this help" };

function allFlags(spec: CommandSpec): Readonly<Record<string, FlagSpec>> {
  return { ...spec.flags, help: HELP };
}

/** Edit distance (insert, delete, substitute, swap neighbours) between two short words. */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/**
 * The candidate `word` most likely meant: the closest by edit distance when close enough (a
 * third of its length, at least 2), else one it is a prefix of; null when none fits.
 */
export function suggest(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const distance = editDistance(word, c);
    if (distance < bestDistance) [best, bestDistance] = [c, distance];
  }
  if (best !== null && bestDistance <= Math.max(2, Math.floor(word.length / 3))) return best;
  if (word.length >= 3) return candidates.find((c) => c.startsWith(word)) ?? null;
  return null;
}

function unknownFlag(flag: string, spec: CommandSpec): UsageError {
  const names = Object.keys(allFlags(spec));
  const guess = suggest(flag.replace(/^-+/, ""), names);
  const hint = guess === null ? "run with --help for the flags" : `did you mean --${guess}?`;
  return new UsageError(`unknown flag ${flag} (${hint})`);
}

function lookup(env: EnvLookup, name: string): string | undefined {
  return typeof env === "function" ? env(name) : env[name];
}

function envBoolean(name: string, text: string): boolean {
  const t = text.trim().toLowerCase();
  if (t === "1" || t === "true" || t === "yes") return true;
  if (t === "0" || t === "false" || t === "no" || t === "") return false;
  throw new UsageError(`${name} must be 1, true, yes, 0, false or no, found "${text}"`);
}

/**
 * Parses `argv` against `spec`, then fills flags not given from the environment, then from
 * their defaults. Throws {@link UsageError} for an unknown flag (suggesting the one meant), a
 * missing value, a value given to a boolean, or a positional argument the command takes none of.
 */
export function parseFlags<S extends CommandSpec>(
  spec: S,
  argv: readonly string[],
  options: { env?: EnvLookup } = {},
): ParsedFlags<S> {
  const flags = allFlags(spec);
  const byShort = new Map(
    Object.entries(flags).flatMap(([name, f]) => f.short === undefined ? [] : [[f.short, name]]),
  );
  const values: Record<string, string | boolean | string[] | boolean[]> = {};
  const positionals: string[] = [];
  const set = (name: string, value: string | boolean) => {
    if (flags[name].multiple) {
      values[name] = [...((values[name] ?? []) as (string | boolean)[]), value] as
        | string[]
        | boolean[];
    } else values[name] = value;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    let name: string | undefined;
    let inline: string | undefined;
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      name = arg.slice(2, eq < 0 ? undefined : eq);
      inline = eq < 0 ? undefined : arg.slice(eq + 1);
      if (!Object.hasOwn(flags, name)) throw unknownFlag(`--${name}`, spec);
    } else if (arg.startsWith("-") && arg.length > 1 && !/^-\d/.test(arg)) {
      name = byShort.get(arg[1]);
      if (name === undefined) throw unknownFlag(arg.slice(0, 2), spec);
      const rest = arg.slice(2);
      if (rest !== "") inline = rest.startsWith("=") ? rest.slice(1) : rest;
    } else {
      positionals.push(arg);
      continue;
    }
    const flag = flags[name];
    if (flag.type === "boolean") {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value, found "${inline}"`);
      set(name, true);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("--") && next.length > 2)) {
        const found = next === undefined ? "" : `, found the flag ${next}`;
        throw new UsageError(`--${name} needs a value (${flag.value ?? "VALUE"})${found}`);
      }
      value = next;
      i++;
    }
    set(name, value);
  }
  if (positionals.length > 0 && spec.positionals === undefined) {
    const first = positionals[0];
    throw first.startsWith("-") ? unknownFlag(first, spec) : new UsageError(
      `unexpected argument "${first}" (this command takes flags only; run with --help)`,
    );
  }
  const help = values.help === true;
  delete values.help;
  const fromEnv = new Map<string, string>();
  for (const [name, flag] of Object.entries(spec.flags)) {
    if (Object.hasOwn(values, name)) continue;
    const variable = envName(name);
    const text = options.env === undefined ? undefined : lookup(options.env, variable);
    if (text !== undefined) {
      fromEnv.set(name, variable);
      if (flag.type === "boolean") {
        const b = envBoolean(variable, text);
        values[name] = flag.multiple ? [b] : b;
      } else {
        values[name] = flag.multiple
          ? text.split(",").map((s) => s.trim()).filter((s) => s !== "")
          : text;
      }
      continue;
    }
    if (flag.default !== undefined) values[name] = flag.multiple ? [flag.default] : flag.default;
  }
  return { help, values: values as FlagValues<S>, positionals, fromEnv };
}

/**
 * Runs `check` (a command's own checks of the parsed values) and, when it throws a
 * {@link UsageError} about a flag whose value came from the environment, says so in the message.
 */
export function explainEnv<S extends CommandSpec, T>(parsed: ParsedFlags<S>, check: () => T): T {
  try {
    return check();
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    const sources = [...parsed.fromEnv].filter(([flag]) =>
      new RegExp(`--${flag}(?![\\w-])`).test(e.message)
    );
    if (sources.length === 0) throw e;
    const note = sources.map(([, variable]) => `${variable} is set in the environment`);
    throw new UsageError(`${e.message} (${note.join("; ")})`);
  }
}

const WIDTH = 100;
const FLAG_COLUMN = 34;

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split("\n")) {
    let line = "";
    for (const word of paragraph.split(" ")) {
      if (line !== "" && line.length + 1 + word.length > width) {
        lines.push(line);
        line = word;
      } else line = line === "" ? word : `${line} ${word}`;
    }
    lines.push(line);
  }
  return lines;
}

/** The left column of a flag's help line: `-s, --server-port P`. */
function flagColumn(name: string, flag: FlagSpec): string {
  const short = flag.short === undefined ? "    " : `-${flag.short}, `;
  const value = flag.type === "string" ? ` ${flag.value ?? "VALUE"}` : "";
  return `  ${short}--${name}${value}${flag.multiple ? " ..." : ""}`;
}

/** The description of a flag with its default, whether it is required, and its variable. */
function flagDescription(name: string, flag: FlagSpec): string {
  const notes: string[] = [];
  if (flag.required) notes.push("required");
  const fallback = flag.defaultText ?? flag.default;
  if (fallback !== undefined) notes.push(`default: ${fallback}`);
  if (flag.multiple) notes.push("repeatable");
  if (name !== "help") notes.push(`env: ${envName(name)}`);
  return notes.length === 0 ? flag.description : `${flag.description} [${notes.join("; ")}]`;
}

/** The `--help` text of a command: usage, summary, positionals, every flag, footer. */
export function helpText(spec: CommandSpec): string {
  const usage = typeof spec.usage === "string" ? [spec.usage] : spec.usage;
  const out = usage.map((line, i) => (i === 0 ? "Usage: " : "       ") + line);
  if (spec.summary !== undefined) out.push("", ...wrap(spec.summary, WIDTH));
  const table = (rows: [string, string][]) => {
    const width = Math.min(FLAG_COLUMN, Math.max(...rows.map(([left]) => left.length)) + 2);
    for (const [left, text] of rows) {
      const body = wrap(text, WIDTH - width);
      if (left.length + 2 > width) {
        out.push(left);
        out.push(...body.map((l) => " ".repeat(width) + l));
      } else {
        out.push(left.padEnd(width) + body[0], ...body.slice(1).map((l) => " ".repeat(width) + l));
      }
    }
  };
  if (spec.positionals !== undefined && spec.positionals.length > 0) {
    out.push("", "Arguments:");
    table(spec.positionals.map((p) => [`  ${p.name}`, p.description]));
  }
  out.push("", "Options:");
  const flags = allFlags(spec);
  table(Object.entries(flags).map(([name, f]) => [flagColumn(name, f), flagDescription(name, f)]));
  out.push(
    "",
    "Every option can also be set in the environment (env: above); a flag given on the command",
    "line wins over the environment.",
  );
  if (spec.footer !== undefined) out.push("", spec.footer);
  return out.join("\n");
}

/** The help of a program with subcommands: usage, one line per subcommand, where to look next. */
export function commandsHelp(
  program: string,
  commands: Readonly<Record<string, { readonly summary: string }>>,
  summary?: string,
): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  return [
    `Usage: ${program} <command> [options]`,
    ...(summary === undefined ? [] : ["", ...wrap(summary, WIDTH)]),
    "",
    "Commands:",
    ...Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    "",
    `Run \`${program} <command> --help\` for a command's options.`,
  ].join("\n");
}

/** The error for a subcommand that does not exist, suggesting the one meant. */
export function unknownCommand(name: string, commands: readonly string[]): UsageError {
  const guess = suggest(name, commands);
  const hint = guess === null ? `expected one of ${commands.join(", ")}` : `did you mean ${guess}?`;
  return new UsageError(`unknown command "${name}" (${hint})`);
}
