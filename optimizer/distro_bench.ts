/**
 * DisTrO benchmarks.
 *
 * 1. Bytes per step (computed from shapes, printed once): our payload against dense bf16
 *    gradients and against Psyche's format for the same chunking (baseline.ts), for the
 *    ~20M model (config/models/llama-20m/config.json) and a 1B-shaped Llama (h=2048,
 *    inter=8192, L=16, vocab 32000), topk 2/4/8 at chunk 64. Throws when the targets fail:
 *    >= 250x smaller than dense bf16 at topk 8 1-bit, and smaller than Psyche.
 * 2. GPU time on the 20M model: one single-node step (generate, exact apply of the previous
 *    own result, lookahead), generate alone (error feedback, momentum, blocked DCT, top-k), and
 *    the exact apply of a 4-peer aggregate (upload, integer decode, θ update).
 * 3. CPU time of the per-step host work for the 20M model: read back the result, encode the
 *    payload, decode 4 peers' payloads, aggregate them exactly.
 *
 * Run: `deno bench -A optimizer/distro_bench.ts`
 *
 * @module
 */

import { readLlamaConfig } from "../model/hf_config.ts";
import { llamaParamLayout } from "../model/params.ts";
import { GpuRuntime } from "../shaders/gpu.ts";
import { randomF32 } from "../shaders/test_util.ts";
import { denseBf16Bytes, llamaShapes, psycheResultBytes } from "./baseline.ts";
import type { DistroConfig } from "./distro.ts";
import { aggregateFixed } from "./exact.ts";
import { DistroOptimizer } from "./gpu/distro_gpu.ts";
import { chunkLayouts } from "./layout.ts";
import type { DistroResult } from "./result.ts";
import { decodePayload, encodePayload, payloadBytes } from "./wire.ts";

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

// GPU step and host-side work on the 20M model.
const rt = await GpuRuntime.create();
console.log(`adapter: ${rt.adapterName}`);
const layout = llamaParamLayout(cfg20m);
const config: DistroConfig = {
  chunk: 64,
  topk: 8,
  decay: 0.999,
  weightDecay: 0.1,
  clipGradNorm: 1,
  quantize1bit: true,
};
const opt = new DistroOptimizer(rt, { params: layout.entries, size: layout.totalSize, config });
const params = rt.buffer("params", randomF32(1, layout.totalSize, -0.02, 0.02));
const grads = rt.buffer("grads", randomF32(2, layout.totalSize, -1e-3, 1e-3));
const sumsq = rt.buffer("sumsq", new Float32Array([1]));
let stepNumber = 0;
async function gpuStep() {
  const step = rt.beginStep("distro bench");
  opt.encodeStep(step, { params, grads, lr: 1e-4, stepNumber: ++stepNumber, gradSumSq: sumsq });
  await step.submit();
}
await gpuStep(); // compile pipelines, create the first result
await gpuStep();

Deno.bench({
  name: `GPU single-node step, ${(layout.paramCount / 1e6).toFixed(1)}M params`,
  group: "gpu",
  n: 3,
  warmup: 1,
  fn: gpuStep,
});
Deno.bench({
  name: "GPU generate (error feedback, momentum, DCT, top-k)",
  group: "gpu",
  n: 3,
  warmup: 1,
  async fn() {
    const step = rt.beginStep("distro bench generate");
    opt.encodeGenerate(step, { params, grads, lr: 1e-4, gradSumSq: sumsq });
    await step.submit();
  },
});

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
const decoded = payloads.map((b) => decodePayload(b, expect));
const update = opt.layouts.map((l, n) => aggregateFixed(l, decoded.map((r) => r.params[n])));
Deno.bench({
  name: "GPU apply of a 4-peer aggregate (upload, exact decode, θ update)",
  group: "gpu",
  n: 3,
  warmup: 1,
  async fn() {
    const step = rt.beginStep("distro bench apply");
    opt.encodeApply(step, { params, lr: 1e-4, update });
    await step.submit();
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
  fn() {
    const decoded = payloads.map((b) => decodePayload(b, expect));
    opt.layouts.map((l, n) => aggregateFixed(l, decoded.map((r) => r.params[n])));
  },
});
