/**
 * DisTrO benchmarks.
 *
 * 1. Bytes per step (computed from shapes, printed once): our payload against dense bf16
 *    gradients and against Psyche's format for the same chunking (baseline.ts), for the
 *    ~20M model (config/models/llama-20m/config.json) and a 1B-shaped Llama (h=2048,
 *    inter=8192, L=16, vocab 32000), topk 2/4/8 at chunk 64. Throws when the targets fail:
 *    >= 250x smaller than dense bf16 at topk 8 1-bit, and smaller than Psyche.
 * 2. DisTrO's share of a training step on the 20M model (B·T = 4·256 tokens, as
 *    train/train_bench.ts), everything measured in one run, rounds alternating, so all of it sees
 *    the same machine load: a DisTrO client's step is its training without an optimizer
 *    (forward, backward, gradient norm, the loss read) plus DisTrO's work D, and the headline is
 *    D / (that + D). D leaves out the one completion wait (measured as an empty submission) that
 *    the round shares with the loss read. The AdamW training step (forward, backward, clip,
 *    AdamW) is printed beside it, with D and its wait as a share of it. A networked client's
 *    DisTrO work per step is
 *    - GPU: apply the exact aggregate of 4 peers' results and the lookahead (before the
 *      forward pass), generate (error feedback, momentum, fast DCT, top-k; after the backward
 *      pass), queued here as one submission, and the result read back (the one completion wait,
 *      which the client shares with reading the loss). The client (client/trainer.ts) submits
 *      the apply on its own when the results arrive, without waiting, and the lookahead,
 *      training and generate as one submission;
 *    - encode: the payload; decode: 4 peers' payloads and their exact aggregate (host);
 *    printed with their sum as a share of the DisTrO step and of the AdamW step (rounds
 *    alternate the training steps and the DisTrO work; medians), then each kernel's GPU time
 *    from a profiled twin of the optimizer (timestamped passes, one per kernel), and the
 *    apply's GPU time for 1, 4, 8 and 16 peers.
 *    With `--large`, separately labelled shares: the same DisTrO work against AdamW steps of
 *    4 x 512 and 8 x 512 tokens (2 and 4 micro-batches of 2 x 512), and D against the client
 *    step of Psyche's own run for this model (llama2-20m-dolma: a global batch of 8 x 2048
 *    tokens, 2 x 2048 per client when 4 clients share it, and 1 x 2048 with 8 peers' results
 *    applied when 8 do, the most that batch admits), measured in the same rounds.
 *    DisTrO's cost per step is fixed while training cost grows with tokens; the 4 x 256 share,
 *    an eighth of Psyche's client step for this model, stays the strictest figure.
 * 3. `Deno.bench` entries for the same pieces and the single-node DisTrO step.
 *
 * Run: `deno bench -A optimizer/distro_bench.ts` (or `deno run -A optimizer/distro_bench.ts
 * [--large]` for the tables only)
 *
 * @module
 */

import { randomF32 } from "../shaders/testing/kernels.ts";
import { AdamW, ADAMW_DEFAULTS } from "./adamw.ts";
import { denseBf16Bytes, llamaShapes, psycheResultBytes } from "./baseline.ts";
import type { DistroConfig } from "./distro.ts";
import { aggregateFixed } from "./exact.ts";
import { DistroOptimizer } from "./gpu/distro_gpu.ts";
import { chunkLayouts } from "./layout.ts";
import type { DistroResult } from "./result.ts";
import { decodePayload, encodePayload, payloadBytes } from "./wire.ts";
import { initParams, LlamaModel, llamaParamLayout, readLlamaConfig } from "../model/mod.ts";
import { encodeGradients, trainStep } from "../train/mod.ts";
import { median } from "../common/mod.ts";
import { GpuRuntime, type GpuStep } from "../shaders/mod.ts";

