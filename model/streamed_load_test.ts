/**
 * The streamed resume upload writes the bits that reading the weights whole then uploading them
 * writes: one file or shards, one buffer or segments (GpuRuntime's `maxBufferBytes` forces the
 * split on the small model), chunks that cut tensors anywhere; and every header and size is
 * checked before a byte of data is read.
 */
import assert from "node:assert/strict";
import { f32WeightSources, readModelDir, WEIGHTS_FILE, writeModelDir } from "./checkpoint.ts";
import { initParams, llamaParamLayout, paramSegments } from "./params.ts";
import { ParamBuffers } from "./param_buffers.ts";
import { uploadF32Weights } from "./streamed_load.ts";
import { smallLlamaConfig } from "./testing/fixtures.ts";
import type { FloatDtype } from "./safetensors.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);
const WEIGHTS = initParams(LAYOUT, CONFIG, 99);
/** Fits the largest tensor but not two: several segments. */
const CAP = 8192;

function assertSameBits(actual: Float32Array, expected: Float32Array, what: string): void {
  assert.equal(actual.length, expected.length, what);
  const a = new Uint32Array(actual.buffer, actual.byteOffset, actual.length);
  const e = new Uint32Array(expected.buffer, expected.byteOffset, expected.length);
  const first = a.findIndex((bits, i) => bits !== e[i]);
  assert.equal(first, -1, `${what}: first differing float at ${first}`);
}

async function modelDir(options: { dtype?: FloatDtype; maxShardBytes?: number } = {}) {
  const dir = await Deno.makeTempDir();
  await writeModelDir(dir, { config: CONFIG, layout: LAYOUT, weights: WEIGHTS, ...options });
  return dir;
}

async function streamedVsWhole(rt: GpuRuntime, dir: string, chunkFloats?: number) {
  const segments = paramSegments(LAYOUT, rt.limits.maxBufferSize);
  const { weights } = await readModelDir(dir);
  using whole = new ParamBuffers(rt, { label: "whole", layout: LAYOUT, segments, init: weights! });
  using streamed = new ParamBuffers(rt, { label: "streamed", layout: LAYOUT, segments });
  const sources = await f32WeightSources(dir, LAYOUT);
  assert.ok(sources !== null);
  await uploadF32Weights(rt, streamed, sources, { chunkFloats });
  assertSameBits(await streamed.read(), await whole.read(), `${dir} chunk ${chunkFloats}`);
  return segments.length;
}

for (const shards of [false, true]) {
  const what = shards ? "shards" : "one file";
  Deno.test(`streamed load (${what}): the bits of the whole read, one buffer or segments`, async () => {
    const dir = await modelDir(shards ? { maxShardBytes: 6000 } : {});
    try {
      if (shards) await assert.rejects(Deno.stat(`${dir}/${WEIGHTS_FILE}`), Deno.errors.NotFound);
      {
        using rt = await GpuRuntime.create();
        for (const chunk of [undefined, 100]) {
          assert.equal(await streamedVsWhole(rt, dir, chunk), 1);
        }
      }
      using rt = await GpuRuntime.create({ maxBufferBytes: CAP });
      for (const chunk of [undefined, 100]) {
        assert.ok((await streamedVsWhole(rt, dir, chunk)) >= 3);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("streamed load: BF16 weights or no weights give null (read whole instead)", async () => {
  const dir = await modelDir({ dtype: "BF16" });
  try {
    assert.equal(await f32WeightSources(dir, LAYOUT), null);
    await Deno.remove(`${dir}/${WEIGHTS_FILE}`);
    assert.equal(await f32WeightSources(dir, LAYOUT), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("streamed load: a truncated file or another model's shapes are refused by name", async () => {
  const dir = await modelDir();
  const path = `${dir}/${WEIGHTS_FILE}`;
  try {
    const bigger = llamaParamLayout({ ...CONFIG, intermediateSize: CONFIG.intermediateSize * 2 });
    await assert.rejects(
      f32WeightSources(dir, bigger),
      /model\.layers\.0\.mlp\.\w+_proj\.weight" has shape/,
    );
    const sources = (await f32WeightSources(dir, LAYOUT))!;
    const size = (await Deno.stat(path)).size;
    await Deno.truncate(path, size - 4);
    await assert.rejects(f32WeightSources(dir, LAYOUT), (e: Error) => {
      assert.match(e.message, new RegExp(`Cannot load "${path}"`));
      return true;
    });
    // A file that shrinks after its header was checked is refused when it ends, not read past.
    using rt = await GpuRuntime.create();
    const segments = paramSegments(LAYOUT, rt.limits.maxBufferSize);
    using params = new ParamBuffers(rt, { label: "p", layout: LAYOUT, segments });
    await assert.rejects(
      uploadF32Weights(rt, params, sources),
      new RegExp(`Cannot load "${path}": it ended early`),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
