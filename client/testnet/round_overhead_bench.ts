/**
 * Round overhead of the networked client (issue 6): a real testnet (one coordinator and N
 * clients, each a process on 127.0.0.1) trains the tiny Llama (config/models/llama-tiny,
 * `Dummy` data, one sequence of 32 tokens per client per step, DisTrO) with 3 and then 8
 * clients, and reports per round the time from the last result to the next round's start
 * (method in round_overhead.ts), median and p90 over the rounds, and what one client sends and
 * receives per round: over p2p (results, gossip) and from the coordinator (states). As a
 * baseline from the same run: one coordinator request's round trip over loopback TCP (in this
 * process, as coordinator/server/server_bench.ts measures it).
 *
 * A script rather than a `deno bench` file: one sample is a whole multi-process run.
 *
 *     deno task bench-rounds [--rounds 20] [--clients 3,8] [--witness-time 0.1] [--train-time 30]
 *
 * For the scaling figures (docs/benchmarks.md, "Many peers"): `--clients 8,16`. With
 * `BENCH_ROUNDS_LOG=FILE` in the environment every process's lines are appended to FILE, to see
 * what a size that does not finish is doing.
 *
 * Every client is a witness (`witness_nodes = 0`) and the train timer is long, so rounds close
 * when the witnesses' reports reach quorum (opportunistic witnessing), not on a timeout;
 * rounds that the timer closed anyway are left out and counted. The witness window is 0.1 s
 * (`round_witness_time = 0.1`: the coordinator times it to the millisecond).
 *
 * @module
 */
import { type FlagValues, parseOrExit } from "../../cli/entry.ts";
import { connectTestBackend, startTestServer } from "../../tests/support/server_driver.ts";
import { Testnet } from "./launcher.ts";
import {
  type RoundTiming,
  roundTimings,
  type RoundTraffic,
  trafficPerRound,
} from "./round_overhead.ts";
import { EventWatcher, tinyRunFolder } from "../testing/testnet.ts";
import { quantile, UsageError } from "../../common/mod.ts";

/**
 * The default train timer (s): far above a step of the tiny model, so witnessing closes rounds.
 * Past 16 clients on 2 cores a round's exchange alone takes longer (`--train-time`).
 */
const DEFAULT_MAX_ROUND_TRAIN_TIME = 30;
/**
 * The default witness window (s). Short is safe on loopback: the window only has to let late
 * witness reports in after the quorum closed the round, and here a report arrives within a few ms
 * (docs/benchmarks.md, "Networked training", has the protocol's part). Deployments over the
 * internet should keep seconds (Psyche's example config uses 2 s).
 */
const DEFAULT_ROUND_WITNESS_TIME = 0.1;

/** Median and p90 of the request round trip (µs) over `n` requests on loopback. */
async function tcpRoundTrip(n: number): Promise<{ median: number; p90: number }> {
  // No rate limits: at the default 20 requests a second the limiter, not the wire, is measured.
  const server = startTestServer({ tickIntervalMs: 60_000, rateLimits: null });
  const backend = await connectTestBackend(server);
  const repo = { kind: "Hub" as const, repo: { repoId: "org/m", revision: null } };
  const samples: number[] = [];
  try {
    for (let i = 0; i < n + 200; i++) {
      const t0 = performance.now();
      // Answered with an Error frame (no run is going): a full request/response either way.
      await backend.sendCheckpoint(repo).catch(() => {});
      if (i >= 200) samples.push((performance.now() - t0) * 1000);
    }
  } finally {
    await backend.close();
    await server.close();
  }
  return { median: quantile(samples, 0.5), p90: quantile(samples, 0.9) };
}

/** Runs a testnet of `clients` clients until `rounds` rounds were measured (or time runs out). */
async function measure(
  clients: number,
  rounds: number,
  roundWitnessTime: number,
  maxRoundTrainTime: number,
  timeoutMs: number,
): Promise<ReturnType<typeof roundTimings> & { traffic: RoundTraffic[] }> {
  const config = await tinyRunFolder({
    runId: `bench-rounds-${clients}`,
    initMinClients: clients,
    minClients: 1,
    witnessNodes: 0,
    globalBatchSize: clients,
    warmupTime: 60,
    epochTime: 3600,
    maxRoundTrainTime,
    roundWitnessTime,
  });
  const watcher = new EventWatcher();
  const net = await Testnet.start({
    configPath: config,
    numClients: clients,
    write: Deno.env.get("BENCH_ROUNDS_LOG") === undefined
      ? null
      : (line) =>
        Deno.writeTextFileSync(Deno.env.get("BENCH_ROUNDS_LOG")!, line + "\n", { append: true }),
    onEvent: watcher.onEvent,
  });
  const options = { maxRoundTrainMs: maxRoundTrainTime * 1000 };
  try {
    // One more than asked: the first round after Warmup is dropped by the caller.
    const timings = await watcher.waitFor(
      `${clients} clients: ${rounds + 1} rounds measured`,
      () => {
        const done = roundTimings(watcher.events, options);
        return done.rounds.length > rounds ? done : null;
      },
      timeoutMs,
    );
    return { ...timings, traffic: trafficPerRound(watcher.events) };
  } finally {
    await net.stop();
    await Deno.remove(config, { recursive: true });
  }
}

const ms = (x: number) => `${x.toFixed(0)} ms`;

