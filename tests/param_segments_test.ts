/**
 * A model whose parameters, gradients and optimizer state are split into several GPU buffers
 * (GpuRuntime's `maxBufferBytes` forces the split on the tiny model) trains with the bits of the
 * same model in one buffer each: AdamW and DisTrO steps, the parameter digest, and a checkpoint
 * saved from the split run and resumed.
 */
import assert from "node:assert/strict";
import {
  openTrainingCheckpoint,
  optimizerGeometry,
  restoreTrainingStreamed,
} from "../train/mod.ts";
import {
  captureTraining,
  readTrainingCheckpoint,
  restoreTraining,
  writeTrainingCheckpoint,
} from "../train/testing/whole_checkpoint.ts";
import { initParams, ParamBuffers, paramSegments, uploadF32Weights } from "../model/mod.ts";
import {
  DIGEST_BLOCK_WORDS,
  digestBytes,
  GPU_PROFILE,
  GpuDigest,
  GpuRuntime,
  granuleStretches,
} from "../shaders/mod.ts";
import {
  CHUNKING,
  type Kind,
  LR,
  networkedDistroRounds,
  SEGMENT_CAP,
  TINY_CONFIG,
  TINY_LAYOUT,
  type TinyParts,
  tinyParts,
  trainerAfterStep2,
  trainSteps,
} from "./support/tiny_training.ts";

/** Everything a run leaves on the GPU, read back. */
async function snapshot(parts: TinyParts) {
  return {
    params: await parts.model.readParams(),
    grads: await parts.model.readGrads(),
    state: await parts.optimizer.readState(),
  };
}

/** A fresh run of `count` steps: how many buffers the parameters took, statistics, results. */
async function run(rt: GpuRuntime, kind: Kind, count: number, precision: "f32" | "f16" = "f32") {
  const parts = tinyParts(rt, kind, { precision });
  using _model = parts.model;
  using _optimizer = parts.optimizer;
  const stats = await trainSteps(parts, 1, count);
  return { segments: parts.model.params.buffers.length, stats, ...(await snapshot(parts)) };
}

Deno.test("the tiny model under the test cap really is split, and reductions straddle segments", async () => {
  using rt = await GpuRuntime.create({ maxBufferBytes: SEGMENT_CAP });
  assert.equal(rt.limits.maxBufferSize, SEGMENT_CAP);
  const segments = paramSegments(TINY_LAYOUT, SEGMENT_CAP);
  assert.ok(segments.length >= 3, `${segments.length} segments`);
  for (const granule of [64 * rt.profile.workgroupSize, DIGEST_BLOCK_WORDS]) {
    assert.ok(
      granuleStretches(segments, granule).some((s) => s.parts.length > 1),
      `a granule of ${granule} straddles two segments`,
    );
  }
});

for (const kind of ["adamw", "distro"] as const) {
  Deno.test(`${kind} steps on parameters split into segments have the bits of one buffer`, async () => {
    using flatRt = await GpuRuntime.create();
    using splitRt = await GpuRuntime.create({ maxBufferBytes: SEGMENT_CAP });
    const flat = await run(flatRt, kind, 3);
    const split = await run(splitRt, kind, 3);
    assert.equal(flat.segments, 1);
    assert.ok(split.segments >= 3, `${split.segments} segments`);
    // Clipping is active, so the gradient norm's bits reach the parameters.
    assert.ok(flat.stats[0].gradNorm > 0.5, `grad norm ${flat.stats[0].gradNorm}`);
    assert.deepEqual(split.stats, flat.stats, "losses and gradient norms");
    assert.deepEqual(split.grads, flat.grads, "gradients");
    assert.deepEqual(split.params, flat.params, "parameters");
    assert.deepEqual(split.state, flat.state, "optimizer state");
  });
}

Deno.test("f16 precision: AdamW steps on split parameters have the bits of one buffer", async (t) => {
  using flatRt = await GpuRuntime.create();
  // At twice the cap the f16 copies (208 KiB) are one buffer and θ is still split (copies split
  // into several buffers: tests/half_segments_test.ts).
  using splitRt = await GpuRuntime.create({ maxBufferBytes: 2 * SEGMENT_CAP });
  if (!flatRt.hasF16) {
    t.step({ name: "skipped: no shader-f16", ignore: true, fn: () => {} });
    return;
  }
  const flat = await run(flatRt, "adamw", 2, "f16");
  const split = await run(splitRt, "adamw", 2, "f16");
  assert.ok(split.segments >= 3);
  assert.deepEqual(split, { ...flat, segments: split.segments });
});

Deno.test("a networked DisTrO round (lookahead apart, apply) on split parameters has the bits of one buffer", async () => {
  using flatRt = await GpuRuntime.create();
  using splitRt = await GpuRuntime.create({ maxBufferBytes: SEGMENT_CAP });
  const flat = await networkedDistroRounds(flatRt);
  const split = await networkedDistroRounds(splitRt);
  assert.deepEqual(split, flat);
});

Deno.test("a networked DisTrO round handed to the GPU a layer at a time has the bits of one submission", async () => {
  // The client's order in one step: lookahead apart (its constants written first), gradients at
  // the lookahead (flushed layer by layer), generate (constants written after the flushes).
  using whole = await GpuRuntime.create({ profile: { ...GPU_PROFILE, flushLayers: false } });
  using parts = await GpuRuntime.create({ profile: { ...GPU_PROFILE, flushLayers: true } });
  assert.deepEqual(await networkedDistroRounds(parts), await networkedDistroRounds(whole));
});

