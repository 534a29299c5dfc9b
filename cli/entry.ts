/**
 * What the command-line entry points share before they run: parse the arguments, or print the
 * usage and exit.
 *
 * @module
 */

/** Exit status of every command that did what it was asked. */
export const EXIT_OK = 0;
/** Exit status of every command given a bad command line. */
export const EXIT_USAGE = 2;

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
