import assert from "node:assert/strict";
import { LlamaModel } from "./llama.ts";
import { seededNormals } from "./params.ts";
import type { ModelPrecision } from "./precision.ts";
import { CHUNK_ITEMS, GpuRuntime } from "../shaders/mod.ts";
import { AdamW } from "../optimizer/mod.ts";
import { SPLIT_HEAD_CAP, splitHeadLlama } from "./testing/fixtures.ts";

/**
 * The 2-layer split-head model (testing/fixtures.ts): its cap, 16 KiB, is a whole number of the
 * sum of squares' chunks (CHUNK_ITEMS · 64 floats on the CPU profile), so the gradient norm is
 * split too, on chunk boundaries.
 */
const SPLIT = splitHeadLlama(2);
const { config: CONFIG, layout: LAYOUT, microBatch: B, seqLen: T } = SPLIT;

/** Forward, backward, gradient norm, one clipped AdamW step and an evaluation, read back. */
async function run(maxBindingBytes?: number, precision: ModelPrecision = "f32") {
  using rt = await GpuRuntime.create({ maxBindingBytes });
  using model = new LlamaModel(rt, { ...SPLIT.modelOptions(), precision, slots: 2 });
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
    assert.equal(SPLIT_HEAD_CAP % (CHUNK_ITEMS * 64 * 4), 0);
    const whole = await run(undefined, precision);
    const split = await run(SPLIT_HEAD_CAP, precision);
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
    () => new LlamaModel(rt, { ...SPLIT.modelOptions(), slots: 1 }),
    /rows of 128 bytes cannot be split into blocks of at most 256 bytes/,
  );
});