Deno.test("the parameter digest is the same over one buffer or several segments", async () => {
  using flatRt = await GpuRuntime.create();
  using splitRt = await GpuRuntime.create({ maxBufferBytes: SEGMENT_CAP });
  const weights = initParams(TINY_LAYOUT, TINY_CONFIG, 11);
  const host = digestBytes(new Uint8Array(weights.buffer));
  const digestOn = async (rt: GpuRuntime) => {
    using params = new ParamBuffers(rt, {
      label: "params",
      layout: TINY_LAYOUT,
      segments: paramSegments(TINY_LAYOUT, rt.limits.maxBufferSize),
      init: weights,
    });
    using digest = new GpuDigest(rt);
    return { buffers: params.buffers.length, digest: await digest.digest(params.buffers) };
  };
  const flat = await digestOn(flatRt);
  const split = await digestOn(splitRt);
  assert.equal(flat.buffers, 1);
  assert.ok(split.buffers >= 3);
  assert.equal(flat.digest, host);
  assert.equal(split.digest, host);
});

/**
 * Trains a fresh `kind` run on `rt` for 2 steps and writes its checkpoint into `dir` through the
 * whole-array reference (`maxShardBytes`: weights in several files).
 */
async function saveAfterStep2(
  rt: GpuRuntime,
  kind: Kind,
  dir: string,
  options: { maxShardBytes?: number } = {},
): Promise<void> {
  const parts = tinyParts(rt, kind);
  using _model = parts.model;
  using _optimizer = parts.optimizer;
  await trainSteps(parts, 1, 2);
  const captured = await captureTraining(parts, { lastLr: LR });
  await writeTrainingCheckpoint(dir, {
    config: TINY_CONFIG,
    layout: TINY_LAYOUT,
    weights: captured.weights,
    optimizer: captured.optimizer,
    trainer: trainerAfterStep2(kind, "F32"),
  }, {
    geometry: optimizerGeometry(TINY_LAYOUT, kind, CHUNKING),
    maxShardBytes: options.maxShardBytes,
  });
}

for (const kind of ["adamw", "distro"] as const) {
  Deno.test(`${kind}: a checkpoint saved from split parameters resumes with the bits of a straight run`, async () => {
    using flatRt = await GpuRuntime.create();
    using splitRt = await GpuRuntime.create({ maxBufferBytes: SEGMENT_CAP });
    const straight = await run(flatRt, kind, 4);
    const dir = await Deno.makeTempDir();
    try {
      await saveAfterStep2(splitRt, kind, dir);
      const saved = await readTrainingCheckpoint(dir, { optimizer: kind, chunking: CHUNKING });
      const parts = tinyParts(splitRt, kind, { weights: saved.weights });
      using _model = parts.model;
      using _optimizer = parts.optimizer;
      assert.ok(parts.model.params.buffers.length >= 3);
      await restoreTraining(parts, { optimizer: saved.optimizer, lastLr: LR });
      const stats = await trainSteps(parts, 3, 4);
      assert.deepEqual(stats, straight.stats.slice(2), "losses and gradient norms after resume");
      const resumed = await snapshot(parts);
      assert.deepEqual(resumed.params, straight.params, "parameters");
      assert.deepEqual(resumed.state, straight.state, "optimizer state");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

for (const kind of ["adamw", "distro"] as const) {
  Deno.test(`${kind}: the streamed resume equals the whole-array resume bit for bit, one buffer or segments`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      {
        using rt = await GpuRuntime.create();
        // Shards: the weights come from several files.
        await saveAfterStep2(rt, kind, dir, { maxShardBytes: 40_000 });
      }
      for (const cap of [undefined, SEGMENT_CAP]) {
        using rt = await GpuRuntime.create(cap === undefined ? {} : { maxBufferBytes: cap });
        const whole = await readTrainingCheckpoint(dir, { optimizer: kind, chunking: CHUNKING });
        const old = tinyParts(rt, kind, { weights: whole.weights });
        using _oldModel = old.model;
        using _oldOptimizer = old.optimizer;
        await restoreTraining(old, { optimizer: whole.optimizer, lastLr: LR });

        const opened = await openTrainingCheckpoint(dir, { optimizer: kind, chunking: CHUNKING });
        assert.ok(Array.isArray(opened.weights), "f32 weights are left in their files");
        const streamed = tinyParts(rt, kind, { weights: new Float32Array(TINY_LAYOUT.totalSize) });
        using _model = streamed.model;
        using _optimizer = streamed.optimizer;
        assert.equal(streamed.model.params.buffers.length > 1, cap !== undefined);
        // Chunks of 100 floats cut every tensor and segment anywhere.
        await uploadF32Weights(rt, streamed.model.params, opened.weights, { chunkFloats: 100 });
        await restoreTrainingStreamed(streamed, opened.optimizer, { lastLr: LR, chunkFloats: 100 });

        const what = `${cap === undefined ? "one buffer" : "segments"}`;
        const [a, b] = [await snapshot(streamed), await snapshot(old)];
        assert.deepEqual(a.params, b.params, `${what}: parameters after resume`);
        assert.deepEqual(a.state, b.state, `${what}: optimizer state after resume`);
        assert.deepEqual(
          await trainSteps(streamed, 3, 4),
          await trainSteps(old, 3, 4),
          `${what}: losses`,
        );
        const [c, d] = [await snapshot(streamed), await snapshot(old)];
        assert.deepEqual(c.params, d.params, `${what}: parameters after two more steps`);
        assert.deepEqual(c.state, d.state, `${what}: optimizer state after two more steps`);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