const cfg20m = await readLlamaConfig(
  new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
);
const MODELS = {
  "llama-20m": llamaShapes({
    hidden: cfg20m.hiddenSize,
    intermediate: cfg20m.intermediateSize,
    layers: cfg20m.numLayers,
    vocab: cfg20m.vocabSize,
    kvHidden: cfg20m.numKvHeads * cfg20m.headDim,
  }),
  "llama-1b (h2048 f8192 L16)": llamaShapes({
    hidden: 2048,
    intermediate: 8192,
    layers: 16,
    vocab: 32000,
  }),
};

const fmt = (b: number) =>
  b >= 1e9
    ? `${(b / 1e9).toFixed(2)} GB`
    : b >= 1e6
    ? `${(b / 1e6).toFixed(2)} MB`
    : `${(b / 1e3).toFixed(1)} KB`;
console.log("| model | topk | values | dense bf16 | Psyche | ours | vs dense | vs Psyche |");
console.log("|---|---|---|---|---|---|---|---|");
for (const [name, shapes] of Object.entries(MODELS)) {
  for (const topk of [2, 4, 8]) {
    const layouts = chunkLayouts(shapes, { chunk: 64, topk });
    for (const oneBit of [true, false]) {
      const dense = denseBf16Bytes(layouts);
      const psyche = psycheResultBytes(layouts, oneBit);
      const ours = payloadBytes(layouts, oneBit);
      console.log(
        `| ${name} | ${topk} | ${oneBit ? "1-bit" : "bf16"} | ${fmt(dense)} | ${fmt(psyche)} | ` +
          `${fmt(ours)} | ${(dense / ours).toFixed(0)}x | ${(psyche / ours).toFixed(3)}x |`,
      );
      if (ours >= psyche) throw new Error(`${name} k=${topk}: ours ${ours} >= Psyche ${psyche}`);
      if (topk === 8 && oneBit && dense / ours < 250) {
        throw new Error(`${name}: only ${(dense / ours).toFixed(0)}x smaller than dense bf16`);
      }
    }
  }
}

// DisTrO against the AdamW training step of the 20M model, in the same run.
const rt = await GpuRuntime.create();
console.log(`adapter: ${rt.adapterName}`);
const layout = llamaParamLayout(cfg20m);
const B = 4, T = 256;
const model = new LlamaModel(rt, {
  config: cfg20m,
  layout,
  weights: initParams(layout, cfg20m, 1),
  microBatch: B,
  seqLen: T,
  slots: 1,
  precision: "f32",
});
const adamw = new AdamW(rt, { size: layout.totalSize, config: ADAMW_DEFAULTS });
const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 7919 + 11) % cfg20m.vocabSize);
let adamwSteps = 0;
const adamwStep = () =>
  trainStep({ rt, model, optimizer: adamw }, {
    stepNumber: ++adamwSteps,
    lr: 1e-4,
    microBatches: [tokens],
    clipGradients: true,
  });
/**
 * `--large`: bigger client steps on a model of 2 x 512-token micro-batches: 2 of them (4 x 512 =
 * 2048 tokens) and 4 (8 x 512 = 4096 tokens).
 */
const LARGE = Deno.args.includes("--large") ? { micro: 2, T: 512, slots: 4 } : null;
const large = LARGE && new LlamaModel(rt, {
  config: cfg20m,
  layout,
  weights: initParams(layout, cfg20m, 1),
  microBatch: LARGE.micro,
  seqLen: LARGE.T,
  slots: LARGE.slots,
  precision: "f32",
});
const largeSizes = LARGE ? [2, LARGE.slots] : [];
/**
 * `--large` also measures the client step of Psyche's own run for this model (Psyche's example run
 * `llama2-20m-dolma`, psyche-book/src/enduser/run-config.md: global batch 8 sequences of 2048
 * tokens): shared by the 4 clients whose results the round applies, 2 x 2048 tokens each, trained
 * without an optimizer as {@link gradientStep} does.
 */
