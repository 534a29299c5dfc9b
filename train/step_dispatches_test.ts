/**
 * How many kernels one training step launches, per tuning profile: at small batches a step is
 * mostly per-dispatch overhead on a GPU (221 dispatches for the 20M model's 46.9 ms step on an
 * H200), so a kernel that creeps back in shows here. The counts are derived from the model's
 * shape, not copied from a run.
 *
 * @module
 */
import assert from "node:assert/strict";
import { adamwSteps } from "./testing/timed_steps.ts";
import { llamaParamLayout, readLlamaConfig } from "../model/mod.ts";
import {
  CPU_PROFILE,
  GPU_PROFILE,
  GpuRuntime,
  splitKPlan,
  type TuningProfile,
} from "../shaders/mod.ts";

const TINY = new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname;

/**
 * The pipelines of one AdamW step of the tiny model (B 2, T 16 unless given: one logits chunk)
 * on `profile`.
 */
async function stepDispatches(
  profile: TuningProfile,
  shape = { microBatch: 2, seqLen: 16 },
): Promise<string[]> {
  const config = await readLlamaConfig(TINY);
  using rt = await GpuRuntime.create({ profile, profileDispatches: true });
  using steps = adamwSteps(rt, {
    config,
    layout: llamaParamLayout(config),
    ...shape,
  });
  await steps.step();
  return rt.dispatchTimings!.map((t) => t.name);
}

/** train/profile_test.ts's split-K policy: at B 3, T 48 most of the tiny model's products split. */
const SPLIT_PROFILE: TuningProfile = {
  ...GPU_PROFILE,
  name: "gpu, split-K",
  splitK: { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 16 << 20 },
};

for (const profile of [CPU_PROFILE, GPU_PROFILE]) {
  Deno.test(`one training step launches the kernels its layers need (${profile.name} profile)`, async () => {
    const names = await stepDispatches(profile);
    const L = 2; // llama-tiny's layers
    // Products: per layer q, k, v, o, gate, up, down forward and two each backward (dx, dW);
    // the LM head's logits and their two gradients (one chunk at B·T = 32 rows).
    const matmuls = L * 7 * 3 + 3;
    // The CPU profile's register tiling transposes an operand before each product; the GPU
    // profile's tiles read both in place, and split K only where K is long: the LM head's input
    // gradient (K = the vocabulary), a split kernel and its reduce.
    const perMatmul = profile.cpu ? 2 : 1;
    const config = await readLlamaConfig(TINY);
    const head = { m: 2 * 16, n: config.hiddenSize, k: config.vocabSize, batch: 1 };
    const limits = { maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 256 << 20 };
    const headReduces = splitKPlan(profile.splitK, profile.matmul, head, limits).slices > 1 ? 1 : 0;
    assert.equal(headReduces, profile.cpu ? 0 : 1);
    // Per layer, forward: two norms (each adding the residual before it, but layer 0's input),
    // RoPE, attention, SwiGLU; backward: SwiGLU, two norms × (input gradient, which adds the
    // residual's; gain gradient), attention's delta, dq and dk/dv, RoPE back. RoPE turns q and
    // k in one launch on GPUs, in two on CPU adapters (where the paired kernel is slower).
    const ropes = profile.cpu ? 2 : 1;
    const perLayer = 4 + ropes + 8 + ropes;
    // Embedding; final norm; cross-entropy rows and mean; final norm backward (2); embedding
    // backward (the gradient: the model writes the token links from the host, so the kernel's
    // O(N²) links pass does not run); gradient norm (squares, sum); AdamW over all parameters.
    const once = 1 + 1 + 2 + 2 + 1 + 2 + 1;
    assert.equal(
      names.length,
      matmuls * perMatmul + headReduces + L * perLayer + once,
      names.join("\n"),
    );
    assert.equal(names.filter((n) => n.startsWith("embedding/links/")).length, 0);
    assert.equal(names.filter((n) => n.startsWith("embedding/grad/")).length, 1);
    // No separate element-wise passes: the residual adds ride in the norms.
    assert.equal(names.filter((n) => n.startsWith("elementwise/")).length, 0);
    assert.equal(names.filter((n) => n.startsWith("rope/")).length, 2 * ropes * L);
    // A row per workgroup on GPUs, per invocation on CPU adapters.
    const rows = profile.rowReduction === "workgroup" ? "-wide" : "";
    assert.equal(names.filter((n) => n.startsWith(`rmsnorm/forward-add${rows}/`)).length, 2 * L);
    assert.equal(
      names.filter((n) => n.startsWith(`rmsnorm/backward-input-add${rows}/`)).length,
      2 * L,
    );
  });
}

Deno.test("split-K reduces: the weight gradients' in one dispatch, the norms' inputs in the norms", async () => {
  const names = await stepDispatches(SPLIT_PROFILE, { microBatch: 3, seqLen: 48 });
  const L = 2;
  const count = (f: (n: string) => boolean) => names.filter(f).length;
  // A split product is its split kernel and a reduce. The 7 weight gradients of each layer
  // (q, k, v, o, gate, up, down: `tn` over the 144 tokens) defer theirs to one table dispatch at
  // the end of the backward (16 MiB of scratch holds all 14 products' partials, under 3 MiB).
  // Four products per layer read by an RMSNorm leave their partials to it: the forward's o and
  // down projections (the next norm sums them into the residual stream) and the gate and up
  // projections' input gradients (both summed into #dh by the post-attention norm backward).
  // Every other split product (q, k, v, gate, up forward, the other input gradients, the LM
  // head's three) keeps its own reduce.
  const matmulSplits = count((n) => n.startsWith("matmul/") && n.includes("-split/"));
  const reduces = count((n) => n.startsWith("matmul/split-k-reduce/"));
  assert.equal(count((n) => n.startsWith("matmul/split-k-reduce-table/")), 1);
  assert.equal(count((n) => n.startsWith("rmsnorm/forward-add-split-wide/")), 2 * L);
  assert.equal(count((n) => n.startsWith("rmsnorm/forward-add-wide/")), 0);
  assert.equal(count((n) => n.startsWith("rmsnorm/backward-input-add-split2-wide/")), L);
  assert.equal(matmulSplits, reduces + 7 * L + 4 * L, names.join("\n"));
  // The same kernels as the step above without its one split (B·T = 144 rows is still one
  // logits chunk under the GPU profile), plus the reduces: 83 + 23 + 1 = 107 dispatches (45
  // split products, the head's input gradient one since it splits in a head of one block),
  // against 84 + 23 + 1 = 108 while the embedding backward computed its links on the GPU,
  // 84 + 31 + 1 = 116 when the norms' inputs were reduced first, and 84 + 45 = 129 before the
  // weight gradients' reduces were deferred.
  const matmuls = L * 7 * 3 + 3, perLayer = 4 + 1 + 8 + 1, once = 1 + 1 + 2 + 2 + 1 + 2 + 1;
  assert.equal(matmulSplits, 45);
  assert.equal(names.length, matmuls + L * perLayer + once + reduces + 1, names.join("\n"));
  assert.equal(names.length, 107);
});
