import assert from "node:assert/strict";
import fc from "fast-check";
import { CPU_PROFILE, GPU_PROFILE, type MatmulTiling, type SplitKPolicy } from "./profile.ts";
import {
  MAX_SPLIT_K_SCRATCH,
  pinnedSplitK,
  splitKPlan,
  type SplitKShape,
  validateSplitKPolicy,
} from "./split_k.ts";

/** Limits that never bind (an H200 binds 4 GiB). */
const ROOMY = { maxStorageBufferBindingSize: 2 ** 32 - 4, maxBufferSize: 2 ** 40 };

function gpuPlan(m: number, n: number, k: number, batch = 1) {
  return splitKPlan(GPU_PROFILE.splitK, GPU_PROFILE.matmul, { m, n, k, batch }, ROOMY);
}

Deno.test("GPU profile: the 20M model's weight gradients split into enough workgroups", () => {
  // 16 x 1024 tokens: [256, 256] has 16 tiles of 64 x 64 → 32 slices of 512 tokens (512
  // workgroups); the MLP's [768, 256] and [256, 768] have 48 → 16 slices of 1024 (768).
  assert.deepEqual(gpuPlan(256, 256, 16384), { slices: 32, sliceK: 512 });
  assert.deepEqual(gpuPlan(768, 256, 16384), { slices: 16, sliceK: 1024 });
  assert.deepEqual(gpuPlan(256, 768, 16384), { slices: 16, sliceK: 1024 });
  // 4 x 256 tokens: K holds only four slices of minSliceK (256).
  assert.deepEqual(gpuPlan(256, 256, 1024), { slices: 4, sliceK: 256 });
});

Deno.test("GPU profile: wide outputs and short K stay unsplit", () => {
  assert.deepEqual(gpuPlan(2048, 2048, 16384), { slices: 1, sliceK: 16384 }, "1024 tiles");
  assert.deepEqual(gpuPlan(32000, 256, 4160), { slices: 1, sliceK: 4160 }, "LM head dW");
  assert.deepEqual(gpuPlan(256, 256, 511), { slices: 1, sliceK: 511 }, "under two slices");
  assert.deepEqual(gpuPlan(256, 256, 16384, 32), { slices: 1, sliceK: 16384 }, "batch 32");
});

Deno.test("CPU profile and register tilings never split", () => {
  const shape = { m: 16, n: 16, k: 1 << 20, batch: 1 };
  assert.deepEqual(splitKPlan(CPU_PROFILE.splitK, CPU_PROFILE.matmul, shape, ROOMY), {
    slices: 1,
    sliceK: 1 << 20,
  });
  // The GPU policy with a register tiling (a bench's --tiling): only the tiled kernel splits.
  assert.equal(splitKPlan(GPU_PROFILE.splitK, CPU_PROFILE.matmul, shape, ROOMY).slices, 1);
});

const SMALL: SplitKPolicy = { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 1 << 20 };
const TILED = GPU_PROFILE.matmul;

Deno.test("ragged K: slices are whole tile depths, the last short, fewer when they run out", () => {
  // 64 slices wanted; K = 65 holds four of 16; ⌈65 / 4⌉ = 17 rounds up to 32: three slices.
  assert.deepEqual(splitKPlan(SMALL, TILED, { m: 8, n: 8, k: 65, batch: 1 }, ROOMY), {
    slices: 3,
    sliceK: 32,
  });
  // K = 1000 under the GPU policy: three slices of 256 fit, so S = 2 of 512 (the last 488).
  assert.deepEqual(gpuPlan(256, 256, 1000), { slices: 2, sliceK: 512 });
});

Deno.test("the scratch budget, the adapter's limits and the grid cap the slices", () => {
  const shape = { m: 256, n: 256, k: 16384, batch: 1 }; // 256 KiB of partials per slice
  const policy = { ...GPU_PROFILE.splitK, scratchBytes: 1 << 20 };
  assert.equal(splitKPlan(policy, TILED, shape, ROOMY).slices, 4);
  const tight = { maxStorageBufferBindingSize: 1 << 20, maxBufferSize: 1 << 30 };
  assert.equal(splitKPlan(GPU_PROFILE.splitK, TILED, shape, tight).slices, 4);
  const tinyBuffer = { maxStorageBufferBindingSize: 1 << 30, maxBufferSize: 600 << 10 };
  assert.equal(splitKPlan(GPU_PROFILE.splitK, TILED, shape, tinyBuffer).slices, 2);
  // 20,000 one-element products: the z grid dimension (batch · slices ≤ 65535) allows 3 → 2.
  const huge = { targetWorkgroups: 1 << 20, minSliceK: 16, scratchBytes: 1 << 20 };
  assert.equal(splitKPlan(huge, TILED, { m: 1, n: 1, k: 4096, batch: 20000 }, ROOMY).slices, 2);
});

