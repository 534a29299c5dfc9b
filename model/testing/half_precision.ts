/**
 * The setup llama_bf16_test.ts and llama_f16_test.ts share: llama_test.ts's small model at
 * B·T = 2·7 tokens in a given precision, one forward and backward held against the f64
 * reference, and AdamW steps on one batch. Each test file keeps its own tolerances.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { LlamaConfig } from "../hf_config.ts";
import { LlamaModel } from "../llama.ts";
import { llamaParamLayout, type ParamLayout } from "../params.ts";
import type { ModelPrecision } from "../precision.ts";
import { referenceLossAndGrad } from "../reference.ts";
import { seededTokens, smallLlamaConfig, spreadWeights } from "./fixtures.ts";
import { AdamW } from "../../optimizer/mod.ts";
import type { GpuRuntime } from "../../shaders/mod.ts";

/** The configuration of llama_test.ts. */
export const CONFIG: LlamaConfig = smallLlamaConfig();
export const LAYOUT: ParamLayout = llamaParamLayout(CONFIG);
/** Sequences per micro-batch and tokens per sequence. */
export const B = 2, T = 7;
/** Next-token predictions per batch: the loss is their mean. */
export const PREDICTIONS = B * (T - 1);

/** The small model with weights `w` in `precision`, one token slot. */
export function model(rt: GpuRuntime, w: Float32Array, precision: ModelPrecision): LlamaModel {
  const opts = { config: CONFIG, layout: LAYOUT, weights: w, microBatch: B, seqLen: T, slots: 1 };
  return new LlamaModel(rt, { ...opts, precision });
}

/**
 * One forward and backward in `precision` of a seeded batch on weights spread far from zero
 * (so every gradient is well conditioned), held against the f64 reference: asserts the mean
 * loss within `tolerance.loss` of the reference's, relative, and every tensor's gradient error
 * `‖got − want‖ / ‖want‖` below `tolerance.gradient`.
 */
export async function assertNearReference(
  rt: GpuRuntime,
  precision: ModelPrecision,
  tolerance: { loss: number; gradient: number },
): Promise<void> {
  const w = spreadWeights(LAYOUT, 11, 0.3);
  using m = model(rt, w, precision);
  const batch = seededTokens(5, B * T, CONFIG.vocabSize);
  m.writeTokens(0, batch);
  const step = rt.beginStep(`${precision} step`);
  m.encodeZeroGrads(step);
  m.encodeForwardBackward(step, { slot: 0, lossScale: 1 / PREDICTIONS });
  await step.submit();
  const loss = (await m.readStats(1)).lossSum / PREDICTIONS;
  const grads = await m.readGrads();
  const ref = referenceLossAndGrad(CONFIG, LAYOUT, w, { tokens: batch, count: B, seqLen: T });
  assert.ok(
    Math.abs(loss - ref.loss) < tolerance.loss * ref.loss,
    `loss ${loss} vs ${ref.loss}`,
  );
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
    assert.ok(
      rel < tolerance.gradient,
      `${e.name}: relative gradient error ${rel.toExponential(2)}`,
    );
  }
}

/** `steps` AdamW steps on one batch from seeded weights: the losses and the final masters. */
export async function trainOneBatch(
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

/** The bits of f32 values, to compare them exactly. */
export const bits = (x: Float32Array): Uint32Array =>
  new Uint32Array(x.buffer, x.byteOffset, x.length);
