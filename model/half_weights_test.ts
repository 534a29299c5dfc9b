/**
 * The 16-bit weight copies' layout and split: whole tensors at 256-byte offsets, in as many
 * buffers as `maxBufferSize` requires (the parameters' `paramSegments`, two bytes an element).
 * Training on split copies is checked bit for bit in tests/half_segments_test.ts.
 */
import assert from "node:assert/strict";
import {
  HALF_ALIGN,
  halfLayout,
  halfSegments,
  HalfWeights,
  matmulWeightNames,
} from "./half_weights.ts";
import { readLlamaConfig } from "./hf_config.ts";
import { llamaParamLayout } from "./params.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const GiB = 2 ** 30;
const LLAMA_1B = await readLlamaConfig(
  new URL("../config/models/llama-1b/config.json", import.meta.url).pathname,
);
const TINY = await readLlamaConfig(
  new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname,
);

Deno.test("halfLayout: every matmul weight once, in order, at multiples of HALF_ALIGN", () => {
  const layout = llamaParamLayout(TINY);
  const names = matmulWeightNames(TINY);
  const half = halfLayout(layout, names);
  assert.deepEqual(half.entries.map((e) => e.name), names);
  let end = 0;
  for (const e of half.entries) {
    assert.equal(e.offset % HALF_ALIGN, 0, e.name);
    assert.ok(e.offset >= end, `${e.name} overlaps the tensor before it`);
    assert.equal(e.size, layout.byName.get(e.name)!.size);
    end = e.offset + e.size;
  }
  assert.equal(half.totalSize, Math.ceil(end / HALF_ALIGN) * HALF_ALIGN);
});

Deno.test("halfSegments: Llama-3.2-1B's copies take two 2 GiB buffers of whole tensors", () => {
  const layout = llamaParamLayout(LLAMA_1B);
  const names = matmulWeightNames(LLAMA_1B);
  const half = halfLayout(layout, names);
  const maxBufferBytes = 2 * GiB - 1; // lavapipe's maxBufferSize
  assert.ok(half.totalSize * 2 > maxBufferBytes, "the copies are over one buffer");
  const segments = halfSegments(layout, { names, maxBufferBytes });
  assert.equal(segments.length, 2);
  assert.equal(segments[0].start, 0);
  assert.equal(segments[0].first, 0);
  assert.equal(segments.at(-1)!.end, names.length);
  for (const [i, s] of segments.entries()) {
    assert.ok(s.size * 2 <= maxBufferBytes, `segment ${i} holds ${s.size * 2} bytes`);
    assert.equal(s.start, half.entries[s.first].offset, `segment ${i} starts at a tensor`);
    if (i > 0) assert.equal(s.first, segments[i - 1].end, `segment ${i} follows segment ${i - 1}`);
    if (i > 0) assert.equal(s.start, segments[i - 1].start + segments[i - 1].size);
  }
  // One buffer when they fit.
  assert.equal(halfSegments(layout, { names, maxBufferBytes: 4 * GiB }).length, 1);
  // A copy over one buffer is refused by name (as the f32 masters are).
  assert.throws(
    () => halfSegments(layout, { names, maxBufferBytes: 256 * 2 ** 20 }),
    /tensor "model\.embed_tokens\.weight" \[128256,2048\] holds 262668288 16-bit values .* more than one GPU buffer/,
  );
});

Deno.test("HalfWeights under a buffer cap: one buffer per segment, views inside them at 256-byte offsets", async () => {
  const layout = llamaParamLayout(TINY);
  const names = matmulWeightNames(TINY);
  // The LM head's copy (64 KiB) fills a buffer alone.
  const cap = 2 * TINY.vocabSize * TINY.hiddenSize;
  using rt = await GpuRuntime.create({ maxBufferBytes: cap });
  using half = new HalfWeights(rt, { layout, names, type: "bf16" });
  const segments = halfSegments(layout, { names, maxBufferBytes: cap });
  assert.deepEqual(half.segments, segments);
  assert.ok(half.buffers.length >= 3, `${half.buffers.length} buffers`);
  assert.equal(half.buffers.length, segments.length);
  assert.equal(half.bytes, 2 * half.layout.totalSize);
  for (const [s, seg] of segments.entries()) {
    assert.ok(half.buffers[s].size <= cap);
    for (const e of half.layout.entries.slice(seg.first, seg.end)) {
      const v = half.view(e.name);
      assert.equal(v.buffer, half.buffers[s], `${e.name} is in segment ${s}'s buffer`);
      assert.equal(v.offset, (e.offset - seg.start) * 2, e.name);
      assert.equal(v.offset % 256, 0, e.name);
      assert.equal(v.size, e.size * 2);
    }
  }
  // A row block of the LM head: offset from its tensor's start within its segment.
  const head = half.layout.byName.get("lm_head.weight")!;
  const seg = segments.find((s) => head.offset >= s.start && head.offset < s.start + s.size)!;
  const rows = half.view("lm_head.weight", { row0: 128, rows: 64, width: TINY.hiddenSize });
  assert.equal(rows.offset, (head.offset - seg.start + 128 * TINY.hiddenSize) * 2);
  assert.throws(
    () => half.view("lm_head.weight", { row0: 500, rows: 64, width: TINY.hiddenSize }),
    /elements \[32000, 36096\) are outside "lm_head.weight" of 32768/,
  );
  assert.throws(() => half.view("model.norm.weight"), /no bf16 copy of "model\.norm\.weight"/);
});
