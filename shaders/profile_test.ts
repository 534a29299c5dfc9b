import assert from "node:assert/strict";
import {
  attentionStrategyFor,
  type AttentionTiling,
  CPU_PROFILE,
  GPU_ATTENTION_TILES,
  GPU_PROFILE,
} from "./profile.ts";

Deno.test("GPU profile: tiled attention for heads up to D = 32, rows from D = 64", () => {
  // Measured on an H200: the tiles won at D = 32 (the 20M model) and lost at D = 64 (the 1B).
  for (const d of [4, 16, 32]) {
    assert.equal(attentionStrategyFor(GPU_PROFILE.attention, d), "tiled");
  }
  for (const d of [36, 64, 128, 256]) {
    assert.equal(attentionStrategyFor(GPU_PROFILE.attention, d), "rows", `D = ${d}`);
  }
  // Below the bound the profile's own tiles run, one query row per invocation.
  assert.deepEqual(GPU_PROFILE.attention, { ...GPU_ATTENTION_TILES, maxHeadDim: 32 });
  assert.equal(GPU_PROFILE.attention.queries ?? 1, 1);
});

Deno.test("CPU profile: the row kernels at every head size", () => {
  assert.deepEqual(CPU_PROFILE.attention, { strategy: "rows", rows: 0, staged: 0 });
  for (const d of [4, 32, 64, 256]) {
    assert.equal(attentionStrategyFor(CPU_PROFILE.attention, d), "rows");
  }
});

Deno.test("a tiled tiling without maxHeadDim runs every head size tiled; a rows one never", () => {
  for (const d of [4, 32, 64, 256]) {
    assert.equal(attentionStrategyFor(GPU_ATTENTION_TILES, d), "tiled");
    const bounded: AttentionTiling = { strategy: "rows", rows: 0, staged: 0, maxHeadDim: 256 };
    assert.equal(attentionStrategyFor(bounded, d), "rows");
  }
  const at64: AttentionTiling = { ...GPU_ATTENTION_TILES, maxHeadDim: 64 };
  assert.equal(attentionStrategyFor(at64, 64), "tiled");
  assert.equal(attentionStrategyFor(at64, 68), "rows");
});
