import assert from "node:assert/strict";
import { countParameters, parseLlamaConfig } from "./hf_config.ts";
import {
  bindingRanges,
  initParams,
  llamaParamLayout,
  PARAM_ALIGN,
  paramEntry,
  paramView,
  seededNormals,
} from "./params.ts";

const CONFIG = parseLlamaConfig({
  hidden_size: 64,
  intermediate_size: 96,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 100,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-5,
});

Deno.test("layout: HF names and shapes, aligned, non-overlapping, complete", () => {
  const layout = llamaParamLayout(CONFIG);
  assert.equal(layout.entries.length, 1 + 2 * 9 + 2);
  assert.equal(layout.paramCount, countParameters(CONFIG));
  assert.deepEqual(paramEntry(layout, "model.layers.1.self_attn.k_proj.weight").shape, [32, 64]);
  assert.deepEqual(paramEntry(layout, "model.layers.0.mlp.down_proj.weight").shape, [64, 96]);
  assert.deepEqual(paramEntry(layout, "lm_head.weight").shape, [100, 64]);
  let end = 0;
  for (const e of layout.entries) {
    assert.equal(e.offset % PARAM_ALIGN, 0, e.name);
    assert.ok(e.offset >= end, e.name);
    end = e.offset + e.size;
  }
  assert.ok(end <= layout.totalSize);
  assert.throws(() => paramEntry(layout, "model.layers.2.mlp.up_proj.weight"), /no parameter/);
});

Deno.test("seededNormals: deterministic, seed- and name-dependent, standard normal", () => {
  const a = seededNormals(7, "x", 200_000);
  assert.deepEqual(seededNormals(7, "x", 10), a.subarray(0, 10));
  assert.notDeepEqual(seededNormals(8, "x", 10), a.subarray(0, 10));
  assert.notDeepEqual(seededNormals(7, "y", 10), a.subarray(0, 10));
  let mean = 0, sq = 0, quart = 0;
  for (const z of a) {
    mean += z;
    sq += z * z;
    quart += z ** 4;
  }
  mean /= a.length;
  sq /= a.length;
  quart /= a.length;
  assert.ok(Math.abs(mean) < 0.01, `mean ${mean}`);
  assert.ok(Math.abs(sq - 1) < 0.02, `variance ${sq}`);
  assert.ok(Math.abs(quart - 3) < 0.1, `fourth moment ${quart}`);
});

Deno.test("initParams: std initializer_range for matrices, ones for norms, zero padding", () => {
  const layout = llamaParamLayout(CONFIG);
  const w = initParams(layout, CONFIG, 42);
  assert.deepEqual(w, initParams(layout, CONFIG, 42));
  const q = paramView(layout, w, "model.layers.0.self_attn.q_proj.weight");
  const std = Math.sqrt(q.reduce((s, x) => s + x * x, 0) / q.length);
  assert.ok(Math.abs(std - 0.02) < 0.002, `std ${std}`);
  assert.ok(paramView(layout, w, "model.norm.weight").every((x) => x === 1));
  const used = new Uint8Array(layout.totalSize);
  for (const e of layout.entries) used.fill(1, e.offset, e.offset + e.size);
  w.forEach((x, i) => {
    if (!used[i]) assert.equal(x, 0);
  });
});

Deno.test("bindingRanges: aligned ranges that cover the buffer and fit the binding", () => {
  assert.deepEqual(bindingRanges(1000, 1024), [[0, 256], [256, 256], [512, 256], [768, 232]]);
  assert.deepEqual(bindingRanges(100, 1 << 27), [[0, 100]]);
  assert.deepEqual(bindingRanges(300, 1100), [[0, 256], [256, 44]]); // 275 floats → 256
  assert.throws(() => bindingRanges(10, 200), /too small/);
});
