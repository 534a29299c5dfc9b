/**
 * How the TCP coordinator's cost grows with the run's size: a real server on 127.0.0.1 and N
 * scripted clients (tests/support/server_driver.ts: each joins, reports its warmup and, when
 * elected, its witness report at once, over its own TCP connection; no training, so rounds go
 * as fast as the coordinator and the reports allow). Per size it measures, over a number of
 * rounds after the first: the round time, and the bytes one client reads from the coordinator
 * per round (states and answers; the coordinator's egress is that times N). Each size runs
 * three times in the same process: as the server runs now (changes that do not move the run
 * batched, `STATE_BATCH_MS`, and states sent as deltas); batched but every state whole; and,
 * as the baseline, every change pushed at once and whole (the server before both).
 *
 * A script rather than a `deno bench` file: one sample is a whole run of many connections.
 *
 *     deno task bench-coordinator-scale [--clients 8,16,32,64,128,256] [--rounds 10]
 *
 * @module
 */
import { type FlagValues, parseOrExit } from "../../cli/entry.ts";
import { generateIdentity } from "../../net/mod.ts";
import { quantile, UsageError } from "../../common/mod.ts";
import { TcpBackend } from "../../client/backend/mod.ts";
import { ScriptedClient } from "../../tests/support/server_driver.ts";
import { testConfig, testModel } from "../../tests/support/coordinator_fixtures.ts";
import { createCoordinator } from "../core/mod.ts";
import { CoordinatorHost } from "./host.ts";
import { startCoordinatorServer, STATE_BATCH_MS } from "./server.ts";

/** What one run of `clients` clients measured. */
interface Measured {
  readonly clients: number;
  readonly batchMs: number;
  readonly deltas: boolean;
  readonly rounds: number;
  /** Median round time, ms. */
  readonly roundMs: number;
  /** Median over clients of bytes read from the coordinator per round. */
  readonly bytesPerClientRound: number;
  /** Witness reports refused as late (their round had ended) or sent twice, over the run. */
  readonly lateReports: number;
}

/** Runs `clients` scripted clients until `rounds` rounds (after the first) were completed. */
async function measure(
  clients: number,
  rounds: number,
  mode: { batchMs: number; deltas: boolean },
): Promise<Measured> {
  const { batchMs, deltas } = mode;
  const runId = `scale-${clients}`;
  const state = createCoordinator({
    runId,
    config: testConfig({
      initMinClients: clients,
      minClients: 1,
      maxClients: 256,
      witnessNodes: 0,
      waitingForMembersExtraTime: 0.2,
      warmupTime: 30,
      maxRoundTrainTime: 30,
      roundWitnessTime: 1,
      epochTime: 3600,
      cooldownTime: 1,
      totalSteps: 100_000,
      globalBatchSizeStart: clients,
      globalBatchSizeEnd: clients,
    }),
    model: testModel({ coldStartWarmupSteps: 0 }),
    now: Date.now() / 1000,
  });
  const host = new CoordinatorHost({ state, withdrawOnDisconnect: true });
  const server = startCoordinatorServer({
    host,
    hostname: "127.0.0.1",
    rateLimits: null,
    maxConnectionsPerAddress: clients + 8,
    stateBatchMs: batchMs,
    stateDeltas: deltas,
  });
  const scripted: ScriptedClient[] = [];
  try {
    for (let i = 0; i < clients; i++) {
      const backend = await TcpBackend.connect({
        address: server.address,
        runId,
        identity: generateIdentity(),
      });
      // Random bloom keys, as real clients draw them: no two reports share their bits.
      const client = new ScriptedClient(backend, { randomBloomKeys: true });
      scripted.push(client);
      client.start();
      await backend.join();
    }
    // Round starts as the first client sees them: (time, bytes each client had read).
    const watcher = scripted[0];
    const starts: { atMs: number; bytes: number[] }[] = [];
    let lastStep = -1;
    await watcher.waitFor(
      (s) => {
        if (s.runState === "RoundTrain" && s.progress.step !== lastStep) {
          lastStep = s.progress.step;
          starts.push({
            atMs: performance.now(),
            bytes: scripted.map((c) => c.backend.receivedBytes ?? 0),
          });
        }
        return starts.length >= rounds + 2;
      },
      600_000,
      `${rounds + 2} rounds of ${clients} clients`,
    );
    const roundMs: number[] = [];
    const perClient: number[] = [];
    for (let r = 2; r < starts.length; r++) {
      roundMs.push(starts[r].atMs - starts[r - 1].atMs);
      for (let c = 0; c < clients; c++) perClient.push(starts[r].bytes[c] - starts[r - 1].bytes[c]);
    }
    // A witness report that reaches the coordinator after its round ended (the quorum moved on)
    // is refused as late (two rounds on, for a proof of the wrong round), and one a reconnected
    // backend sent again as a duplicate: late, not broken. Anything else is a failure.
    const errors = scripted.flatMap((c) => c.errors);
    const late = errors.filter((e) =>
      /late: witness proof|does not verify for round|DuplicateWitness/.test(
        `${e.name} ${e.message}`,
      )
    );
    const failed = errors.find((e) => !late.includes(e));
    if (failed !== undefined) throw new Error(`a scripted client failed: ${failed.message}`);
    return {
      clients,
      batchMs,
      deltas,
      rounds: roundMs.length,
      roundMs: quantile(roundMs, 0.5),
      bytesPerClientRound: quantile(perClient, 0.5),
      lateReports: late.length,
    };
  } finally {
    await Promise.all(scripted.map((c) => c.stop()));
    await server.close();
  }
}

