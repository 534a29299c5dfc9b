/**
 * A refusal by one of the token programs (the mining pool, the treasurer) as the operator sees
 * it: the program's error name and code and its last log line, rather than the runtime's
 * `Custom(n)`. The coordinator's own refusals are named by the transaction sender.
 *
 * @module
 */
import { customErrorCode, TransactionFailedError } from "../rpc/mod.ts";

/** A program refused a command's transaction. */
export class ProgramCommandError extends Error {
  /** The program's name, as the message starts with it ("pool", "treasurer"). */
  readonly program: string;
  /** The error's name in the program's error list. */
  readonly errorName: string;
  readonly code: number;
  constructor(program: string, errorName: string, code: number, detail: string) {
    super(`${program}: ${errorName} (${code})${detail === "" ? "" : `: ${detail}`}`);
    this.name = "ProgramCommandError";
    this.program = program;
    this.errorName = errorName;
    this.code = code;
  }
}

/**
 * `e` as a {@linkcode ProgramCommandError} when it is a failed transaction whose custom code
 * `errorName` knows; anything else unchanged.
 */
export function namedProgramError(
  e: unknown,
  program: string,
  errorName: (code: number) => string | undefined,
): unknown {
  if (!(e instanceof TransactionFailedError)) return e;
  const code = customErrorCode(e.err);
  const name = code === null ? undefined : errorName(code);
  if (code === null || name === undefined) return e;
  const logs = e.logs.filter((l) => l.startsWith("Program log: "));
  const detail = logs.length === 0 ? "" : logs[logs.length - 1].slice("Program log: ".length);
  return new ProgramCommandError(program, name, code, detail);
}
