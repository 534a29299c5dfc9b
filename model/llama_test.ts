import assert from "node:assert/strict";
import { LlamaModel } from "./llama.ts";
import { ParamBuffers } from "./param_buffers.ts";
import { shaderKernels } from "./shader_kernels.ts";
import { llamaParamLayout, type ParamLayout } from "./params.ts";
import type { LlamaConfig } from "./hf_config.ts";
import { referenceLossAndGrad } from "./reference.ts";
import { seededTokens, smallLlamaConfig, spreadWeights } from "./testing/fixtures.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);

/** Loss and every gradient of the GPU model against the f64 reference, two micro-batches. */
async function checkAgainstReference(CONFIG: LlamaConfig, LAYOUT: ParamLayout): Promise<void> {
  using rt = await GpuRuntime.create();
  const B = 2, T = 7;
  const w = spreadWeights(LAYOUT, 11, 0.3);
  using kernels = shaderKernels(rt, { maxBindingBytes: 4096 });
  using model = new LlamaModel(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights: w,
    microBatch: B,
    seqLen: T,
    slots: 2,
    // Tiny bindings force the gradient norm to be summed over many ranges.
    kernels,
  });
  const all = seededTokens(5, 2 * B * T, CONFIG.vocabSize);
  const predictions = 2 * B * (T - 1);
  model.writeTokens(0, all.subarray(0, B * T));
  model.writeTokens(1, all.subarray(B * T));
  const step = rt.beginStep("test step");
  model.encodeZeroGrads(step);
  model.encodeForwardBackward(step, { slot: 0, lossScale: 1 / predictions });
  model.encodeForwardBackward(step, { slot: 1, lossScale: 1 / predictions });
  model.encodeGradSumSq(step);
  await step.submit();
  const { lossSum, gradSumSq } = await model.readStats();
  const grads = await model.readGrads();

  const ref = referenceLossAndGrad(CONFIG, LAYOUT, w, { tokens: all, count: 2 * B, seqLen: T });
  assert.ok(
    Math.abs(lossSum / predictions - ref.loss) < 1e-5 * ref.loss,
    `loss ${lossSum / predictions} vs ${ref.loss}`,
  );
  // f32 accumulation over at most a few hundred terms of O(1) values: relative error ~1e-6; the
  // bound is 1e-4 of each tensor's largest gradient.
  for (const e of LAYOUT.entries) {
    const want = ref.grads.subarray(e.offset, e.offset + e.size);
    const got = grads.subarray(e.offset, e.offset + e.size);
    const scale = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    assert.ok(scale > 1e-6, `${e.name}: reference gradient is all zero`);
    for (let i = 0; i < e.size; i++) {
      assert.ok(
        Math.abs(got[i] - want[i]) <= 1e-4 * scale,
        `${e.name}[${i}]: GPU ${got[i]}, reference ${want[i]} (scale ${scale})`,
      );
    }
  }
  let sq = 0;
  for (const g of ref.grads) sq += g * g;
  assert.ok(Math.abs(gradSumSq - sq) < 1e-4 * sq, `grad sumsq ${gradSumSq} vs ${sq}`);
}

Deno.test("GPU loss and gradients match the f64 reference over two accumulated micro-batches", async () => {
  await checkAgainstReference(CONFIG, LAYOUT);
});

Deno.test("tied embeddings: GPU loss and gradients match the f64 reference, bits repeat", async () => {
  const tied = smallLlamaConfig({ tie_word_embeddings: true });
  const layout = llamaParamLayout(tied);
  assert.equal(layout.byName.has("lm_head.weight"), false);
  await checkAgainstReference(tied, layout);
  // The embedding gradient (head part, then lookup part) has the same bits every time, in f32
  // and with f16 matmul copies (where the head reads the embedding's f16 copy).
  using rt = await GpuRuntime.create();
  const B = 2, T = 5;
  const w = spreadWeights(layout, 31, 0.3);
  const tokens = seededTokens(6, B * T, tied.vocabSize);
  for (const precision of ["f32", "f16"] as const) {
    const run = async () => {
      using model = new LlamaModel(rt, {
        config: tied,
        layout,
        weights: w,
        microBatch: B,
        seqLen: T,
        slots: 1,
        precision,
      });
      model.writeTokens(0, tokens);
      const step = rt.beginStep(`tied ${precision}`);
      model.encodeZeroGrads(step);
      model.encodeForwardBackward(step, { slot: 0, lossScale: 1 });
      await step.submit();
      return { loss: (await model.readStats(1)).lossSum, grads: await model.readGrads() };
    };
    const first = await run();
    const second = await run();
    assert.equal(first.loss, second.loss, precision);
    assert.deepEqual(first.grads, second.grads, precision);
    assert.ok(Number.isFinite(first.loss) && first.loss > 0, precision);
  }
});

