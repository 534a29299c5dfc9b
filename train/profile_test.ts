import assert from "node:assert/strict";
import { trainStep } from "./trainer.ts";
import { initParams, LlamaModel, llamaParamLayout, readLlamaConfig } from "../model/mod.ts";
import { AdamW, ADAMW_DEFAULTS } from "../optimizer/mod.ts";
import {
  CPU_PROFILE,
  GPU_PROFILE,
  GpuRuntime,
  splitKPlan,
  type TuningProfile,
} from "../shaders/mod.ts";

const TINY = new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname;

/** Three AdamW steps of the tiny model on `profile`: the losses and the final parameters. */
async function train(profile: TuningProfile) {
  const config = await readLlamaConfig(TINY);
  const layout = llamaParamLayout(config);
  const B = 3, T = 48;
  const tokens = Uint32Array.from({ length: B * T }, (_, i) => (i * 7919 + 5) % config.vocabSize);
  using rt = await GpuRuntime.create({ profile });
  using model = new LlamaModel(rt, {
    config,
    layout,
    weights: initParams(layout, config, 4),
    microBatch: B,
    seqLen: T,
    slots: 1,
  });
  using optimizer = new AdamW(rt, { size: layout.totalSize, config: ADAMW_DEFAULTS });
  const losses: number[] = [];
  for (let s = 1; s <= 3; s++) {
    const r = await trainStep({ rt, model, optimizer }, {
      stepNumber: s,
      lr: 1e-3,
      microBatches: [tokens],
      clipGradients: true,
    });
    losses.push(r.loss);
  }
  return { losses, params: await model.readParams(), chunkRows: model.lmHeadChunkRows };
}

/**
 * The GPU profile with a split-K policy small enough for the tiny model: its weight gradients
 * ([64, 64] over K = 144 tokens) and most other matmuls split K.
 */
const SPLIT_PROFILE: TuningProfile = {
  ...GPU_PROFILE,
  name: "gpu, split-K",
  splitK: { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 16 << 20 },
};

Deno.test("the GPU profile (workgroup rows, large logits chunks, split-K) trains as the CPU profile does", async () => {
  const limits = { maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 256 << 20 };
  const dW = { m: 64, n: 64, k: 3 * 48, batch: 1 };
  assert.equal(splitKPlan(GPU_PROFILE.splitK, GPU_PROFILE.matmul, dW, limits).slices, 1);
  assert.deepEqual(splitKPlan(SPLIT_PROFILE.splitK, SPLIT_PROFILE.matmul, dW, limits), {
    slices: 5,
    sliceK: 32,
  });
  // A logits chunk smaller than B·T on the CPU profile, so the two split the head differently.
  const cpu = await train({ ...CPU_PROFILE, logitsChunkBytes: 64 * 512 * 4 });
  assert.equal(cpu.chunkRows, 64);
  for (const profile of [GPU_PROFILE, SPLIT_PROFILE]) {
    const gpu = await train(profile);
    const again = await train(profile);
    assert.equal(gpu.chunkRows, 3 * 48);
    // Different kernels sum in different orders: close, not equal.
    for (const [i, l] of cpu.losses.entries()) {
      const what = `${profile.name}, step ${i + 1}: ${l} vs ${gpu.losses[i]}`;
      assert.ok(Math.abs(l - gpu.losses[i]) < 1e-5 * l, what);
    }
    let worst = 0;
    for (let i = 0; i < cpu.params.length; i++) {
      worst = Math.max(worst, Math.abs(cpu.params[i] - gpu.params[i]));
    }
    assert.ok(worst < 1e-5, `${profile.name}: parameters differ by ${worst}`);
    // Each profile is deterministic: the same bits on a second run.
    assert.deepEqual(again.losses, gpu.losses, profile.name);
    assert.deepEqual(again.params, gpu.params, profile.name);
  }
});
