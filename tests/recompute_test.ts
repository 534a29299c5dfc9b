/**
 * Activation recomputation (`--recompute`, model/recompute.ts) changes memory and time, never
 * bits: the same gradients, losses and parameters with and without it, for the gradient pass,
 * AdamW steps and DisTrO rounds (whose forward and backward read the lookahead weights), on both
 * tuning profiles and, where the adapter has shader-f16, in mixed precision.
 */
import assert from "node:assert/strict";
import {
  initParams,
  LlamaModel,
  llamaParamLayout,
  type ModelPrecision,
  ParamBuffers,
  parseLlamaConfig,
} from "../model/mod.ts";
import { AdamW, encodePayload } from "../optimizer/mod.ts";
import { encodeGradients, trainStep } from "../train/mod.ts";
import { NetworkTrainer } from "../client/mod.ts";
import { LocalDataProvider } from "../data/mod.ts";
import { CPU_PROFILE, GPU_PROFILE, GpuRuntime, type TuningProfile } from "../shaders/mod.ts";

/** Three layers: the backward rebuilds a middle layer as well as the first. */
const CONFIG = parseLlamaConfig({
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 64,
  max_position_embeddings: 32,
});
const LAYOUT = llamaParamLayout(CONFIG);
const B = 2, T = 12;
const PROFILES: [string, TuningProfile][] = [["CPU", CPU_PROFILE], ["GPU", GPU_PROFILE]];

function tokens(seed: number, count: number): Uint32Array {
  return Uint32Array.from({ length: count }, (_, i) => (i * 7919 + seed * 104729) % 64);
}

/** The same floats to the bit (NaN payloads and the sign of zero included). */
function assertSameBits(a: Float32Array, b: Float32Array, what: string): void {
  assert.equal(a.length, b.length, what);
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  const i = ua.findIndex((v, j) => v !== ub[j]);
  assert.equal(i, -1, `${what} differ first at ${i}: ${a[i]} vs ${b[i]}`);
}

function models(rt: GpuRuntime, precision: ModelPrecision): [LlamaModel, LlamaModel] {
  const options = {
    config: CONFIG,
    layout: LAYOUT,
    weights: initParams(LAYOUT, CONFIG, 3),
    microBatch: B,
    seqLen: T,
    slots: 2,
    precision,
  };
  return [
    new LlamaModel(rt, options),
    new LlamaModel(rt, { ...options, recompute: true }),
  ];
}

for (const [name, profile] of PROFILES) {
  Deno.test(`recompute (${name} profile): the same gradients and losses, from the parameters or apart weights`, async () => {
    using rt = await GpuRuntime.create({ profile });
    const precisions: ModelPrecision[] = rt.hasF16 ? ["f32", "f16"] : ["f32"];
    for (const precision of precisions) {
      const [plain, recomputed] = models(rt, precision);
      using _plain = plain;
      using _recomputed = recomputed;
      assert.ok(
        recomputed.activationBytes < plain.activationBytes,
        `${recomputed.activationBytes} vs ${plain.activationBytes}`,
      );
      // Weights held apart from the parameters, as DisTrO's lookahead is.
      const apart = new ParamBuffers(rt, {
        label: "apart weights",
        layout: LAYOUT,
        segments: plain.params.segments,
        init: initParams(LAYOUT, CONFIG, 4).map((w, i) => w * (1 + (i % 5) / 50)),
      });
      try {
        for (const weights of [undefined, apart]) {
          const run = async (model: LlamaModel) => {
            const step = rt.beginStep("recompute test");
            encodeGradients(model, step, [tokens(1, B * T), tokens(2, B * T)], weights);
            await step.submit();
            return {
              grads: await model.readGrads(),
              losses: [await model.readLosses(0), await model.readLosses(1)],
            };
          };
          const a = await run(plain), b = await run(recomputed);
          const what = `${precision}, ${weights ? "apart weights" : "parameters"}`;
          assert.ok(a.grads.some((g) => g !== 0), "the gradients are not all zero");
          assertSameBits(a.grads, b.grads, `gradients (${what})`);
          assertSameBits(a.losses[0], b.losses[0], `slot 0 losses (${what})`);
          assertSameBits(a.losses[1], b.losses[1], `slot 1 losses (${what})`);
        }
      } finally {
        apart[Symbol.dispose]();
      }
    }
  });
}

for (const [name, profile] of PROFILES) {
  Deno.test(`recompute (${name} profile): AdamW steps give the same losses and parameters`, async () => {
    using rt = await GpuRuntime.create({ profile });
    const [plain, recomputed] = models(rt, "f32");
    using _plain = plain;
    using _recomputed = recomputed;
    const run = async (model: LlamaModel) => {
      using optimizer = new AdamW(rt, {
        size: LAYOUT.totalSize,
        config: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 1 },
      });
      const results = [];
      for (let s = 1; s <= 3; s++) {
        const microBatches = [tokens(2 * s, B * T), tokens(2 * s + 1, B * T)];
        const r = await trainStep(
          { rt, model, optimizer },
          { stepNumber: s, lr: 1e-2, microBatches, clipGradients: true },
        );
        results.push(r.loss, r.gradNorm);
      }
      return { results: Float32Array.from(results), params: await model.readParams() };
    };
    const a = await run(plain), b = await run(recomputed);
    assertSameBits(a.results, b.results, "losses and gradient norms");
    assertSameBits(a.params, b.params, "parameters");
  });
}

for (const [name, profile] of PROFILES) {
  Deno.test({
    name: `recompute (${name} profile): DisTrO rounds give the same payloads and parameters`,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "recompute-" });
      try {
        const data16 = Uint16Array.from(tokens(5, 8 * T));
        await Deno.writeFile(`${dir}/train.bin`, new Uint8Array(data16.buffer));
        const data = await LocalDataProvider.open(dir, { seqLen: T, tokenSize: "TwoBytes" });
        using rt = await GpuRuntime.create({ profile });
        const make = (recompute: boolean) =>
          new NetworkTrainer({
            rt,
            config: CONFIG,
            layout: LAYOUT,
            weights: initParams(LAYOUT, CONFIG, 6),
            seqLen: T,
            microBatch: B,
            maxBatch: 2 * B,
            distro: {
              chunk: 16,
              topk: 4,
              decay: 0.999,
              weightDecay: 0.1,
              clipGradNorm: 1,
              quantize1bit: false,
            },
            recompute,
          });
        using plain = make(false);
        using recomputed = make(true);
        try {
          // Two rounds: the second trains at a lookahead off the parameters.
          for (const [step, lr, prevLr] of [[1, 1e-2, 0], [2, 1e-2, 1e-2]]) {
            const batch = { start: (step - 1) * 2 * B, end: step * 2 * B - 1 };
            const ra = await plain.train({ step, batch, lr, prevLr, data });
            const rb = await recomputed.train({ step, batch, lr, prevLr, data });
            assert.equal(ra.loss, rb.loss, `step ${step} loss`);
            assert.deepEqual(
              encodePayload(rb.result, recomputed.expectation),
              encodePayload(ra.result, plain.expectation),
              `step ${step} payload`,
            );
            assert.equal(await plain.apply([ra.result], lr), true);
            assert.equal(await recomputed.apply([rb.result], lr), true);
            assert.equal(await recomputed.paramsHash(), await plain.paramsHash(), `step ${step}`);
          }
        } finally {
          await data.close();
        }
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
