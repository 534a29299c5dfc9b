/**
 * What the command-line entry points share: the exit statuses, the file system and console a
 * command may touch ({@link CliIo}, which tests replace), and parsing the arguments or printing
 * the usage and exiting. Flags are declared once in a {@link CommandSpec} (cli/flags.ts), which
 * parses them, reads their environment variables and writes the help. A long-running command
 * stops on SIGINT, SIGTERM or its parent's death ({@link onStopRequest}, cli/stop_request.ts).
 *
 * @module
 */
import { UsageError } from "../common/mod.ts";
import { type CommandSpec, explainEnv, helpText, type ParsedFlags, parseFlags } from "./flags.ts";

export {
  commandsHelp,
  type CommandSpec,
  editDistance,
  type EnvLookup,
  envName,
  explainEnv,
  type FlagSpec,
  type FlagValues,
  helpText,
  type ParsedFlags,
  parseFlags,
  suggest,
  unknownCommand,
} from "./flags.ts";
export {
  fromSnakeCase,
  LOG_LEVELS,
  type LogLevel,
  logLine,
  SNAKE_CASE,
  snakeCase,
} from "./log_line.ts";
export {
  LIFELINE_ENV,
  lifelineSpawnOptions,
  onStopRequest,
  type StopReason,
} from "./stop_request.ts";

/** Exit status of every command that did what it was asked. */
export const EXIT_OK = 0;
/** Exit status of every command given a bad command line. */
export const EXIT_USAGE = 2;
/** Exit status of a command whose input (a config, a file) breaks a rule. */
export const EXIT_INVALID = 1;

/** What a CLI command may touch; tests pass their own to capture output. */
export interface CliIo {
  /** Reads a whole UTF-8 file; rejects when it cannot (missing, a directory, no access). */
  readTextFile(path: string): Promise<string>;
  /** Whether `path` is an existing directory. */
  isDirectory(path: string): Promise<boolean>;
  /** Writes one line to standard output. */
  out(line: string): void;
  /** Writes one line to standard error. */
  err(line: string): void;
}

/** {@link CliIo} over the real file system and console. */
export const denoIo: CliIo = {
  readTextFile: (path) => Deno.readTextFile(path),
  isDirectory: async (path) => {
    try {
      return (await Deno.stat(path)).isDirectory;
    } catch {
      return false;
    }
  },
  out: (line) => console.log(line),
  err: (line) => console.error(line),
};

/**
 * `parse(argv)`, or exits: with {@link EXIT_USAGE} after printing the parser's error and the
 * usage to stderr, or with {@link EXIT_OK} after printing the usage to stdout when it returns
 * `"help"`. Given a {@link CommandSpec} instead of a usage text, help is its generated help and
 * an error is followed by the usage lines only.
 */
export function parseArgsOrExit<T>(
  parse: (argv: string[]) => T | "help",
  usage: string | CommandSpec,
  argv: string[] = Deno.args,
): T {
  let parsed: T | "help";
  try {
    parsed = parse(argv);
  } catch (e) {
    if (typeof usage === "string") console.error(`${(e as Error).message}\n\n${usage}`);
    else console.error(`error: ${(e as Error).message}\n\n${usageLines(usage)}`);
    Deno.exit(EXIT_USAGE);
  }
  if (parsed === "help") {
    console.log(typeof usage === "string" ? usage : helpText(usage));
    Deno.exit(EXIT_OK);
  }
  return parsed as T;
}

/**
 * The process environment as flags read it: only `PSYCHE_*` variables (tasks grant
 * `--allow-env=PSYCHE_*`), and nothing when the permission is missing.
 */
export function denoEnv(name: string): string | undefined {
  if (!name.startsWith("PSYCHE_")) return undefined;
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/**
 * Parses `argv` against `spec` and hands the flags to `build` (the command's own checks), or
 * exits: with {@link EXIT_OK} after printing the generated help for `-h`/`--help`, or with
 * {@link EXIT_USAGE} after printing the {@link UsageError} (naming the environment variable
 * when the bad value came from one) and the usage lines.
 */
export function parseOrExit<S extends CommandSpec, T>(
  spec: S,
  build: (parsed: ParsedFlags<S>) => T,
  options: { argv?: readonly string[]; env?: (name: string) => string | undefined } = {},
): T {
  const argv = options.argv ?? Deno.args;
  try {
    const parsed = parseFlags(spec, argv, { env: options.env ?? denoEnv });
    if (parsed.help) {
      console.log(helpText(spec));
      Deno.exit(EXIT_OK);
    }
    return explainEnv(parsed, () => build(parsed));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`error: ${e.message}\n\n${usageLines(spec)}`);
    Deno.exit(EXIT_USAGE);
  }
}

/** The usage lines of `spec` and a pointer to `--help`. */
export function usageLines(spec: CommandSpec): string {
  const usage = typeof spec.usage === "string" ? [spec.usage] : spec.usage;
  return [
    ...usage.map((line, i) => (i === 0 ? "Usage: " : "       ") + line),
    "",
    "Run with --help for every option.",
  ].join("\n");
}
