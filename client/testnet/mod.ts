/**
 * The local testnet: a coordinator and N training clients as child processes on this machine
 * (`deno task testnet`), the demo built on it (`deno task demo`), and the pieces tests use to
 * drive real runs: {@link Testnet} (start, add, kill, restart, stop) and the run summary.
 *
 * @example
 * ```ts ignore
 * import { Testnet } from "./client/testnet/mod.ts";
 * await using net = await Testnet.start({
 *   configPath: "config/llama-tiny", numClients: 3, logs: "json", write: null,
 *   onEvent: (label, kind, event) => console.log(label, kind, event.event),
 * });
 * await net.kill("client-2");
 * ```
 *
 * @module
 */
export {
  parseTestnetArgs,
  TESTNET_LOG_FORMATS,
  TESTNET_USAGE,
  type TestnetArgs,
  type TestnetLogFormat,
} from "./args.ts";
export { ChildProcess, forEachLine } from "./child.ts";
export {
  clientMultiaddr,
  freePort,
  freePorts,
  REPO_ROOT,
  Testnet,
  type TestnetOptions,
} from "./launcher.ts";
export { main, runTestnet, runUntilSignal, type TestnetOutcome } from "./main.ts";
export {
  colourFor,
  formatLine,
  type LineFormat,
  PALETTE,
  parseEventLine,
  type ProcessKind,
  renderEvent,
} from "./output.ts";
export { type PreparedRunConfig, prepareRunConfig } from "./run_config.ts";
export {
  describeDivergence,
  formatSummary,
  lossTrend,
  type RoundTotals,
  type RunSummary,
  SummaryCollector,
} from "./summary.ts";
export {
  type Agreement,
  type AgreementEntry,
  compareDigests,
  type Divergence,
  type StepDisagreement,
  stepRanges,
} from "./agreement.ts";
export { runProblems, type StopReason } from "./verdict.ts";
export { type HeldOutLoss, heldOutLoss, type HeldOutOptions } from "./held_out.ts";
export {
  describeEjections,
  type Ejection,
  type Outcome,
  runScenario,
  type Scenario,
} from "./attacked_run.ts";
