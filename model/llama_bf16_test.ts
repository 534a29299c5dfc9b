import assert from "node:assert/strict";
import { LlamaModel } from "./llama.ts";
import type { ModelPrecision } from "./precision.ts";
import { llamaParamLayout } from "./params.ts";
import { referenceLossAndGrad } from "./reference.ts";
import { seededTokens, smallLlamaConfig, spreadWeights } from "./testing/fixtures.ts";
import { AdamW } from "../optimizer/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

/** The configuration of llama_test.ts. */
const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);
const B = 2, T = 7;
const PREDICTIONS = B * (T - 1);

function model(rt: GpuRuntime, w: Float32Array, precision: ModelPrecision): LlamaModel {
  const opts = { config: CONFIG, layout: LAYOUT, weights: w, microBatch: B, seqLen: T, slots: 1 };
  return new LlamaModel(rt, { ...opts, precision });
}

/** bf16 needs no device feature: every test runs on a runtime without shader-f16. */
function plainRuntime(): Promise<GpuRuntime> {
  return GpuRuntime.create({ f16: false });
}

Deno.test("bf16 model: loss and gradients within bf16 rounding of the f64 reference", async () => {
  using rt = await plainRuntime();
  const w = spreadWeights(LAYOUT, 11, 0.3);
  using m = model(rt, w, "bf16");
  const batch = seededTokens(5, B * T, CONFIG.vocabSize);
  m.writeTokens(0, batch);
  const step = rt.beginStep("bf16 step");
  m.encodeZeroGrads(step);
  m.encodeForwardBackward(step, { slot: 0, lossScale: 1 / PREDICTIONS });
  await step.submit();
  const loss = (await m.readStats(1)).lossSum / PREDICTIONS;
  const grads = await m.readGrads();
  const ref = referenceLossAndGrad(CONFIG, LAYOUT, w, { tokens: batch, count: B, seqLen: T });
  // As in llama_f16_test.ts, with bf16's unit roundoff u = 2⁻⁸ ≈ 3.9e-3 (8 bits of significand)
  // in place of f16's 2⁻¹¹: the loss within 2u (3.2e-4 measured), every tensor's gradient within
  // 20u in norm (2.3e-2 measured at worst; f32 meets 1e-5 and 2e-6, so these are bf16's alone).
  assert.ok(Math.abs(loss - ref.loss) < 8e-3 * ref.loss, `loss ${loss} vs ${ref.loss}`);
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
    assert.ok(rel < 8e-2, `${e.name}: relative gradient error ${rel.toExponential(2)}`);
  }
});

/** `steps` AdamW steps on one batch from seeded weights: the losses and the final masters. */
async function train(
  rt: GpuRuntime,
  precision: ModelPrecision,
  steps: number,
): Promise<{ losses: number[]; params: Float32Array }> {
  using m = model(rt, spreadWeights(LAYOUT, 2, 0.02), precision);
  using adamw = new AdamW(rt, {
    size: LAYOUT.totalSize,
    config: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 },
  });
  m.writeTokens(0, seededTokens(6, B * T, CONFIG.vocabSize));
  const losses: number[] = [];
  for (let s = 1; s <= steps; s++) {
    const step = rt.beginStep(`${precision} step ${s}`);
    m.encodeZeroGrads(step);
    m.encodeForwardBackward(step, { slot: 0, lossScale: 1 / PREDICTIONS });
    const gradSumSq = m.encodeGradSumSq(step);
    adamw.encodeStep(step, {
      params: m.params,
      grads: m.grads,
      lr: 1e-2,
      stepNumber: s,
      gradSumSq,
    });
    await step.submit();
    losses.push((await m.readStats(1)).lossSum / PREDICTIONS);
  }
  return { losses, params: await m.readParams() };
}

const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);

Deno.test("bf16 training follows f32's losses, and two runs are bit-identical", async () => {
  using rt = await plainRuntime();
  const steps = 12;
  const f32 = await train(rt, "f32", steps);
  const a = await train(rt, "bf16", steps);
  const b = await train(rt, "bf16", steps);
  // Every step's loss near f32's (1.3e-3 relative measured at worst): the masters and the update
  // are f32, so the runs stay together while the loss falls from ln 37 ≈ 3.6 to about 0.7 (a
  // stale or wrongly converted weight copy drifts away).
  for (let s = 0; s < steps; s++) {
    const rel = Math.abs(a.losses[s] - f32.losses[s]) / f32.losses[s];
    assert.ok(rel < 5e-3, `step ${s + 1}: bf16 loss ${a.losses[s]} vs f32 ${f32.losses[s]}`);
  }
  assert.ok(a.losses.at(-1)! < 0.6 * a.losses[0], `losses ${a.losses.join(" ")}`);
  assert.deepEqual(a.losses, b.losses);
  assert.deepEqual(bits(a.params), bits(b.params), "final masters of two bf16 runs");
  // The masters kept f32 precision: they are not bf16 values.
  const u = bits(a.params);
  assert.ok(u.some((x) => (x & 0xffff) !== 0));
});

Deno.test("bf16 model: saved activations take less memory, on an adapter without shader-f16", async () => {
  using rt = await plainRuntime();
  assert.equal(rt.hasF16, false);
  const w = spreadWeights(LAYOUT, 1, 0.02);
  using m32 = model(rt, w, "f32");
  using m16 = model(rt, w, "bf16");
  assert.equal(m16.precision, "bf16");
  assert.ok(m16.activationBytes < m32.activationBytes);
  assert.throws(() => model(rt, w, "bf8" as ModelPrecision), /"f32", "f16" or "bf16", got "bf8"/);
});
