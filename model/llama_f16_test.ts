import assert from "node:assert/strict";
import { readModelDir, writeModelDir } from "./checkpoint.ts";
import { LlamaModel } from "./llama.ts";
import { llamaParamLayout } from "./params.ts";
import { referenceLossAndGrad } from "./reference.ts";
import { seededTokens, smallLlamaConfig, spreadWeights } from "./testing/fixtures.ts";
import { AdamW } from "../optimizer/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

/** The configuration of llama_test.ts. */
const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);
const B = 2, T = 7;

async function f16Runtime(): Promise<GpuRuntime | null> {
  const rt = await GpuRuntime.create();
  if (rt.hasF16) return rt;
  console.warn(`skipped: adapter "${rt.info.description}" has no shader-f16`);
  rt[Symbol.dispose]();
  return null;
}

function model(rt: GpuRuntime, w: Float32Array): LlamaModel {
  const opts = { config: CONFIG, layout: LAYOUT, weights: w, microBatch: B, seqLen: T, slots: 1 };
  return new LlamaModel(rt, { ...opts, precision: "f16" });
}

Deno.test("f16 model: loss and gradients within f16 rounding of the f64 reference", async () => {
  using rt = await f16Runtime();
  if (!rt) return;
  const w = spreadWeights(LAYOUT, 11, 0.3);
  using m = model(rt, w);
  const batch = seededTokens(5, B * T, CONFIG.vocabSize);
  const predictions = B * (T - 1);
  m.writeTokens(0, batch);
  const step = rt.beginStep("f16 step");
  m.encodeZeroGrads(step);
  m.encodeForwardBackward(step, { slot: 0, lossScale: 1 / predictions });
  await step.submit();
  const { lossSum } = await m.readStats(1);
  const grads = await m.readGrads();
  const ref = referenceLossAndGrad(CONFIG, LAYOUT, w, { tokens: batch, count: B, seqLen: T });
  // Each matmul operand but the gradients is rounded to f16 (relative error u = 2⁻¹¹ ≈ 4.9e-4)
  // and products are summed in f32, so each matmul output is off by at most 2u·Σ|a||b|; rounding
  // errors of random sign partly cancel in the loss (6e-5 measured), so 4u = 2e-3 bounds it with
  // room. The f32 model meets 1e-5 (llama_test.ts), so this tolerance is f16's alone.
  const loss = lossSum / predictions;
  assert.ok(Math.abs(loss - ref.loss) < 2e-3 * ref.loss, `loss ${loss} vs ${ref.loss}`);
  // Gradients: every tensor's error, as a norm, within 2% (40u) of its reference norm. The
  // rounding of saved activations and weights enters each product forward and again backward,
  // and compounds through two layers and the attention softmax (3.5e-3 measured at worst, 2e-6
  // in f32).
  for (const e of LAYOUT.entries) {
    const want = ref.grads.subarray(e.offset, e.offset + e.size);
    const got = grads.subarray(e.offset, e.offset + e.size);
    let err = 0, norm = 0;
    for (let i = 0; i < e.size; i++) {
      err += (got[i] - want[i]) ** 2;
      norm += want[i] ** 2;
    }
    assert.ok(norm > 0, `${e.name}: reference gradient is zero`);
    const rel = Math.sqrt(err / norm);
    assert.ok(rel < 2e-2, `${e.name}: relative gradient error ${rel.toExponential(2)}`);
  }
});

Deno.test("f16 model overfits one batch, and its f32 master weights round-trip bit for bit", async () => {
  using rt = await f16Runtime();
  if (!rt) return;
  using m = model(rt, spreadWeights(LAYOUT, 2, 0.02));
  using adamw = new AdamW(rt, {
    size: LAYOUT.totalSize,
    config: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 },
  });
  const batch = seededTokens(6, B * T, CONFIG.vocabSize);
  const predictions = B * (T - 1);
  m.writeTokens(0, batch);
  const losses: number[] = [];
  for (let s = 1; s <= 40; s++) {
    const step = rt.beginStep(`overfit ${s}`);
    m.encodeZeroGrads(step);
    m.encodeForwardBackward(step, { slot: 0, lossScale: 1 / predictions });
    const gradSumSq = m.encodeGradSumSq(step);
    adamw.encodeStep(step, {
      params: m.params,
      grads: m.grads,
      lr: 1e-2,
      stepNumber: s,
      gradSumSq,
    });
    await step.submit();
    losses.push((await m.readStats(1)).lossSum / predictions);
  }
  // ln 37 ≈ 3.6 at the start; one memorised batch of 12 predictions goes far below.
  assert.ok(losses[0] > 3, `first loss ${losses[0]}`);
  assert.ok(losses.at(-1)! < 0.3, `losses ${losses.map((l) => l.toFixed(3)).join(" ")}`);
  const trained = await m.readParams();
  const dir = await Deno.makeTempDir();
  try {
    await writeModelDir(dir, { config: CONFIG, layout: LAYOUT, weights: trained });
    const back = await readModelDir(dir);
    assert.ok(back.weights !== null);
    const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);
    assert.ok(bits(back.weights).every((b, i) => b === bits(trained)[i]), "master weights");
    // The trained masters are not f16 values: they kept f32 precision.
    assert.ok(trained.some((x) => Math.f16round(x) !== x));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("f16 model: saved activations take less memory; f16 without shader-f16 is refused", async () => {
  using rt = await f16Runtime();
  if (!rt) return;
  const w = spreadWeights(LAYOUT, 1, 0.02);
  const opts = { config: CONFIG, layout: LAYOUT, weights: w, microBatch: B, seqLen: T, slots: 1 };
  using m32 = new LlamaModel(rt, opts);
  using m16 = model(rt, w);
  assert.equal(m32.precision, "f32");
  assert.ok(m16.activationBytes < m32.activationBytes);
  using plain = await GpuRuntime.create({ f16: false });
  assert.throws(
    () => new LlamaModel(plain, { ...opts, precision: "f16" }),
    /precision "f16" needs the "shader-f16" feature/,
  );
});
