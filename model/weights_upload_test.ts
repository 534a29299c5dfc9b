import assert from "node:assert/strict";
import { GpuRuntime } from "../shaders/mod.ts";
import { ParamBuffers } from "./param_buffers.ts";
import { llamaParamLayout, paramSegments } from "./params.ts";
import { smallLlamaConfig, spreadWeights } from "./testing/fixtures.ts";
import { uploadParams, uploadProgressLines } from "./weights_upload.ts";

Deno.test("chunked uploads fill every segment with the weights' bits, reporting progress", async () => {
  using rt = await GpuRuntime.create();
  const layout = llamaParamLayout(smallLlamaConfig());
  // Segments of at most 16 KiB: the upload must follow them, a chunk never crossing one.
  const segments = paramSegments(layout, 16 << 10);
  assert.ok(segments.length > 1);
  using params = new ParamBuffers(rt, { label: "params", layout, segments });
  const weights = spreadWeights(layout, 3, 0.5);
  const seen: [number, number][] = [];
  await uploadParams(rt, params, weights, {
    chunkFloats: 1000,
    onProgress: (done, total) => seen.push([done, total]),
  });
  assert.deepEqual(new Uint32Array((await params.read()).buffer), new Uint32Array(weights.buffer));
  assert.ok(seen.every(([d], i) => i === 0 || d > seen[i - 1][0]), "progress only grows");
  assert.deepEqual(seen.at(-1), [layout.totalSize * 4, layout.totalSize * 4]);
  assert.ok(seen.length >= Math.ceil(layout.totalSize / 1000));

  await assert.rejects(
    uploadParams(rt, params, weights.subarray(1)),
    /weights hold \d+ floats, the layout needs/,
  );
  await assert.rejects(
    uploadParams(rt, params, weights, { chunkFloats: 0 }),
    /chunkFloats must be a positive integer/,
  );
  const stop = new AbortController();
  stop.abort(new Error("stopped"));
  await assert.rejects(uploadParams(rt, params, weights, { signal: stop.signal }), /stopped/);
});

Deno.test("upload progress: a line at most every interval, and always the last", () => {
  const lines: string[] = [];
  let t = 0;
  const progress = uploadProgressLines("upload", (l) => lines.push(l), () => t, 5000);
  const GiB = 2 ** 30;
  for (const [at, done] of [[1000, 1], [6000, 2], [7000, 3], [12000, 4]]) {
    t = at;
    progress(done * GiB, 4 * GiB);
  }
  assert.deepEqual(lines, [
    "upload: 2.00 of 4.00 GiB (50%), 358 MB/s",
    "upload: 4.00 of 4.00 GiB (100%), 358 MB/s",
  ]);
  const small: string[] = [];
  let clock = 0;
  const up = uploadProgressLines("up", (l) => small.push(l), () => clock);
  clock = 1000;
  up(3 * 2 ** 20, 3 * 2 ** 20);
  assert.deepEqual(small, ["up: 3.00 of 3.00 MiB (100%), 3 MB/s"]);
});
