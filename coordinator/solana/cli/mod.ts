/**
 * `deno task solana`: the run operator's commands (create a run, update its config, pause,
 * resume, grant join rights, tick, show it) over a Solana RPC, and their argument parser; the
 * rule can-join applies (`canJoin`, reads.ts, a pure mirror of the program's join checks); and
 * the witness losses `deno task dashboard` reads from a run's transactions.
 *
 * @module
 */
export { parseSolanaArgs, type SolanaArgs, type SolanaCommand } from "./args.ts";
export { canJoin, type JoinRefusal, type JoinVerdict } from "./reads.ts";
export { readRun, runJson, RunNotFoundError, RunOperator, type RunUpdate } from "./operator.ts";
export {
  MAX_SEEN_SIGNATURES,
  newWitnessEvents,
  SIGNATURES_PER_POLL,
  type WitnessEvent,
  witnessEventsOf,
} from "./witness_losses.ts";