Deno.test("llama3 RoPE scaling: GPU loss and gradients match the f64 reference", async () => {
  // D = 8, θ = 1000: wavelengths 6.3, 35, 199 and 1117 against a pre-training context of 64 (kept
  // below 64/4, divided by the factor above 64/1): one pair kept, one blended, two divided.
  const scaled = smallLlamaConfig({
    rope_scaling: {
      rope_type: "llama3",
      factor: 4,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 64,
    },
  });
  assert.equal(scaled.ropeScaling?.ropeType, "llama3");
  await checkAgainstReference(scaled, llamaParamLayout(scaled));
});

Deno.test("encodeLoss gives the reference loss without touching the gradients", async () => {
  using rt = await GpuRuntime.create();
  const B = 3, T = 6;
  const w = spreadWeights(LAYOUT, 4, 0.3);
  using model = new LlamaModel(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights: w,
    microBatch: B,
    seqLen: T,
    slots: 1,
  });
  const batch = seededTokens(8, B * T, CONFIG.vocabSize);
  model.writeTokens(0, batch);
  const step = rt.beginStep("eval");
  model.encodeZeroGrads(step);
  model.encodeLoss(step, { slot: 0 });
  await step.submit();
  const { lossSum } = await model.readStats(1);
  const ref = referenceLossAndGrad(CONFIG, LAYOUT, w, { tokens: batch, count: B, seqLen: T });
  const loss = lossSum / (B * (T - 1));
  assert.ok(Math.abs(loss - ref.loss) < 1e-5 * ref.loss, `loss ${loss} vs ${ref.loss}`);
  assert.ok((await model.readGrads()).every((g) => g === 0));
});

Deno.test("forward/backward on a separate weights buffer equals a model holding those weights", async () => {
  using rt = await GpuRuntime.create();
  const B = 2, T = 5;
  const own = spreadWeights(LAYOUT, 21, 0.3);
  const other = spreadWeights(LAYOUT, 22, 0.3);
  const tokens = seededTokens(9, B * T, CONFIG.vocabSize);
  for (const precision of ["f32", "f16"] as const) {
    const options = { config: CONFIG, layout: LAYOUT, microBatch: B, seqLen: T, slots: 1 };
    using a = new LlamaModel(rt, { ...options, weights: own, precision });
    using b = new LlamaModel(rt, { ...options, weights: other, precision });
    using weights = new ParamBuffers(rt, {
      label: "lookahead weights",
      layout: LAYOUT,
      segments: a.params.segments,
      init: other,
    });
    const run = async (m: LlamaModel, w?: ParamBuffers) => {
      m.writeTokens(0, tokens);
      const step = rt.beginStep(`weights ${precision}`);
      m.encodeZeroGrads(step);
      m.encodeForwardBackward(step, { slot: 0, lossScale: 1, weights: w });
      await step.submit();
      return { loss: (await m.readStats(1)).lossSum, grads: await m.readGrads() };
    };
    const got = await run(a, weights);
    const want = await run(b);
    assert.equal(got.loss, want.loss, `${precision}: loss`);
    assert.deepEqual(got.grads, want.grads, `${precision}: gradients bit-identical`);
    assert.deepEqual(await a.readParams(), own, `${precision}: the parameters are untouched`);
    // Back on its own parameters, the model computes its own loss again.
    assert.notEqual((await run(a)).loss, want.loss, `${precision}: own weights again`);
    const step = rt.beginStep("bad weights");
    assert.throws(
      () => a.encodeForwardBackward(step, { slot: 0, lossScale: 1, weights: a.grads }),
      /must be laid out and split as the parameters, other than the gradients/,
    );
    step[Symbol.dispose]();
  }
});

Deno.test("LlamaModel checks its inputs", async () => {
  using rt = await GpuRuntime.create();
  const opts = {
    config: CONFIG,
    layout: LAYOUT,
    weights: spreadWeights(LAYOUT, 1, 0.3),
    microBatch: 1,
    seqLen: 4,
    slots: 1,
  };
  assert.throws(() => new LlamaModel(rt, { ...opts, seqLen: 65 }), /max_position_embeddings/);
  assert.throws(
    () => new LlamaModel(rt, { ...opts, weights: new Float32Array(3) }),
    /weights hold 3/,
  );
  using model = new LlamaModel(rt, opts);
  assert.throws(() => model.writeTokens(0, new Uint32Array([1, 2, 3])), /expected 1×4 = 4 tokens/);
  assert.throws(
    () => model.writeTokens(0, new Uint32Array([1, 2, 37, 3])),
    /token 37 at position 2/,
  );
  assert.throws(() => model.writeTokens(1, new Uint32Array(4)), /slot 1 outside/);
});
