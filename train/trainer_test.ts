import assert from "node:assert/strict";
import { jsonLogger } from "./log.ts";
import { evaluate, runTraining } from "./trainer.ts";
import {
  initParams,
  LlamaModel,
  llamaParamLayout,
  readLlamaConfig,
  referenceLossAndGrad,
} from "../model/mod.ts";
import { LocalDataProvider } from "../data/mod.ts";
import { AdamW } from "../optimizer/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const TINY = new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname;

/** Writes `tokens` as one little-endian u16 `.ds` file in a fresh folder. */
async function tokenFolder(tokens: number[]): Promise<string> {
  const dir = await Deno.makeTempDir();
  await Deno.writeFile(`${dir}/000.ds`, new Uint8Array(Uint16Array.from(tokens).buffer));
  return dir;
}

Deno.test("a tiny model overfits one short batch with AdamW", async () => {
  const config = await readLlamaConfig(TINY);
  const layout = llamaParamLayout(config);
  const T = 16;
  // Two sequences (plus one spare token the local provider leaves unused), repeated every step.
  const seq = Array.from({ length: 2 * T + 1 }, (_, i) => (i * 7919 + 13) % config.vocabSize);
  const dir = await tokenFolder(seq);
  const data = await LocalDataProvider.open(dir, { seqLen: T, tokenSize: "TwoBytes" });
  try {
    assert.equal(data.numSequences, 2);
    using rt = await GpuRuntime.create();
    // Micro-batches of one sequence: the step's gradient is accumulated over two slots.
    using model = new LlamaModel(rt, {
      config,
      layout,
      weights: initParams(layout, config, 7),
      microBatch: 1,
      seqLen: T,
      slots: 2,
    });
    using optimizer = new AdamW(rt, {
      size: layout.totalSize,
      config: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, maxGradNorm: 1 },
    });
    const lines: string[] = [];
    const { losses } = await runTraining(
      { rt, model, optimizer, data, logger: jsonLogger((l) => lines.push(l)) },
      {
        steps: 80,
        totalBatch: 2,
        microBatch: 1,
        schedule: { kind: "Constant", baseLr: 1e-2, warmupSteps: 0, warmupInitLr: 0 },
        clipGradients: true,
      },
    );
    assert.ok(Math.abs(losses[0] - Math.log(config.vocabSize)) < 0.1, `first loss ${losses[0]}`);
    assert.ok(losses[losses.length - 1] < 0.2, `final loss ${losses[losses.length - 1]}`);
    assert.equal(lines.length, 80);
    const first = JSON.parse(lines[0]);
    assert.equal(first.step, 1);
    assert.ok(first.grad_norm > 0);
  } finally {
    await data.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("training is deterministic: two runs give bit-identical losses and weights", async () => {
  const config = await readLlamaConfig(TINY);
  const layout = llamaParamLayout(config);
  const T = 8;
  const seq = Array.from({ length: 6 * T + 1 }, (_, i) => (i * 104729 + 3) % config.vocabSize);
  const dir = await tokenFolder(seq);
  try {
    using rt = await GpuRuntime.create();
    const run = async () => {
      const data = await LocalDataProvider.open(dir, { seqLen: T, tokenSize: "TwoBytes" });
      using model = new LlamaModel(rt, {
        config,
        layout,
        weights: initParams(layout, config, 5),
        microBatch: 2,
        seqLen: T,
        slots: 2,
      });
      using optimizer = new AdamW(rt, {
        size: layout.totalSize,
        config: { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0.5 },
      });
      try {
        const { losses } = await runTraining(
          { rt, model, optimizer, data, logger: jsonLogger(() => {}) },
          {
            steps: 4,
            totalBatch: 4,
            microBatch: 2,
            schedule: { kind: "Constant", baseLr: 3e-3, warmupSteps: 2, warmupInitLr: 0 },
            clipGradients: true,
          },
        );
        return { losses, weights: await model.readParams() };
      } finally {
        await data.close();
      }
    };
    const a = await run();
    const b = await run();
    assert.deepEqual(a.losses, b.losses);
    assert.deepEqual(a.weights, b.weights);
    assert.ok(a.losses[3] < a.losses[0], `loss did not decrease: ${a.losses}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("evaluate: mean loss over sequences grouped into slots matches the reference", async () => {
  const config = await readLlamaConfig(TINY);
  const layout = llamaParamLayout(config);
  const T = 8;
  const seq = Array.from({ length: 4 * T + 1 }, (_, i) => (i * 7 + 1) % config.vocabSize);
  const dir = await tokenFolder(seq);
  const data = await LocalDataProvider.open(dir, { seqLen: T, tokenSize: "TwoBytes" });
  try {
    using rt = await GpuRuntime.create();
    const weights = initParams(layout, config, 2);
    // Two slots of one sequence: three sequences take two submissions (2 + 1).
    using model = new LlamaModel(rt, {
      config,
      layout,
      weights,
      microBatch: 1,
      seqLen: T,
      slots: 2,
    });
    const loss = await evaluate({ rt, model, data }, { sequences: 3 });
    const tokens = (await data.getSamples({ start: 0, end: 2 })).tokens;
    const ref = referenceLossAndGrad(config, layout, weights, { tokens, count: 3, seqLen: T });
    assert.ok(Math.abs(loss - ref.loss) < 1e-5 * ref.loss, `${loss} vs ${ref.loss}`);
    await assert.rejects(() => evaluate({ rt, model, data }, { sequences: 5 }), /the data has 4/);
  } finally {
    await data.close();
    await Deno.remove(dir, { recursive: true });
  }
});
