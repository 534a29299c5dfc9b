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
import { CPU_PROFILE, GPU_PROFILE, GpuRuntime, type TuningProfile } from "../shaders/mod.ts";

const TINY = new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname;

/** The pipelines of one AdamW step of the tiny model (B 2, T 16: one logits chunk) on `profile`. */
async function stepDispatches(profile: TuningProfile): Promise<string[]> {
  const config = await readLlamaConfig(TINY);
  using rt = await GpuRuntime.create({ profile, profileDispatches: true });
  using steps = adamwSteps(rt, {
    config,
    layout: llamaParamLayout(config),
    microBatch: 2,
    seqLen: 16,
  });
  await steps.step();
  return rt.dispatchTimings!.map((t) => t.name);
}

for (const profile of [CPU_PROFILE, GPU_PROFILE]) {
  Deno.test(`one training step launches the kernels its layers need (${profile.name} profile)`, async () => {
    const names = await stepDispatches(profile);
    const L = 2; // llama-tiny's layers
    // Products: per layer q, k, v, o, gate, up, down forward and two each backward (dx, dW);
    // the LM head's logits and their two gradients (one chunk at B·T = 32 rows).
    const matmuls = L * 7 * 3 + 3;
    // The CPU profile's register tiling transposes an operand before each product; the GPU
    // profile's tiles read both in place (no split-K on products this small).
    const perMatmul = profile.cpu ? 2 : 1;
    // Per layer, forward: two norms (each adding the residual before it, but layer 0's input),
    // RoPE, attention, SwiGLU; backward: SwiGLU, two norms × (input gradient, which adds the
    // residual's; gain gradient), attention's delta, dq and dk/dv, RoPE back. RoPE turns q and
    // k in one launch on GPUs, in two on CPU adapters (where the paired kernel is slower).
    const ropes = profile.cpu ? 2 : 1;
    const perLayer = 4 + ropes + 8 + ropes;
    // Embedding; final norm; cross-entropy rows and mean; final norm backward (2); embedding
    // backward (row links, gradient); gradient norm (squares, sum); AdamW over all parameters.
    const once = 1 + 1 + 2 + 2 + 2 + 2 + 1;
    assert.equal(names.length, matmuls * perMatmul + L * perLayer + once, names.join("\n"));
    // No separate element-wise passes: the residual adds ride in the norms.
    assert.equal(names.filter((n) => n.startsWith("elementwise/")).length, 0);
    assert.equal(names.filter((n) => n.startsWith("rope/")).length, 2 * ropes * L);
    assert.equal(names.filter((n) => n.startsWith("rmsnorm/forward-add/")).length, 2 * L);
    assert.equal(names.filter((n) => n.startsWith("rmsnorm/backward-input-add/")).length, 2 * L);
  });
}
