/**
 * The streamed seeded start writes the bits `initParams` then an upload would, in one buffer or
 * split into segments (GpuRuntime's `maxBufferBytes` forces the split on the tiny model), with
 * chunks that cut tensors anywhere.
 */
import assert from "node:assert/strict";
import { initParams, llamaParamLayout, paramSegments } from "./params.ts";
import { ParamBuffers } from "./param_buffers.ts";
import { LlamaModel } from "./llama.ts";
import { uploadSeededParams } from "./seeded_upload.ts";
import { smallLlamaConfig } from "./testing/fixtures.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);
const SEED = 1234;
/** Fits the largest tiny tensor (48×32 floats) but not two: several segments. */
const CAP = 8192;

function assertSameBits(actual: Float32Array, expected: Float32Array, what: string): void {
  assert.equal(actual.length, expected.length, what);
  const a = new Uint32Array(actual.buffer, actual.byteOffset, actual.length);
  const e = new Uint32Array(expected.buffer, expected.byteOffset, expected.length);
  const first = a.findIndex((bits, i) => bits !== e[i]);
  assert.equal(first, -1, `${what}: first differing float at ${first}`);
}

async function streamedVsUploaded(
  rt: GpuRuntime,
  chunkFloats?: number,
  workers?: number,
): Promise<number> {
  const segments = paramSegments(LAYOUT, rt.limits.maxBufferSize);
  const init = initParams(LAYOUT, CONFIG, SEED);
  using uploaded = new ParamBuffers(rt, { label: "uploaded", layout: LAYOUT, segments, init });
  using streamed = new ParamBuffers(rt, { label: "streamed", layout: LAYOUT, segments });
  await uploadSeededParams(rt, streamed, { config: CONFIG, seed: SEED, chunkFloats, workers });
  assertSameBits(
    await streamed.read(),
    await uploaded.read(),
    `chunk ${chunkFloats}, workers ${workers}`,
  );
  return segments.length;
}

Deno.test("seeded upload: the bits of initParams, in one buffer, whole tensors or chunks", async () => {
  using rt = await GpuRuntime.create();
  for (const chunk of [undefined, 100]) {
    assert.equal(await streamedVsUploaded(rt, chunk), 1);
  }
});

Deno.test("seeded upload: the bits of initParams with the model split into segments", async () => {
  using rt = await GpuRuntime.create({ maxBufferBytes: CAP });
  for (const chunk of [undefined, 100]) {
    const segments = await streamedVsUploaded(rt, chunk);
    assert.ok(segments >= 3, `${segments} segments`);
  }
});

Deno.test("seeded upload: chunks made on worker threads give the same bits", async () => {
  using rt = await GpuRuntime.create({ maxBufferBytes: CAP });
  assert.ok(await streamedVsUploaded(rt, 100, 3) >= 3);
});

Deno.test("seeded upload: a LlamaModel built without weights, then streamed, holds initParams", async () => {
  using rt = await GpuRuntime.create();
  const shape = { config: CONFIG, layout: LAYOUT, microBatch: 1, seqLen: 8, slots: 1 };
  using loaded = new LlamaModel(rt, { ...shape, weights: initParams(LAYOUT, CONFIG, SEED) });
  using seeded = new LlamaModel(rt, shape);
  await uploadSeededParams(rt, seeded.params, { config: CONFIG, seed: SEED });
  assertSameBits(await seeded.readParams(), await loaded.readParams(), "model parameters");
});

Deno.test("seeded upload: a bad chunk size or an aborted signal is refused", async () => {
  using rt = await GpuRuntime.create();
  const segments = paramSegments(LAYOUT, rt.limits.maxBufferSize);
  using params = new ParamBuffers(rt, { label: "p", layout: LAYOUT, segments });
  await assert.rejects(
    uploadSeededParams(rt, params, { config: CONFIG, seed: SEED, chunkFloats: 0 }),
    /chunkFloats must be a positive integer, got 0/,
  );
  const signal = AbortSignal.abort(new Error("stop"));
  await assert.rejects(
    uploadSeededParams(rt, params, { config: CONFIG, seed: SEED, signal }),
    /stop/,
  );
});
