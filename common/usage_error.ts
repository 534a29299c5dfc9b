/**
 * The one error of a bad command line. Every command's argument parser throws it with a
 * message that names the flag and what is wrong; the entry points print that message (and the
 * usage) and exit with status 2 (cli/entry.ts `EXIT_USAGE`).
 *
 * @example
 * ```ts
 * import { UsageError } from "./usage_error.ts";
 * const e = new UsageError("--steps must be a positive integer, found 0");
 * if (!(e instanceof Error) || e.name !== "UsageError") throw new Error("not a usage error");
 * ```
 *
 * @module
 */

/** A command line that cannot be run; the message names the flag and what is wrong. */
export class UsageError extends Error {
  /** Always `"UsageError"`. */
  override name = "UsageError";
}