const PSYCHE = { micro: 1, T: 2048, batches: 2 };
const psyche = LARGE && new LlamaModel(rt, {
  config: cfg20m,
  layout,
  weights: initParams(layout, cfg20m, 1),
  microBatch: PSYCHE.micro,
  seqLen: PSYCHE.T,
  slots: PSYCHE.batches,
  precision: "f32",
});
const psycheTokens = Array.from(
  { length: PSYCHE.batches },
  (_, k) =>
    Uint32Array.from({ length: PSYCHE.T }, (_, i) => (i * 104729 + 7 + k) % cfg20m.vocabSize),
);
/**
 * The client's training without an optimizer: forward, backward and the gradient norm in one
 * submission, then the loss read (its one completion wait). A DisTrO client's step is this plus
 * DisTrO's work.
 */
async function gradientStep(on = model, microBatches = [tokens]) {
  const step = rt.beginStep("gradients");
  encodeGradients(on, step, microBatches);
  await step.submit({ wait: false });
  await on.readStats(microBatches.length);
}
/** {@link gradientStep} at the Psyche run's client step: `sequences` x 2048 tokens. */
const psycheGradientStep = (sequences: number) =>
  gradientStep(psyche!, psycheTokens.slice(0, sequences));
/** An empty submission's completion wait: what Deno adds to any wait (about 11 ms). */
async function emptyWait() {
  await rt.beginStep("empty").submit();
}
const largeLabel = (m: number) => `${LARGE!.micro * m}x${LARGE!.T} tokens`;
const largeStep = (m: number) =>
  trainStep({ rt, model: large!, optimizer: adamw }, {
    stepNumber: ++adamwSteps,
    lr: 1e-4,
    microBatches: Array.from(
      { length: m },
      (_, k) =>
        Uint32Array.from(
          { length: LARGE!.micro * LARGE!.T },
          (_, i) => (i * 7919 + 11 + k * 101) % cfg20m.vocabSize,
        ),
    ),
    clipGradients: true,
  });

const config: DistroConfig = {
  chunk: 64,
  topk: 8,
  decay: 0.999,
  weightDecay: 0.1,
  clipGradNorm: 1,
  quantize1bit: true,
};
const opt = new DistroOptimizer(rt, { params: layout.entries, size: layout.totalSize, config });
/** A twin that times each kernel in its own pass (the pass boundaries would skew wall times). */
const profiled = new DistroOptimizer(rt, {
  params: layout.entries,
  size: layout.totalSize,
  config,
  profile: true,
});
const params = rt.buffer("params", randomF32(1, layout.totalSize, -0.02, 0.02));
const grads = rt.buffer("grads", randomF32(2, layout.totalSize, -1e-3, 1e-3));
const sumsq = rt.buffer("sumsq", new Float32Array([1]));
globalThis.addEventListener("unload", () => {
  opt[Symbol.dispose]();
  profiled[Symbol.dispose]();
  adamw[Symbol.dispose]();
  model[Symbol.dispose]();
  large?.[Symbol.dispose]();
  psyche?.[Symbol.dispose]();
  rt[Symbol.dispose]();
});

/** Kernel name → GPU ms, summed over a step's timed passes. */
function kernelTimes(step: GpuStep, into: Map<string, number[]>): void {
  const sums = new Map<string, number>();
  for (const t of step.timings) sums.set(t.name, (sums.get(t.name) ?? 0) + t.ms);
  for (const [name, ms] of sums) into.set(name, [...(into.get(name) ?? []), ms]);
}
const roundKernels = new Map<string, number[]>();
/** Generate on `o` (its first result, which the apply below decodes as peer 0's). */
async function gpuGenerate(o: DistroOptimizer) {
  const step = rt.beginStep("distro generate");
  o.encodeGenerate(step, { params, grads, lr: 1e-4, gradSumSq: sumsq });
  await step.submit();
}
let stepNumber = 0;
async function singleNodeStep() {
  const step = rt.beginStep("distro single-node step");
  opt.encodeStep(step, { params, grads, lr: 1e-4, stepNumber: ++stepNumber, gradSumSq: sumsq });
  await step.submit();
}
await adamwStep(); // compile pipelines
for (const m of largeSizes) await largeStep(m);
if (psyche) await psycheGradientStep(PSYCHE.batches);
await singleNodeStep();
await gpuGenerate(opt);
await gpuGenerate(profiled);

