/**
 * Runs `deno task solana` in-process for the CLI tests: the same `main`, its lines collected.
 *
 * @module
 */
import { main } from "../main.ts";

/** What one command did: its exit code, and its stdout and stderr lines joined. */
export interface SolanaRun {
  code: number;
  out: string;
  err: string;
}

/** Runs `deno task solana` in-process; returns exit code, stdout and stderr. */
export async function solana(argv: string[]): Promise<SolanaRun> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { write: (l) => out.push(l), error: (l) => err.push(l) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}
