/**
 * `deno task solana`: the run operator's commands (create a run, update its config, pause,
 * resume, grant join rights, tick, show it) over a Solana RPC, and their argument parser.
 *
 * @module
 */
export { parseSolanaArgs, type SolanaArgs, type SolanaCommand } from "./args.ts";
export { readRun, runJson, RunNotFoundError, RunOperator, type RunUpdate } from "./operator.ts";
