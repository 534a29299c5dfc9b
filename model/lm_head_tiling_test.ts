/**
 * The LM head split into vocabulary blocks runs every part on the tiling the profile's table
 * picks for the whole product, not the one a part's own (narrower) shape would pick; and a model
 * step gives the same bits with the table as without it.
 */
import assert from "node:assert/strict";
import { LlamaModel } from "./llama.ts";
import type { LlamaKernels } from "./llama_kernels.ts";
import { shaderKernels } from "./shader_kernels.ts";
import { SPLIT_HEAD_CAP, splitHeadLlama } from "./testing/fixtures.ts";
import {
  GPU_PROFILE,
  GpuRuntime,
  type MatmulArgs,
  type MatmulShapeRule,
  vec4Tiling as vec4,
} from "../shaders/mod.ts";

/** model/llama_split_test.ts's model with one layer: its cap splits the head into 128, 128, 75 rows. */
const SPLIT = splitHeadLlama(1);
const { microBatch: B, seqLen: T } = SPLIT;

/**
 * Over 64 x 64 reference tiles: the whole head's logits `[16, 331]` and weight gradient
 * `[331, 32]` are 6 tiles each, a block (`[16, 128]`, `[128, 32]`) 2: only the wholes qualify.
 */
const TABLE: MatmulShapeRule[] = [
  { name: "nt", layouts: ["nt"], minWorkgroups: 4, tiling: vec4(4, 4, [4, 4], 8) },
  { name: "tn", layouts: ["tn"], minWorkgroups: 4, tiling: vec4(4, 8, [4, 4], 16) },
];
const PROFILE = { ...GPU_PROFILE, matmulByShape: TABLE };

/** One forward and backward of the capped model; every matmul call's arguments recorded. */
async function run(matmulByShape: readonly MatmulShapeRule[]) {
  using rt = await GpuRuntime.create({
    profile: { ...PROFILE, matmulByShape },
    maxBindingBytes: SPLIT_HEAD_CAP,
  });
  using inner = shaderKernels(rt);
  const calls: MatmulArgs[] = [];
  const kernels: LlamaKernels = {
    ...inner,
    matmul: (pass, args) => {
      calls.push(args);
      inner.matmul(pass, args);
    },
    matmulUnreduced: (pass, args, keep) => {
      calls.push(args);
      return inner.matmulUnreduced(pass, args, keep);
    },
  };
  using model = new LlamaModel(rt, { ...SPLIT.modelOptions(), slots: 1, kernels });
  model.writeTokens(0, Uint32Array.from({ length: B * T }, (_, i) => (i * 97 + 5) % 331));
  const step = rt.beginStep("train");
  model.encodeZeroGrads(step);
  model.encodeForwardBackward(step, { slot: 0, lossScale: 1 / 16 });
  await step.submit();
  return {
    blocks: model.headBlocks.map((b) => b.rows),
    calls,
    losses: new Uint32Array((await model.readLosses(0)).buffer),
    grads: new Uint32Array((await model.readGrads()).buffer),
  };
}

Deno.test("LM head parts run the whole product's tiling; the table changes no bit of the step", async () => {
  const picked = await run(TABLE);
  assert.deepEqual(picked.blocks, [128, 128, 75]);
  // The head's parts are the calls that pin a tiling: 3 logits, 3 input-gradient, 3 dW.
  const parts = picked.calls.filter((c) => c.tiling !== undefined);
  assert.equal(parts.length, 9);
  const byLayout = (l: string) => parts.filter((c) => c.layout === l);
  for (const c of byLayout("nt")) assert.deepEqual(c.tiling, TABLE[0].tiling, `logits n ${c.n}`);
  for (const c of byLayout("tn")) assert.deepEqual(c.tiling, TABLE[1].tiling, `dW m ${c.m}`);
  for (const c of byLayout("nn")) assert.deepEqual(c.tiling, GPU_PROFILE.matmul, "input gradient");
  // Alone, a block would pick the reference: pinning is what keeps it on the whole's tiling.
  using rt = await GpuRuntime.create({ profile: PROFILE });
  using k = shaderKernels(rt);
  for (const c of [...byLayout("nt"), ...byLayout("tn")]) {
    assert.deepEqual(k.matmulTiling({ ...c, tiling: undefined }), GPU_PROFILE.matmul);
  }
  const fixed = await run([]);
  assert.ok(fixed.calls.every((c) => c.tiling === undefined || c.tiling === GPU_PROFILE.matmul));
  assert.deepEqual(picked.losses, fixed.losses);
  assert.deepEqual(picked.grads, fixed.grads);
});
