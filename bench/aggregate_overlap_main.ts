/**
 * How many entries per chunk a real 4-peer aggregate holds, against independent picks (a
 * measurement, run by hand: not a `deno bench` file, as it trains for a minute or more).
 *
 * The apply sums every aggregated entry at every element, so its cost follows this count
 * (docs/benchmarks.md, "DisTrO"). Four peers share θ and keep their own δ, as networked clients
 * do, train the 20M model (config/models/llama-20m) on different batches of the bundled corpus
 * (4 x 256 tokens each; DisTrO at chunk 64, top-8, 1-bit), and their results are aggregated and
 * applied every round. Prints the mean entries per chunk each round; independent uniform picks
 * would give `4096·(1 − (1 − 8/4096)^4)` ≈ 31.9. Slow: each round trains four clients
 * (docs/benchmarks.md, "Behind the code", has its time on lavapipe).
 *
 * Run: `deno run -A bench/aggregate_overlap_main.ts [rounds, default 4]`
 *
 * @module
 */

import { openBundledCorpus } from "../data/mod.ts";
import {
  aggregateFixed,
  type DistroConfig,
  DistroOptimizer,
  type SparseParam,
} from "../optimizer/mod.ts";
import { initParams, LlamaModel, llamaParamLayout, readLlamaConfig } from "../model/mod.ts";
import { encodeGradients } from "../train/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const rounds = Number(Deno.args[0] ?? 4);
if (!(Number.isInteger(rounds) && rounds >= 1)) {
  console.error(`rounds must be a positive integer, found "${Deno.args[0]}"`);
  Deno.exit(2);
}
const cfg = await readLlamaConfig(
  new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
);
const B = 4, T = 256, PEERS = 4, LR = 3e-3;
using rt = await GpuRuntime.create();
const layout = llamaParamLayout(cfg);
using model = new LlamaModel(rt, {
  config: cfg,
  layout,
  weights: initParams(layout, cfg, 1),
  microBatch: B,
  seqLen: T,
  slots: 1,
  precision: "f32",
});
const data = await openBundledCorpus("train", { seqLen: T });
// No weight decay: the peers share one θ here, and each lookahead would decay it again.
const config: DistroConfig = {
  chunk: 64,
  topk: 8,
  decay: 0.999,
  weightDecay: 0,
  clipGradNorm: 1,
  quantize1bit: true,
};
const peers = Array.from(
  { length: PEERS },
  () =>
    new DistroOptimizer(rt, {
      params: layout.entries,
      size: layout.totalSize,
      segments: model.params.segments,
      config,
    }),
);
const independent = 4096 * (1 - (1 - 8 / 4096) ** PEERS);
let next = 0;
for (let round = 1; round <= rounds; round++) {
  const results: SparseParam[][] = [];
  for (const opt of peers) {
    const { tokens } = await data.getSamples({ start: next, end: next + B - 1 });
    next += B;
    const step = rt.beginStep(`peer round ${round}`);
    opt.encodeLookaheadApart(step, { params: model.params, prevLr: LR, lr: LR });
    const { gradSumSq } = encodeGradients(model, step, [tokens], opt.lookaheadWeights);
    opt.encodeGenerate(step, { params: model.params, grads: model.grads, lr: LR, gradSumSq });
    await step.submit();
    results.push(await opt.readResult());
  }
  const update = peers[0].layouts.map((l, n) => aggregateFixed(l, results.map((r) => r[n])));
  let entries = 0, chunks = 0;
  for (const [n, a] of update.entries()) {
    entries += a.indices.length;
    chunks += peers[0].layouts[n].chunks;
  }
  console.log(
    `round ${round}: ${(entries / chunks).toFixed(1)} entries per chunk ` +
      `(independent picks: ${independent.toFixed(1)})`,
  );
  const step = rt.beginStep(`apply round ${round}`);
  peers[0].encodeApply(step, { params: model.params, lr: LR, update });
  await step.submit();
}
for (const p of peers) p[Symbol.dispose]();