/** The flags of `deno task bench-coordinator-scale`. */
export const SCALE_BENCH_SPEC = {
  usage: "deno task bench-coordinator-scale [--clients 8,16,32,64,128,256] [--rounds N]",
  summary: "How the TCP coordinator's cost grows with the run: a real server and N scripted " +
    "clients (no training) over loopback; per size, the round time and the bytes each client " +
    "reads from the coordinator per round, as the server runs now and as it ran before state " +
    "batching and deltas.",
  flags: {
    clients: {
      type: "string",
      value: "N,N",
      description: "run sizes, comma-separated",
      default: "8,16,32,64,128,256",
    },
    rounds: { type: "string", value: "N", description: "rounds measured per size", default: "10" },
  },
} as const;

/** The checked options; {@link UsageError} names a bad flag. */
export function scaleBenchOptions(
  values: FlagValues<typeof SCALE_BENCH_SPEC>,
): { sizes: number[]; rounds: number } {
  const sizes = (values.clients ?? "").split(",").map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 2 || n > 256)) {
    throw new UsageError(
      `--clients must be a list of integers in 2..256, found "${values.clients}"`,
    );
  }
  const rounds = Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1) {
    throw new UsageError(`--rounds must be a positive integer, found "${values.rounds}"`);
  }
  return { sizes, rounds };
}

if (import.meta.main) {
  const { sizes, rounds } = parseOrExit(SCALE_BENCH_SPEC, (p) => scaleBenchOptions(p.values));
  const kB = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;
  const lines = [
    "| clients | round: now | batched, whole | before | per client per round: now | batched, whole | before | coordinator egress per round: now | before |",
    "| ------: | ---------: | -------------: | -----: | ------------------------: | -------------: | -----: | --------------------------------: | -----: |",
  ];
  for (const clients of sizes) {
    const now = await measure(clients, rounds, { batchMs: STATE_BATCH_MS, deltas: true });
    console.log(JSON.stringify(now));
    const whole = await measure(clients, rounds, { batchMs: STATE_BATCH_MS, deltas: false });
    console.log(JSON.stringify(whole));
    const before = await measure(clients, rounds, { batchMs: 0, deltas: false });
    console.log(JSON.stringify(before));
    const ms = (m: Measured) => `${m.roundMs.toFixed(0)} ms`;
    lines.push(
      `| ${clients} | ${ms(now)} | ${ms(whole)} | ${ms(before)} | ${
        kB(now.bytesPerClientRound)
      } | ${kB(whole.bytesPerClientRound)} | ${kB(before.bytesPerClientRound)} | ${
        kB(now.bytesPerClientRound * clients)
      } | ${kB(before.bytesPerClientRound * clients)} |`,
    );
  }
  console.log(`\nmedians over ${rounds} rounds per size (the first round left out)\n`);
  console.log(lines.join("\n"));
}
