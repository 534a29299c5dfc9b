import assert from "node:assert/strict";
import { countParameters, parseLlamaConfig } from "./hf_config.ts";
import {
  bindingRanges,
  initParams,
  initTensorSlice,
  llamaParamLayout,
  PARAM_ALIGN,
  paramEntry,
  paramSegments,
  paramView,
  seededNormals,
  segmentIndex,
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

Deno.test("paramSegments: one segment when everything fits, else runs of whole tensors", () => {
  const config = parseLlamaConfig({
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    vocab_size: 512,
    max_position_embeddings: 64,
    rms_norm_eps: 1e-5,
  });
  const layout = llamaParamLayout(config);
  assert.deepEqual(paramSegments(layout, layout.totalSize * 4), [
    { start: 0, size: layout.totalSize, first: 0, end: layout.entries.length },
  ]);
  const cap = 512 * 64 * 4; // the embedding and the LM head exactly
  const segments = paramSegments(layout, cap);
  assert.ok(segments.length > 2);
  let next = 0, entry = 0;
  for (const s of segments) {
    assert.equal(s.start, next, "contiguous");
    assert.equal(s.first, entry, "whole tensors, in order");
    assert.equal(s.start, layout.entries[s.first].offset);
    assert.ok(s.size * 4 <= cap, `segment of ${s.size * 4} bytes`);
    // Greedy: the next tensor would not have fitted.
    if (s.end < layout.entries.length) {
      const e = layout.entries[s.end];
      assert.ok((e.offset + Math.ceil(e.size / PARAM_ALIGN) * PARAM_ALIGN - s.start) * 4 > cap);
    }
    next = s.start + s.size;
    entry = s.end;
  }
  assert.equal(next, layout.totalSize);
  assert.equal(entry, layout.entries.length);
  for (const [i, s] of segments.entries()) {
    assert.equal(segmentIndex(segments, s.start), i);
    assert.equal(segmentIndex(segments, s.start + s.size - 1), i);
  }
  assert.throws(() => segmentIndex(segments, layout.totalSize), /outside every parameter segment/);
  assert.throws(
    () => paramSegments(layout, cap - 4),
    /tensor "model\.embed_tokens\.weight" \[512,64\] holds 32768 floats .* more than one GPU buffer/,
  );
});

Deno.test("initTensorSlice: any slice has the bits of that range of initParams", () => {
  const layout = llamaParamLayout(CONFIG);
  const flat = initParams(layout, CONFIG, 99);
  for (const name of ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]) {
    const e = paramEntry(layout, name);
    for (const [start, count] of [[0, e.size], [0, 1], [17, 40], [e.size - 3, 3]]) {
      const out = new Float32Array(count);
      initTensorSlice(e, { config: CONFIG, seed: 99, start }, out);
      const want = flat.subarray(e.offset + start, e.offset + start + count);
      assert.deepEqual(new Uint32Array(out.buffer), new Uint32Array(want.slice().buffer), name);
      // Independently: seededNormals × initializer_range, rounded to f32 (gains are 1).
      const z = seededNormals(99, name, start + count).subarray(start);
      const direct = Float32Array.from(
        z,
        (v) => e.init === "ones" ? 1 : v * CONFIG.initializerRange,
      );
      assert.deepEqual(new Uint32Array(out.buffer), new Uint32Array(direct.buffer), name);
    }
  }
  const e = paramEntry(layout, "model.norm.weight");
  assert.throws(
    () => initTensorSlice(e, { config: CONFIG, seed: 99, start: 60 }, new Float32Array(5)),
    /slice \[60, 65\) is outside tensor "model.norm.weight" of 64/,
  );
});