const expect = { layouts: opt.layouts, quantize1bit: true };
/** Peer 0 sends this client's real result; peers 1..3 random valid results (distinct picks). */
const own = await opt.readResult();
let seed = 12345;
const rand = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const randomParams = () =>
  opt.layouts.map((l) => {
    const indices = new Uint32Array(l.chunks * l.k);
    const values = new Float32Array(l.chunks * l.k);
    for (let c = 0; c < l.chunks; c++) {
      const picked = new Set<number>();
      while (picked.size < l.k) picked.add(Math.floor(rand() * l.totalk));
      [...picked].forEach((i, r) => {
        indices[c * l.k + r] = i;
        values[c * l.k + r] = rand() < 0.5 ? -1 : 1;
      });
    }
    return { indices, values };
  });
const result = (peer: number): DistroResult => ({
  step: 1,
  batch: { start: peer * 64, end: peer * 64 + 63 },
  trainerNonce: 0,
  params: peer === 0 ? own : randomParams(),
});
const payloads = [0, 1, 2, 3].map((p) => encodePayload(result(p), expect));
console.log(`20M payload: ${fmt(payloads[0].length)} per peer per step`);
/** With `--large`: the most clients Psyche's run for this model admits (a batch of 8). */
const payloads8 = psyche
  ? [0, 1, 2, 3, 4, 5, 6, 7].map((p) => encodePayload(result(p), expect))
  : [];
const decodeAggregate = (from = payloads) => {
  const decoded = from.map((b) => decodePayload(b, expect));
  return opt.layouts.map((l, n) => aggregateFixed(l, decoded.map((r) => r.params[n])));
};
const update = decodeAggregate();
const update8 = psyche ? decodeAggregate(payloads8) : null;
/**
 * A networked client's DisTrO GPU work in one round (client/trainer.ts): apply the peers'
 * aggregate and the lookahead before the forward pass, generate after the backward pass, then
 * read the result back. The client submits apply and training without waiting and reads the
 * result together with the loss, so the one completion wait here (Deno's polling tick) is the
 * training step's there: the table takes it off once. Returns the host's part of the round:
 * encoding (the aggregate's upload included) and the submit; on the H200 the whole round took
 * 6.8 ms of which its kernels 1.6 (2026-11-30).
 */
async function gpuRound(record = false, aggregate = update): Promise<number> {
  const o = record ? profiled : opt;
  const t0 = performance.now();
  const step = rt.beginStep("distro round");
  o.encodeApply(step, { params, lr: 1e-4, update: aggregate });
  o.encodeLookaheadApart(step, { params, prevLr: 1e-4, lr: 1e-4 });
  o.encodeGenerate(step, { params, grads, lr: 1e-4, gradSumSq: sumsq });
  await step.submit({ wait: false });
  const hostMs = performance.now() - t0;
  await o.readResult();
  if (record) kernelTimes(step, roundKernels);
  return hostMs;
}
const roundHostMs: number[] = [];

