/**
 * `deno task testnet --num-clients N --config-path DIR [options]`: a coordinator and N clients
 * on this machine (launcher.ts), with random kills when asked, until Ctrl-C, the coordinator
 * exiting, or a `--stop-after-*` limit; then a summary of the run (summary.ts).
 *
 * Exit codes: 0 stopped as asked with every client on the run's parameters; 1 the coordinator
 * failed or exited by itself, every client exited by itself, no client applied a step, or a
 * client diverged silently or without resyncing (verdict.ts: a line says which); 2 usage.
 *
 * @module
 */
import "../../net/p2p/mod.ts";
import { parseTestnetArgs, TESTNET_SPEC, TESTNET_USAGE, type TestnetArgs } from "./args.ts";
import { Testnet } from "./launcher.ts";
import { formatSummary, type RunSummary, SummaryCollector, summaryFields } from "./summary.ts";
import { runProblems, type StopReason } from "./verdict.ts";
import { denoEnv, type EnvLookup, EXIT_OK, EXIT_USAGE, usageLines } from "../../cli/entry.ts";
import { type LogLevel, logLine, onStopRequest } from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";

export { EXIT_OK, EXIT_USAGE };

/** Exit code: the run failed (the coordinator did not start, or a problem of verdict.ts). */
export const EXIT_FAILURE = 1;

/** How a testnet run ended. */
export interface TestnetOutcome {
  readonly reason: StopReason;
  readonly summary: RunSummary;
  /** What went wrong (verdict.ts `runProblems`); empty when the run went as it should. */
  readonly problems: readonly string[];
  /** The exit status this outcome gives: {@link EXIT_OK} or {@link EXIT_FAILURE}. */
  readonly exitCode: number;
}

/**
 * Runs a testnet until `signal` aborts, the coordinator exits, or a `--stop-after-*` limit;
 * always stops every child. `write` receives the merged output and the summary lines.
 */
export async function runTestnet(
  args: TestnetArgs,
  io: { write: (line: string) => void; signal?: AbortSignal; colour?: boolean },
): Promise<TestnetOutcome> {
  const collector = new SummaryCollector();
  const stop = new AbortController();
  let reason: TestnetOutcome["reason"] = "signal";
  const finish = (why: TestnetOutcome["reason"]) => {
    if (stop.signal.aborted) return;
    reason = why;
    stop.abort();
  };
  io.signal?.addEventListener("abort", () => finish("signal"), { once: true });
  let testnet: Testnet | null = null;
  testnet = await Testnet.start({
    configPath: args.configPath,
    numClients: args.numClients,
    logs: args.logs,
    write: io.write,
    colour: io.colour,
    checkpointDir: args.checkpointDir,
    keepTemp: args.keepTemp,
    calibrate: args.calibrate,
    dashboardPort: args.dashboardPort,
    onClientExit: () => {
      // Checked after the exit is recorded (a restart in progress is not idle).
      queueMicrotask(() => {
        if (testnet?.idle()) finish("clients-exited");
      });
    },
    onEvent: (label, kind, event) => {
      if (kind === "testnet") return;
      collector.add(label, kind, event);
      if (args.stopAfterEpochs !== null && collector.epochs >= args.stopAfterEpochs) {
        finish("epochs");
      }
    },
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    if (args.stopAfterSeconds !== null) {
      timer = setTimeout(() => finish("time"), args.stopAfterSeconds * 1000);
    }
    testnet.coordinatorExited.then(() => finish("coordinator-exited"));
    const chaos = args.randomKillNum > 0
      ? testnet.randomKills({
        count: args.randomKillNum,
        intervalMs: args.randomKillIntervalS * 1000,
        signal: stop.signal,
      })
      : Promise.resolve();
    if (!stop.signal.aborted) {
      await new Promise((resolve) =>
        stop.signal.addEventListener("abort", resolve, { once: true })
      );
    }
    await chaos;
  } finally {
    clearTimeout(timer);
    await testnet.stop();
  }
  const summary = collector.summary();
  const where = args.keepTemp
    ? ` (files kept in ${testnet.tempDir})`
    : args.checkpointDir === null
    ? " (temporary folder removed, checkpoints with it: keep them with --checkpoint-dir)"
    : "";
  const problems = runProblems(reason, summary);
  if (args.logs === "json") {
    // The same schema as every other line (docs/logs.md), so a log reader needs no other parser.
    const emit = (level: LogLevel, event: string, fields: Record<string, unknown>) =>
      io.write(logLine(Date.now(), level, event, { ...fields, process: "testnet" }));
    emit("info", "stopped", {
      reason,
      temp_dir: testnet.tempDir,
      temp_kept: args.keepTemp,
      checkpoint_dir: args.checkpointDir,
    });
    emit("info", "summary", summaryFields(summary));
    for (const problem of problems) emit("error", "failed", { problem });
  } else {
    io.write(`--- testnet stopped: ${reason}${where}`);
    for (const line of formatSummary(summary)) io.write(`--- ${line}`);
    for (const problem of problems) io.write(`--- FAILED: ${problem}`);
  }
  return { reason, summary, problems, exitCode: problems.length === 0 ? EXIT_OK : EXIT_FAILURE };
}

/**
 * Runs `deno task testnet` with `argv`, `env` filling flags not given (`PSYCHE_*`); resolves
 * to the exit code.
 */
export async function main(argv: readonly string[], env: EnvLookup = denoEnv): Promise<number> {
  let args: TestnetArgs | null;
  try {
    args = parseTestnetArgs(argv, env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    console.error(`testnet: ${e.message}\n\n${usageLines(TESTNET_SPEC)}`);
    return EXIT_USAGE;
  }
  if (args === null) {
    console.log(TESTNET_USAGE);
    return EXIT_OK;
  }
  return await runUntilSignal(args);
}

/** Runs `args` with SIGINT/SIGTERM stopping it; resolves to the exit code. */
export async function runUntilSignal(args: TestnetArgs): Promise<number> {
  try {
    return (await runWithSignals(args)).exitCode;
  } catch (e) {
    console.error(`testnet: ${(e as Error).message}`);
    return EXIT_FAILURE;
  }
}

/** Runs `args`, printing to stdout, with SIGINT/SIGTERM stopping it; resolves to the outcome. */
export async function runWithSignals(args: TestnetArgs): Promise<TestnetOutcome> {
  const controller = new AbortController();
  const unsubscribe = onStopRequest(() => controller.abort());
  try {
    return await runTestnet(args, {
      write: (line) => console.log(line),
      signal: controller.signal,
    });
  } finally {
    unsubscribe();
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