Deno.test("property: every plan covers K exactly once, in slices the policy allows", () => {
  const tiling = fc.record({
    strategy: fc.constant("tiled" as const),
    rows: fc.integer({ min: 1, max: 8 }),
    cols: fc.integer({ min: 1, max: 8 }),
    workgroup: fc.tuple(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 16 })),
    depth: fc.integer({ min: 1, max: 32 }),
  });
  const policy = fc.record({
    targetWorkgroups: fc.integer({ min: 0, max: 4096 }),
    minSliceK: fc.integer({ min: 1, max: 1024 }),
    scratchBytes: fc.integer({ min: 1, max: MAX_SPLIT_K_SCRATCH }),
  });
  const shape = fc.record({
    m: fc.integer({ min: 1, max: 1000 }),
    n: fc.integer({ min: 1, max: 1000 }),
    k: fc.integer({ min: 1, max: 1 << 20 }),
    batch: fc.integer({ min: 1, max: 8 }),
  });
  fc.assert(
    fc.property(policy, tiling, shape, (p: SplitKPolicy, t: MatmulTiling, s: SplitKShape) => {
      const plan = splitKPlan(p, t, s, ROOMY);
      if (plan.slices === 1) {
        assert.equal(plan.sliceK, s.k);
        return;
      }
      assert.ok(plan.slices >= 2);
      assert.equal(plan.sliceK % t.depth, 0, "whole tile depths");
      assert.ok((plan.slices - 1) * plan.sliceK < s.k && s.k <= plan.slices * plan.sliceK);
      assert.ok(plan.sliceK >= p.minSliceK, "slices hold at least minSliceK");
      assert.ok(plan.slices * s.batch * s.m * s.n * 4 <= p.scratchBytes, "scratch budget");
      assert.ok(plan.slices * s.batch <= 65535, "grid");
      const tiles = Math.ceil(s.m / (t.rows * t.workgroup[1])) *
        Math.ceil(s.n / (t.cols * t.workgroup[0])) * s.batch;
      assert.ok(tiles < p.targetWorkgroups, "only outputs of fewer tiles than the target split");
      assert.ok(tiles * (plan.slices - 1) < 2 * p.targetWorkgroups, "no more than needed");
    }),
    { numRuns: 2000, seed: 20261127 },
  );
});

Deno.test("policies are validated by field", () => {
  validateSplitKPolicy(GPU_PROFILE.splitK);
  validateSplitKPolicy(CPU_PROFILE.splitK);
  const ok = GPU_PROFILE.splitK;
  assert.throws(() => validateSplitKPolicy({ ...ok, targetWorkgroups: -1 }), /targetWorkgroups/);
  assert.throws(() => validateSplitKPolicy({ ...ok, minSliceK: 0 }), /minSliceK/);
  assert.throws(
    () => validateSplitKPolicy({ ...ok, scratchBytes: MAX_SPLIT_K_SCRATCH + 1 }),
    /scratchBytes must be an integer in 1\.\.134217728/,
  );
});

Deno.test("a pinned slice length is honoured or refused with the reason", () => {
  const shape = { m: 256, n: 256, k: 1000, batch: 1 };
  assert.deepEqual(pinnedSplitK(1000, TILED, shape, ROOMY), { slices: 1, sliceK: 1000 });
  assert.deepEqual(pinnedSplitK(4096, CPU_PROFILE.matmul, shape, ROOMY), {
    slices: 1,
    sliceK: 1000,
  });
  assert.deepEqual(pinnedSplitK(96, TILED, shape, ROOMY), { slices: 11, sliceK: 96 });
  assert.throws(() => pinnedSplitK(100, TILED, shape, ROOMY), /multiple of the tiling depth 16/);
  assert.throws(() => pinnedSplitK(96, CPU_PROFILE.matmul, shape, ROOMY), /only the workgroup/);
  assert.throws(() => pinnedSplitK(0, TILED, shape, ROOMY), /positive integer/);
  const tight = { maxStorageBufferBindingSize: 1 << 20, maxBufferSize: 1 << 30 };
  assert.throws(() => pinnedSplitK(96, TILED, shape, tight), /bytes of partial sums, over/);
});