/** Wall-clock milliseconds of `fn`. */
async function ms(fn: () => unknown): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}
const rows = new Map<string, number[]>();
const add = (name: string, v: number) => rows.set(name, [...(rows.get(name) ?? []), v]);
const ROUNDS = 5;
await gpuRound(); // compiles the 4-peer apply's pipelines
if (update8) await gpuRound(false, update8);
const WAIT = "completion wait alone (an empty submission)";
const GRADIENTS = "training step without an optimizer (forward, backward, norm; loss read)";
const PSYCHE_GRADIENTS = `${GRADIENTS}, ${PSYCHE.batches}x${PSYCHE.T} tokens`;
const PSYCHE_GRADIENTS_1 = `${GRADIENTS}, 1x${PSYCHE.T} tokens`;
const GPU_8 = "8 peers: GPU round";
const DECODE_8 = "8 peers: decode 8 payloads + exact aggregate";
for (let round = 0; round < ROUNDS; round++) {
  add("AdamW training step", await ms(adamwStep));
  add(GRADIENTS, await ms(() => gradientStep()));
  add(WAIT, await ms(emptyWait));
  add(
    "GPU: apply 4 peers + lookahead + generate (one submission), result read back",
    await ms(async () => roundHostMs.push(await gpuRound())),
  );
  add("encode: payload", await ms(() => encodePayload(result(0), expect)));
  add("decode: 4 payloads + exact aggregate", await ms(decodeAggregate));
  if (psyche) {
    add(PSYCHE_GRADIENTS, await ms(() => psycheGradientStep(PSYCHE.batches)));
    add(PSYCHE_GRADIENTS_1, await ms(() => psycheGradientStep(1)));
    add(GPU_8, await ms(() => gpuRound(false, update8!)));
    add(DECODE_8, await ms(() => decodeAggregate(payloads8)));
  }
  for (const m of largeSizes) {
    add(
      `AdamW training step, ${largeLabel(m)}`,
      await ms(() => largeStep(m)),
    );
  }
}
for (let round = 0; round < ROUNDS; round++) await gpuRound(true);
/*
 * DisTrO's time D is the round's GPU row less the one completion wait it shares with the loss
 * read (every training step pays that wait once, and the gradient step below already holds
 * it), plus encode and decode. A DisTrO client's step is the gradient step plus D, so the share
 * is D / (gradients + D). The AdamW column keeps the older, stricter ratio: the same work with
 * its wait, against the whole AdamW step.
 */
const med = (name: string) => median(rows.get(name)!);
const adamwMs = med("AdamW training step"), gradientsMs = med(GRADIENTS), waitMs = med(WAIT);
let distroWithWait = 0;
const pct = (x: number, of: number) => `${(100 * x / of).toFixed(1)}%`;
console.log(`| work (median of ${ROUNDS}) | ms | share of the DisTrO step | of the AdamW step |`);
console.log("|---|---:|---:|---:|");
const distroWork = [...rows.keys()].filter((n) =>
  !n.startsWith("AdamW training step") && !n.startsWith(GRADIENTS) && n !== WAIT &&
  !n.startsWith("8 peers")
);
for (const name of distroWork) distroWithWait += med(name);
const distro = distroWithWait - waitMs;
const distroStep = gradientsMs + distro;
console.log(`| AdamW training step (forward, backward, norm, AdamW) | ${adamwMs.toFixed(1)} | | |`);
console.log(`| ${GRADIENTS} | ${gradientsMs.toFixed(1)} | | |`);
for (const name of distroWork) {
  const m = med(name);
  console.log(`| ${name} | ${m.toFixed(1)} | ${pct(m, distroStep)} | ${pct(m, adamwMs)} |`);
}
console.log(`| less the ${WAIT}, shared with the loss read | -${waitMs.toFixed(1)} | | |`);
console.log(
  `| DisTrO total D (encode + decode + apply) | ${distro.toFixed(1)} | **${
    pct(distro, distroStep)
  }** of ${distroStep.toFixed(1)} | ${pct(distroWithWait, adamwMs)} with the wait |`,
);
console.log(
  `Of the GPU round, the host's encoding and submit (the aggregate's upload included): ` +
    `${median(roundHostMs).toFixed(1)} ms; the rest is the GPU's work and the result's read`,
);
for (const m of largeSizes) {
  const big = median(rows.get(`AdamW training step, ${largeLabel(m)}`)!);
  console.log(
    `Larger step (not the headline): AdamW step of ${largeLabel(m)} ${big.toFixed(1)} ms; ` +
      `DisTrO ${distroWithWait.toFixed(1)} ms with the wait = ${pct(distroWithWait, big)} of it`,
  );
}
if (psyche) {
  const step = med(PSYCHE_GRADIENTS) + distro;
  console.log(
    `Psyche's run shape (llama2-20m-dolma, 4 clients, ${PSYCHE.batches}x${PSYCHE.T} tokens ` +
      `each): training without an optimizer ${med(PSYCHE_GRADIENTS).toFixed(1)} ms; ` +
      `D = ${distro.toFixed(1)} ms = ${pct(distro, step)} of the DisTrO step`,
  );
  // 8 clients, each applying 8 peers' results: the 4-peer GPU round and decode swapped out.
  const gpu4 = med("GPU: apply 4 peers + lookahead + generate (one submission), result read back");
  const distro8 = distro - gpu4 - med("decode: 4 payloads + exact aggregate") + med(GPU_8) +
    med(DECODE_8);
  const step8 = med(PSYCHE_GRADIENTS_1) + distro8;
  console.log(
    `Psyche's run shape, 8 clients (1x${PSYCHE.T} tokens each, 8 peers' results): training ` +
      `without an optimizer ${med(PSYCHE_GRADIENTS_1).toFixed(1)} ms; GPU round ` +
      `${med(GPU_8).toFixed(1)} ms, decode ${med(DECODE_8).toFixed(1)} ms; ` +
      `D = ${distro8.toFixed(1)} ms = ${pct(distro8, step8)} of the DisTrO step`,
  );
}
const parts = [...roundKernels].map(([k, xs]) => `${k} ${median(xs).toFixed(1)}`);
const gpuSum = [...roundKernels.values()].reduce((a, xs) => a + median(xs), 0);
console.log(
  `GPU time per kernel in a round (ms, median): ${parts.join(", ")}; sum ${gpuSum.toFixed(1)}`,
);

