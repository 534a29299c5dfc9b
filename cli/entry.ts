/**
 * What the command-line entry points share: the exit statuses, the file system and console a
 * command may touch ({@link CliIo}, which tests replace), and parsing the arguments or printing
 * the usage and exiting.
 *
 * @module
 */

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
 * usage to stderr, or with {@link EXIT_OK} after printing the usage to stdout when it returns `"help"`.
 */
export function parseArgsOrExit<T>(
  parse: (argv: string[]) => T | "help",
  usage: string,
  argv: string[] = Deno.args,
): T {
  let parsed: T | "help";
  try {
    parsed = parse(argv);
  } catch (e) {
    console.error(`${(e as Error).message}\n\n${usage}`);
    Deno.exit(EXIT_USAGE);
  }
  if (parsed === "help") {
    console.log(usage);
    Deno.exit(EXIT_OK);
  }
  return parsed as T;
}
