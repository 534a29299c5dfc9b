/**
 * `deno run -A client/warmup_bench.ts [model-dir] [sequences] [seq-len]`: what a client's
 * first training step costs against its later ones, without and with the dry steps a client
 * now runs before it reports ready (NetworkTrainer.warmUp). Each case gets a fresh GPU runtime
 * (nothing built), then trains 5 steps of `sequences` sequences (default: the demo's 2 x 128
 * tokens of the 20M Llama on the bundled corpus) and reports the first step, the median of
 * the rest, and their ratio. The two cases run in the same process, one after the other.
 *
 * A first step far above the median is what timed out the demo's first round on a busy
 * machine: every GPU pipeline of the step (forward, backward, DisTrO) is built then.
 *
 * @module
 */
import { loadModel } from "./model_source.ts";
import { NetworkTrainer } from "./trainer.ts";
import { BUNDLED_CORPUS_DIR, LocalDataProvider } from "../data/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { median } from "../common/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const folder = Deno.args[0] ?? `${ROOT}config/models/llama-20m`;
const sequences = Number(Deno.args[1] ?? 2);
const seqLen = Number(Deno.args[2] ?? 128);
const STEPS = 5;

const model = await loadModel(folder, "warmup-bench");
const data = await LocalDataProvider.open(`${BUNDLED_CORPUS_DIR}/train`, {
  seqLen,
  tokenSize: "TwoBytes",
  vocabSize: model.config.vocabSize,
});

async function run(warm: boolean): Promise<{ warmUpMs: number; first: number; median: number }> {
  using rt = await GpuRuntime.create();
  using trainer = new NetworkTrainer({
    rt,
    config: model.config,
    layout: model.layout,
    weights: model.weights,
    seqLen,
    microBatch: 1,
    maxBatch: sequences,
    distro: {
      chunk: 64,
      topk: 8,
      decay: 0.999,
      weightDecay: null,
      clipGradNorm: 1,
      quantize1bit: true,
    },
  });
  const t0 = performance.now();
  if (warm) await trainer.warmUp(sequences);
  const warmUpMs = performance.now() - t0;
  const times: number[] = [];
  for (let i = 0; i < STEPS; i++) {
    const start = i * sequences;
    const trained = await trainer.train({
      step: i + 1,
      batch: { start, end: start + sequences - 1 },
      lr: 1e-3,
      prevLr: 1e-3,
      data,
    });
    times.push(trained.ms);
  }
  return { warmUpMs, first: times[0], median: median(times.slice(1)) };
}

const load = (await Deno.readTextFile("/proc/loadavg").catch(() => "? ? ?")).split(" ")[0];
console.log(
  `model ${folder}, ${sequences} x ${seqLen} tokens a step, load average ${load} at start`,
);
console.log(
  "| case | dry steps before ready | first step | median of steps 2-5 | first / median |",
);
console.log("| --- | ---: | ---: | ---: | ---: |");
// The warmed case first: a driver-level shader cache can only help the case after it.
for (const warm of [true, false]) {
  const r = await run(warm);
  console.log(
    `| ${warm ? "with the warm-up (now)" : "without (before)"} | ` +
      `${warm ? `${(r.warmUpMs / 1000).toFixed(1)} s` : "-"} | ${
        (r.first / 1000).toFixed(2)
      } s | ` +
      `${(r.median / 1000).toFixed(2)} s | ${(r.first / r.median).toFixed(2)}x |`,
  );
}
await data.close();
