/**
 * The demo's training throughput against one process's (issue 32, "a round ends when the work is
 * done"): tokens per second that the demo's run applies, all clients together, against one
 * `deno task train` process training the same model with DisTrO on the same data and the same
 * total batch, measured one after the other in one invocation on one machine.
 *
 * 1. The baseline: `deno task train` on config/models/llama-bytes, the Brown corpus as bytes,
 *    sequences of 256, the demo's 6 sequences a step in one micro-batch, DisTrO as config/demo
 *    sets it. Tokens per second from the median step time, the first two steps (shader builds)
 *    left out.
 * 2. The run: `config/demo` as `deno task demo` runs it (a coordinator with its data server and
 *    3 clients, 2 sequences each), uncalibrated. Tokens per second applied: from the first
 *    client's applies in the first epoch, the first two left out, each counting the batches it
 *    applied (an untrained batch adds no tokens), over the time between the first and the last.
 *
 * A script rather than a `deno bench` file: one sample is a whole multi-process run.
 *
 *     deno task bench-throughput [--steps 12]
 *
 * @module
 */
import { join } from "node:path";
import { parseOrExit } from "../../cli/entry.ts";
import { quantile, UsageError } from "../../common/mod.ts";
import { CORPUS_TOKENIZERS, ensureCorpus } from "../../data/mod.ts";
import { REPO_ROOT, Testnet } from "./launcher.ts";
import { EventWatcher } from "../testing/testnet.ts";

/** The demo's run: 6 sequences of 256 bytes a step over 3 clients. */
const SEQ_LEN = 256;
const GLOBAL_BATCH = 6;
const CLIENTS = 3;
const DEMO_CONFIG = join(REPO_ROOT, "config", "demo");
const MODEL = join(REPO_ROOT, "config", "models", "llama-bytes");
/** Steps left out at the start of both runs: pipelines are built there. */
const WARM_STEPS = 2;

/** The flags of `deno task bench-throughput`. */
export const BENCH_THROUGHPUT_SPEC = {
  usage: "deno task bench-throughput [--steps N]",
  summary: "The demo's training throughput (tokens per second applied, 3 clients together) " +
    "against one `deno task train` process on the same model, data and total batch, in one run.",
  flags: {
    steps: {
      type: "string",
      value: "N",
      description: "steps measured in each run (after 2 left out)",
      default: "12",
    },
  },
} as const;

/** Tokens per second of one `deno task train` process over `steps` measured steps. */
async function baseline(steps: number, dataPath: string): Promise<{ tps: number; stepMs: number }> {
  const args = [
    "run",
    "-A",
    join(REPO_ROOT, "train", "main.ts"),
    "--model",
    MODEL,
    "--data-path",
    dataPath,
    "--sequence-length",
    String(SEQ_LEN),
    "--micro-batch",
    String(GLOBAL_BATCH),
    "--total-batch",
    String(GLOBAL_BATCH),
    "--steps",
    String(steps + WARM_STEPS),
    "--optimizer",
    "distro",
    "--compression-topk",
    "8",
    "--distro-quantization",
    "--learning-rate",
    "3e-3",
    "--warmup-steps",
    "10",
    "--no-save",
    "--logs",
    "json",
  ];
  const out = await new Deno.Command(Deno.execPath(), { args, stdout: "piped", stderr: "inherit" })
    .output();
  if (!out.success) throw new Error(`deno task train exited with ${out.code}`);
  const lines = new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.startsWith("{"));
  const stepMs = lines.map((l) => JSON.parse(l)).filter((e) => e.event === "step")
    .slice(WARM_STEPS).map((e) => Number(e.ms));
  if (stepMs.length < steps) throw new Error(`train logged ${stepMs.length} steps of ${steps}`);
  const median = quantile(stepMs, 0.5);
  return { tps: (GLOBAL_BATCH * SEQ_LEN) / (median / 1000), stepMs: median };
}

/** An apply the first client logged: when, and the batches it applied of how many. */
interface Applied {
  readonly at: number;
  readonly epoch: number;
  readonly applied: number;
  readonly untrained: number;
}

/** Tokens per second the demo's run applied over `steps` measured steps of its first epoch. */
async function demoRun(
  steps: number,
): Promise<{ tps: number; roundMs: number; untrained: number }> {
  const watcher = new EventWatcher();
  const applies = (): Applied[] =>
    watcher.named("apply", "client-1").map(({ event }) => ({
      at: Date.parse(String(event.time)),
      epoch: Number(event.epoch),
      applied: Number(event.applied),
      untrained: Number(event.untrained_batches),
    })).filter((a) => a.epoch === 0);
  const net = await Testnet.start({
    configPath: DEMO_CONFIG,
    numClients: CLIENTS,
    write: null,
    calibrate: false,
    dashboardPort: null,
    onEvent: watcher.onEvent,
  });
  try {
    await watcher.waitFor(
      `${steps + WARM_STEPS + 1} applies of the first epoch at client-1`,
      () => applies().length >= steps + WARM_STEPS + 1,
      600_000,
    );
  } finally {
    await net.stop();
  }
  const window = applies().slice(WARM_STEPS, WARM_STEPS + steps + 1);
  const perBatch = (GLOBAL_BATCH / CLIENTS) * SEQ_LEN;
  // Tokens applied after the window's first apply, over the time since it.
  const tokens = window.slice(1).reduce((n, a) => n + a.applied * perBatch, 0);
  const seconds = (window.at(-1)!.at - window[0].at) / 1000;
  return {
    tps: tokens / seconds,
    roundMs: (seconds * 1000) / (window.length - 1),
    untrained: window.slice(1).reduce((n, a) => n + a.untrained, 0),
  };
}

if (import.meta.main) {
  const { steps } = parseOrExit(BENCH_THROUGHPUT_SPEC, ({ values }) => {
    const n = Number(values.steps);
    if (!Number.isInteger(n) || n < 2 || n > 200) {
      throw new UsageError(`--steps must be an integer in 2..200, found "${values.steps}"`);
    }
    return { steps: n };
  });
  await ensureCorpus("bytes");
  const cpu = Deno.readTextFileSync("/proc/cpuinfo").match(/model name\s*:\s*(.*)/)?.[1];
  const load = () => Deno.loadavg().map((l) => l.toFixed(2)).join(" ");
  console.log(
    `${new Date().toISOString()}, ${cpu ?? "unknown CPU"}, ${navigator.hardwareConcurrency} ` +
      `cores, load average ${load()}, Deno ${Deno.version.deno}; config/demo, ${steps} steps`,
  );
  console.log("one `deno task train` process: 6 x 256 bytes a step ...");
  const one = await baseline(steps, join(CORPUS_TOKENIZERS.bytes.dir, "train"));
  console.log(`  ${one.stepMs.toFixed(0)} ms a step, ${one.tps.toFixed(0)} tokens/s`);
  console.log(`the demo's run (3 clients, 2 x 256 each), load average ${load()} ...`);
  const demo = await demoRun(steps);
  console.log(
    `  ${demo.roundMs.toFixed(0)} ms a round, ${demo.tps.toFixed(0)} tokens/s applied ` +
      `(${demo.untrained} untrained batches)`,
  );
  console.log(
    `\nthe demo's throughput: ${(demo.tps / one.tps).toFixed(2)}x one process's ` +
      `(target: at least 0.8x); load average ${load()}`,
  );
}