/*
 * The apply sums every aggregated entry of a chunk at every element, so its cost grows with the
 * number of peers (about 8 entries each at topk 8) while the rest of the round does not. Its GPU
 * time for 1, 4, 8 and 16 peers' random 1-bit results (the profiled twin, medians of 3).
 */
const applyByPeers: string[] = [];
for (const peers of [1, 4, 8, 16]) {
  const results = Array.from({ length: peers }, () => randomParams());
  const aggregate = opt.layouts.map((l, n) => aggregateFixed(l, results.map((r) => r[n])));
  const times: number[] = [];
  for (let round = 0; round < 4; round++) {
    const step = rt.beginStep("apply by peers");
    profiled.encodeApply(step, { params, lr: 1e-4, update: aggregate });
    await step.submit();
    const apply = new Map<string, number[]>();
    kernelTimes(step, apply);
    if (round > 0) times.push(apply.get("apply")![0]); // the first compiles
  }
  applyByPeers.push(`${peers} peer${peers > 1 ? "s" : ""} ${median(times).toFixed(1)}`);
}
console.log(`GPU time of the apply by peers (ms, median): ${applyByPeers.join(", ")}`);

Deno.bench({
  name: `AdamW training step, ${(layout.paramCount / 1e6).toFixed(1)}M params, ${B}x${T} tokens`,
  group: "step",
  baseline: true,
  n: 2,
  warmup: 0,
  async fn() {
    await adamwStep();
  },
});
Deno.bench({
  name: "training step without an optimizer (forward, backward, norm; loss read)",
  group: "step",
  n: 2,
  warmup: 0,
  fn: () => gradientStep(),
});
Deno.bench({
  name: "DisTrO single-node optimizer step (generate, apply own, lookahead)",
  group: "step",
  n: 3,
  warmup: 1,
  fn: singleNodeStep,
});
Deno.bench({
  name: "GPU: apply a 4-peer aggregate + lookahead + generate, result read back",
  group: "step",
  n: 3,
  warmup: 1,
  fn: async () => {
    await gpuRound();
  },
});
Deno.bench({
  name: "read back result (GPU → host)",
  group: "host",
  n: 10,
  async fn() {
    await opt.readResult();
  },
});
Deno.bench({
  name: "encode payload",
  group: "host",
  n: 10,
  fn: () => void encodePayload(result(0), expect),
});
Deno.bench({
  name: "decode 4 payloads + exact aggregate",
  group: "host",
  n: 5,
  fn: () => void decodeAggregate(),
});