function row(clients: number, rounds: readonly RoundTiming[]): string {
  const stat = (pick: (r: RoundTiming) => number) => {
    const xs = rounds.map(pick);
    return `${ms(quantile(xs, 0.5))} / ${ms(quantile(xs, 0.9))}`;
  };
  return `| ${clients} | ${rounds.length} | ${stat((r) => r.toWitnessMs)} | ${
    stat((r) => r.witnessWindowMs)
  } | ${stat((r) => r.totalMs)} | ${stat((r) => r.trainPhaseMs)} |`;
}

const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;

/** Per client per round, medians over every client's rounds (the first left out). */
function trafficRow(clients: number, traffic: readonly RoundTraffic[]): string {
  const median = (pick: (t: RoundTraffic) => number | undefined) => {
    const xs = traffic.map(pick).filter((x): x is number => x !== undefined);
    return xs.length === 0 ? NaN : quantile(xs, 0.5);
  };
  const fromCoordinator = median((t) => t.coordinatorBytes);
  return `| ${clients} | ${traffic.length} | ${kb(median((t) => t.sentBytes))} | ${
    kb(median((t) => t.receivedBytes))
  } | ${median((t) => t.gossip).toFixed(0)} | ${kb(fromCoordinator)} | ${
    kb(fromCoordinator * clients)
  } |`;
}

/** The flags of `deno task bench-rounds`. */
export const BENCH_ROUNDS_SPEC = {
  usage: "deno task bench-rounds [--rounds N] [--clients 3,8] [--witness-time S] [--train-time S]",
  summary: "Round overhead of a real testnet (a coordinator and N client processes on " +
    "127.0.0.1 training the tiny Llama): per round, the time from the last result to the next " +
    "round's start, median and p90, against one coordinator round trip over loopback TCP.",
  flags: {
    rounds: { type: "string", value: "N", description: "rounds measured per size", default: "20" },
    clients: {
      type: "string",
      value: "N,N",
      description: "testnet sizes, comma-separated",
      default: "3,8",
    },
    "witness-time": {
      type: "string",
      value: "S",
      description: "round_witness_time in seconds (whole milliseconds)",
      default: String(DEFAULT_ROUND_WITNESS_TIME),
    },
    "train-time": {
      type: "string",
      value: "S",
      description: "max_round_train_time in whole seconds (rounds it closes are left out)",
      default: String(DEFAULT_MAX_ROUND_TRAIN_TIME),
    },
  },
} as const;

/** The checked options of `deno task bench-rounds`; {@link UsageError} names a bad flag. */
export function benchRoundsOptions(
  values: FlagValues<typeof BENCH_ROUNDS_SPEC>,
): { rounds: number; sizes: number[]; witnessTime: number; trainTime: number } {
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) {
    throw new UsageError(`--rounds must be a positive integer, found "${values.rounds}"`);
  }
  const sizes = (values.clients ?? "3,8").split(",").map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1)) {
    throw new UsageError(
      `--clients must be a list of positive integers, found "${values.clients}"`,
    );
  }
  const witnessTime = Number(values["witness-time"]);
  if (!(witnessTime > 0) || Math.round(witnessTime * 1000) / 1000 !== witnessTime) {
    throw new UsageError(
      `--witness-time must be positive seconds in whole milliseconds, found ` +
        `"${values["witness-time"]}"`,
    );
  }
  const trainTime = Number(values["train-time"]);
  if (!Number.isInteger(trainTime) || trainTime < 1) {
    throw new UsageError(
      `--train-time must be a positive whole number of seconds, found "${values["train-time"]}"`,
    );
  }
  return { rounds, sizes, witnessTime, trainTime };
}

if (import.meta.main) {
  const { rounds, sizes, witnessTime, trainTime } = parseOrExit(
    BENCH_ROUNDS_SPEC,
    (parsed) => benchRoundsOptions(parsed.values),
  );
  const tcp = await tcpRoundTrip(5000);
  console.log(
    `coordinator request round trip over loopback: median ${tcp.median.toFixed(0)} µs, ` +
      `p90 ${tcp.p90.toFixed(0)} µs`,
  );
  const lines = [
    "| clients | rounds | result → RoundWitness | witness window | result → next RoundTrain | RoundTrain |",
    "| ------: | -----: | --------------------: | -------------: | -----------------------: | ---------: |",
  ];
  const trafficLines = [
    "| clients | client rounds | p2p sent | p2p received | gossip messages | from the coordinator | coordinator's egress |",
    "| ------: | ------------: | -------: | -----------: | --------------: | -------------------: | -------------------: |",
  ];
  for (const clients of sizes) {
    const { rounds: measured, skipped, traffic } = await measure(
      clients,
      rounds,
      witnessTime,
      trainTime,
      // Startup (every client builds its pipelines) and the measured rounds at their slowest.
      600_000 + (rounds + 2) * (trainTime + witnessTime) * 1000,
    );
    // Drop the first round after Warmup (first-step shader compilation, model upload).
    const kept = measured.slice(1);
    for (const s of skipped) {
      console.log(`${clients} clients: left out step ${s.step}: ${s.reason}`);
    }
    console.log(`${clients} clients: ${JSON.stringify(kept)}`);
    lines.push(row(clients, kept));
    trafficLines.push(trafficRow(clients, traffic));
  }
  console.log(
    `\nmedian / p90 per round, round_witness_time = ${witnessTime}, max_round_train_time = ` +
      `${trainTime}\n`,
  );
  console.log(lines.join("\n"));
  console.log(`\nper client per round, medians (the coordinator's egress: per client x clients)\n`);
  console.log(trafficLines.join("\n"));
}
