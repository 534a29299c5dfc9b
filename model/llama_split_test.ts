import assert from "node:assert/strict";
import { parseLlamaConfig } from "./hf_config.ts";
import { LlamaModel } from "./llama.ts";
import { llamaParamLayout, seededNormals } from "./params.ts";
import type { ModelPrecision } from "./precision.ts";
import { CHUNK_ITEMS, GpuRuntime } from "../shaders/mod.ts";
import { AdamW } from "../optimizer/mod.ts";

/**
 * Every tensor but the embedding and LM head ([331, 32] f32: 42 KB) fits in 16 KiB, so a 16 KiB
 * binding cap splits exactly those: 128, 128 and 75 vocabulary rows. 16 KiB is a whole number
 * of the sum of squares' chunks (CHUNK_ITEMS · 64 floats on the CPU profile), so the gradient
 * norm is split too, on chunk boundaries.
 */
const CONFIG = parseLlamaConfig({
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 331,
  max_position_embeddings: 16,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
});
const LAYOUT = llamaParamLayout(CONFIG);
const CAP = 16384;
const B = 2, T = 8;

function weights(): Float32Array {
  const p = new Float32Array(LAYOUT.totalSize);
  for (const e of LAYOUT.entries) {
    const z = seededNormals(3, e.name, e.size);
    for (let i = 0; i < e.size; i++) p[e.offset + i] = (e.init === "ones" ? 1 : 0) + 0.2 * z[i];
  }
  return p;
}

/** Forward, backward, gradient norm, one clipped AdamW step and an evaluation, read back. */
async function run(maxBindingBytes?: number, precision: ModelPrecision = "f32") {
  using rt = await GpuRuntime.create({ maxBindingBytes });
  using model = new LlamaModel(rt, {
    precision,
    config: CONFIG,
    layout: LAYOUT,
    weights: weights(),
    microBatch: B,
    seqLen: T,
    slots: 2,
  });
  using adamw = new AdamW(rt, {
    size: LAYOUT.totalSize,
    config: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0.5 },
  });
  const z = seededNormals(9, "tokens", 2 * B * T);
  const ids = Uint32Array.from(z, (x) => Math.floor(Math.abs(x) * 1e4) % CONFIG.vocabSize);
  ids[3] = 0;
  ids[5] = CONFIG.vocabSize - 1; // first row of the first block, last row of the last
  model.writeTokens(0, ids.subarray(0, B * T));
  model.writeTokens(1, ids.subarray(B * T));
  const step = rt.beginStep("train");
  model.encodeZeroGrads(step);
  for (const slot of [0, 1]) model.encodeForwardBackward(step, { slot, lossScale: 1 / 28 });
  const gradSumSq = model.encodeGradSumSq(step);
  await step.submit();
  const stats = await model.readStats();
  const losses = [await model.readLosses(0), await model.readLosses(1)];
  const grads = await model.readGrads();
  const update = rt.beginStep("update");
  adamw.encodeStep(update, {
    params: model.params,
    grads: model.grads,
    lr: 0.01,
    stepNumber: 1,
    gradSumSq,
  });
  model.encodeLoss(update, { slot: 0 });
  await update.submit();
  return {
    blocks: model.headBlocks.map((b) => b.rows),
    stats,
    losses,
    grads,
    params: await model.readParams(),
    evalLosses: await model.readLosses(0),
  };
}

/** Throws naming the first element whose bits differ (a deepEqual diff of 30k floats is slow). */
function assertSameBits(got: Float32Array, want: Float32Array, what: string): void {
  assert.equal(got.length, want.length, `${what}: length`);
  const g = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const w = new Uint32Array(want.buffer, want.byteOffset, want.length);
  const i = g.findIndex((x, j) => x !== w[j]);
  assert.ok(i < 0, `${what}: element ${i} is ${got[i]}, unsplit ${want[i]}`);
}

for (const precision of ["f32", "f16"] as const) {
  Deno.test(`a capped binding splits embedding, LM head, logits, norm and AdamW with identical bits (${precision})`, async () => {
    if (precision === "f16") {
      using probe = await GpuRuntime.create();
      if (!probe.hasF16) return console.warn("skipped: no shader-f16");
    }
    assert.equal(CAP % (CHUNK_ITEMS * 64 * 4), 0);
    const whole = await run(undefined, precision);
    const split = await run(CAP, precision);
    assert.deepEqual(whole.blocks, [331]);
    assert.deepEqual(split.blocks, [128, 128, 75]);
    assert.ok(whole.stats.lossSum > 0 && whole.stats.gradSumSq > 0.25, "the step clips");
    assert.deepEqual(split.stats, whole.stats);
    for (const i of [0, 1]) assertSameBits(split.losses[i], whole.losses[i], `losses ${i}`);
    assertSameBits(split.grads, whole.grads, "gradients");
    assertSameBits(split.params, whole.params, "parameters after AdamW");
    assertSameBits(split.evalLosses, whole.evalLosses, "evaluation losses");
  });
}

Deno.test("a binding cap too small for one aligned block of the head is refused by name", async () => {
  using rt = await GpuRuntime.create({ maxBindingBytes: 256 });
  assert.throws(
    () =>
      new LlamaModel(rt, {
        config: CONFIG,
        layout: LAYOUT,
        weights: weights(),
        microBatch: B,
        seqLen: T,
        slots: 1,
      }),
    /rows of 128 bytes cannot be split into blocks of at most 256 bytes/,
  );
});
