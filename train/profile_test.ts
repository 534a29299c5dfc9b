import assert from "node:assert/strict";
import { encodeGradients, trainStep } from "./trainer.ts";
import { initParams, LlamaModel, llamaParamLayout, readLlamaConfig } from "../model/mod.ts";
import { AdamW, ADAMW_DEFAULTS } from "../optimizer/mod.ts";
import {
  CPU_PROFILE,
  GPU_PROFILE,
  GpuRuntime,
  type MatmulShapeRule,
  pickMatmulTiling,
  SPLIT_K_OFF,
  splitKPlan,
  type TuningProfile,
  vec4Tiling as vec4,
} from "../shaders/mod.ts";

const TINY = new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname;

/**
 * Three AdamW steps of the tiny model on `profile` (with packed documents of `sequenceLengths`
 * per row when given): the losses and the final parameters.
 */
async function train(
  profile: TuningProfile,
  sequenceLengths?: number[][],
  options: { recompute?: boolean } = {},
) {
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
    recompute: options.recompute,
  });
  using optimizer = new AdamW(rt, { size: layout.totalSize, config: ADAMW_DEFAULTS });
  const losses: number[] = [];
  for (let s = 1; s <= 3; s++) {
    const r = await trainStep({ rt, model, optimizer }, {
      stepNumber: s,
      lr: 1e-3,
      microBatches: [sequenceLengths ? { tokens, sequenceLengths } : tokens],
      clipGradients: true,
    });
    losses.push(r.loss);
  }
  return { losses, params: await model.readParams(), chunkRows: model.lmHeadChunkRows };
}

/**
 * Fails unless `got` and `want` hold the same bits, naming the first that differs: not
 * deepEqual's diff, which takes minutes for 100k floats.
 */
function assertSameBits(got: Float32Array, want: Float32Array, what: string): void {
  const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);
  const a = bits(got), b = bits(want);
  const first = a.findIndex((x, i) => x !== b[i]);
  assert.ok(a.length === b.length && first < 0, `${what}: first differs at ${first}`);
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

/**
 * A matmul table for the tiny model (N = 144 tokens, C 64, F 128, V 512), over 64 x 64 reference
 * tiles: `nt` from 4 tiles (the gate/up forward, the logits), `nn` from 3 (every input gradient),
 * `tn` from 2 (the MLP and LM-head weight gradients, which split K under SPLIT_PROFILE's policy).
 * Small tilings of depths 8, 4 and 16, so lavapipe compiles them quickly.
 */
const TINY_TABLE: MatmulShapeRule[] = [
  { name: "nt", layouts: ["nt"], minWorkgroups: 4, tiling: vec4(4, 4, [4, 4], 8) },
  {
    name: "nn",
    layouts: ["nn"],
    minWorkgroups: 3,
    tiling: { strategy: "tiled", rows: 2, cols: 4, workgroup: [8, 4], depth: 4 },
  },
  { name: "tn", layouts: ["tn"], minWorkgroups: 2, tiling: vec4(8, 4, [4, 8], 16) },
];

Deno.test("the GPU profile's matmul table changes no bit of training, split-K off and on", async () => {
  // The table claims some of the model's products and not others.
  const table = { matmul: GPU_PROFILE.matmul, matmulByShape: TINY_TABLE };
  const pick = (layout: "nn" | "nt" | "tn", m: number, n: number, k: number) =>
    pickMatmulTiling(table, { layout, m, n, k, batch: 1 });
  assert.equal(pick("nt", 144, 128, 64), TINY_TABLE[0].tiling, "gate forward");
  assert.equal(pick("nt", 144, 64, 64), GPU_PROFILE.matmul, "q forward");
  assert.equal(pick("tn", 128, 64, 144), TINY_TABLE[2].tiling, "gate dW");
  const limits = { maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 256 << 20 };
  const gateDW = { m: 128, n: 64, k: 144, batch: 1 };
  assert.ok(splitKPlan(SPLIT_PROFILE.splitK, GPU_PROFILE.matmul, gateDW, limits).slices > 1);
  for (const base of [{ ...GPU_PROFILE, splitK: SPLIT_K_OFF }, SPLIT_PROFILE]) {
    const fixed = await train({ ...base, matmulByShape: [] });
    const picked = await train({ ...base, matmulByShape: TINY_TABLE });
    const what = `split-K ${base.splitK.targetWorkgroups === 0 ? "off" : "on"}`;
    assert.deepEqual(picked.losses, fixed.losses, what);
    assert.deepEqual(
      new Uint32Array(picked.params.buffer),
      new Uint32Array(fixed.params.buffer),
      what,
    );
    if (base === SPLIT_PROFILE) {
      const again = await train({ ...base, matmulByShape: TINY_TABLE });
      assert.deepEqual(again.losses, picked.losses, `${what}, rerun`);
      assert.deepEqual(again.params, picked.params, `${what}, rerun`);
    }
  }
});

Deno.test("the GPU profile trains to the same bits with tiled or row attention kernels", async () => {
  // The tiny model: D = 16, two query heads per kv head, T = 48 against tiles of 64 (one tile)
  // and of 16 query rows staging 7 rows (tile boundaries inside every walk); one document per
  // row, and packed documents.
  assert.equal(GPU_PROFILE.attention.strategy, "tiled");
  for (const documents of [undefined, [[20, 1, 27], [48], [9, 39]]]) {
    const rowsAttention = { strategy: "rows", rows: 0, staged: 0 } as const;
    const rows = await train({ ...GPU_PROFILE, attention: rowsAttention }, documents);
    for (const [r, s] of [[64, 64], [16, 7]]) {
      const attention = { strategy: "tiled", rows: r, staged: s } as const;
      const tiled = await train({ ...GPU_PROFILE, attention }, documents);
      const what = `tiles ${r}x${s}, documents ${JSON.stringify(documents)}`;
      assert.deepEqual(tiled.losses, rows.losses, `losses, ${what}`);
      assertSameBits(tiled.params, rows.params, `parameters, ${what}`);
    }
  }
});

Deno.test("handing the step to the GPU a layer at a time changes no bit", async () => {
  for (const base of [GPU_PROFILE, SPLIT_PROFILE]) {
    for (const recompute of [false, true]) {
      const what = `${base.name}, recompute ${recompute}`;
      const whole = await train({ ...base, flushLayers: false }, undefined, { recompute });
      const parts = await train({ ...base, flushLayers: true }, undefined, { recompute });
      assert.deepEqual(parts.losses, whole.losses, `losses, ${what}`);
      assertSameBits(parts.params, whole.params, `parameters, ${what}`);
    }
  }
  // A flush before each forward layer but the first, before the final norm, and before each
  // backward layer: 2L parts before the last submission.
  const config = await readLlamaConfig(TINY);
  const layout = llamaParamLayout(config);
  for (const flushLayers of [true, false]) {
    using rt = await GpuRuntime.create({ profile: { ...GPU_PROFILE, flushLayers } });
    using model = new LlamaModel(rt, {
      config,
      layout,
      weights: initParams(layout, config, 4),
      microBatch: 1,
      seqLen: 16,
      slots: 2,
    });
    const step = rt.beginStep("gradients");
    const tokens = Uint32Array.from({ length: 16 }, (_, i) => i + 3);
    encodeGradients(model, step, [tokens, tokens]);
    assert.equal(step.submissions, flushLayers ? 2 * 2 * config.numLayers : 0);
    await step.submit();
  }
});
