/**
 * A model whose parameters, gradients and optimizer state are split into several GPU buffers
 * (GpuRuntime's `maxBufferBytes` forces the split on the tiny model) trains with the bits of the
 * same model in one buffer each: AdamW and DisTrO steps, the parameter digest, and a checkpoint
 * saved from the split run and resumed.
 */
import assert from "node:assert/strict";
import {
  encodeGradients,
  openTrainingCheckpoint,
  optimizerGeometry,
  restoreTrainingStreamed,
  trainStep,
} from "../train/mod.ts";
import {
  captureTraining,
  readTrainingCheckpoint,
  restoreTraining,
  writeTrainingCheckpoint,
} from "../train/testing/whole_checkpoint.ts";
import {
  initParams,
  LlamaModel,
  llamaParamLayout,
  ParamBuffers,
  paramSegments,
  readLlamaConfig,
  uploadF32Weights,
} from "../model/mod.ts";
import {
  AdamW,
  aggregateFixed,
  type DistroConfig,
  DistroOptimizer,
  type Optimizer,
} from "../optimizer/mod.ts";
import {
  DIGEST_BLOCK_WORDS,
  digestBytes,
  GpuDigest,
  GpuRuntime,
  granuleStretches,
} from "../shaders/mod.ts";
import { seededTokens } from "../model/testing/fixtures.ts";

const TINY = new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname;
const CONFIG = await readLlamaConfig(TINY);
const LAYOUT = llamaParamLayout(CONFIG);
/** The largest tensor's bytes: the embedding and the LM head get a buffer each. */
const CAP = Math.max(...LAYOUT.entries.map((e) => e.size)) * 4;
const T = 8;
const LR = 1e-2;
const ADAMW = { beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.1, maxGradNorm: 0.5 };
const DISTRO: DistroConfig = {
  chunk: 32,
  topk: 8,
  decay: 0.999,
  weightDecay: 0.1,
  clipGradNorm: 0.5,
  quantize1bit: false,
};

/** Two micro-batches of one sequence for step `step`. */
function batches(step: number): Uint32Array[] {
  return [0, 1].map((i) => seededTokens(100 * step + i, T, CONFIG.vocabSize));
}

type Kind = "adamw" | "distro";

function makeParts(
  rt: GpuRuntime,
  kind: Kind,
  weights: Float32Array,
  precision: "f32" | "f16" = "f32",
) {
  const model = new LlamaModel(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights,
    microBatch: 1,
    seqLen: T,
    slots: 2,
    precision,
  });
  const segments = model.params.segments;
  const optimizer: Optimizer = kind === "adamw"
    ? new AdamW(rt, { size: LAYOUT.totalSize, segments, config: ADAMW })
    : new DistroOptimizer(rt, {
      params: LAYOUT.entries,
      size: LAYOUT.totalSize,
      segments,
      config: DISTRO,
    });
  return { rt, model, optimizer };
}

/** Steps `from..to` (1-based) on the parts; the step statistics. */
async function steps(parts: ReturnType<typeof makeParts>, from: number, to: number) {
  const stats = [];
  for (let s = from; s <= to; s++) {
    stats.push(
      await trainStep(parts, {
        stepNumber: s,
        lr: LR,
        microBatches: batches(s),
        clipGradients: true,
      }),
    );
  }
  return stats;
}

/** Everything a run leaves on the GPU, read back. */
async function snapshot(parts: ReturnType<typeof makeParts>) {
  return {
    params: await parts.model.readParams(),
    grads: await parts.model.readGrads(),
    state: await parts.optimizer.readState(),
  };
}

/** A fresh run of `count` steps: how many buffers the parameters took, statistics, results. */
async function run(rt: GpuRuntime, kind: Kind, count: number, precision: "f32" | "f16" = "f32") {
  const parts = makeParts(rt, kind, initParams(LAYOUT, CONFIG, 7), precision);
  using _model = parts.model;
  using _optimizer = parts.optimizer;
  const stats = await steps(parts, 1, count);
  return { segments: parts.model.params.buffers.length, stats, ...(await snapshot(parts)) };
}

Deno.test("the tiny model under the test cap really is split, and reductions straddle segments", async () => {
  using rt = await GpuRuntime.create({ maxBufferBytes: CAP });
  assert.equal(rt.limits.maxBufferSize, CAP);
  const segments = paramSegments(LAYOUT, CAP);
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
    using splitRt = await GpuRuntime.create({ maxBufferBytes: CAP });
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
  // The f16 weight copies stay one buffer (208 KiB here): a cap that holds them still splits θ.
  using splitRt = await GpuRuntime.create({ maxBufferBytes: 2 * CAP });
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
  const round = async (rt: GpuRuntime) => {
    const parts = makeParts(rt, "distro", initParams(LAYOUT, CONFIG, 3));
    using model = parts.model;
    using opt = parts.optimizer as DistroOptimizer;
    for (let r = 1; r <= 2; r++) {
      const step = rt.beginStep(`round ${r}`);
      opt.encodeLookaheadApart(step, { params: model.params, prevLr: LR, lr: LR });
      const { gradSumSq } = encodeGradients(model, step, batches(r), opt.lookaheadWeights);
      opt.encodeGenerate(step, { params: model.params, grads: model.grads, lr: LR, gradSumSq });
      await step.submit();
      const own = await opt.readResult();
      const update = opt.layouts.map((l, n) => aggregateFixed(l, [own[n]]));
      const apply = rt.beginStep(`apply ${r}`);
      opt.encodeApply(apply, { params: model.params, lr: LR, update });
      await apply.submit();
    }
    return {
      params: await model.readParams(),
      ahead: await opt.lookaheadWeights.read(),
      state: await opt.readState(),
      own: await opt.readOwn(),
    };
  };
  using flatRt = await GpuRuntime.create();
  using splitRt = await GpuRuntime.create({ maxBufferBytes: CAP });
  const flat = await round(flatRt);
  const split = await round(splitRt);
  assert.deepEqual(split, flat);
});

Deno.test("the parameter digest is the same over one buffer or several segments", async () => {
  using flatRt = await GpuRuntime.create();
  using splitRt = await GpuRuntime.create({ maxBufferBytes: CAP });
  const weights = initParams(LAYOUT, CONFIG, 11);
  const host = digestBytes(new Uint8Array(weights.buffer));
  const digestOn = async (rt: GpuRuntime) => {
    using params = new ParamBuffers(rt, {
      label: "params",
      layout: LAYOUT,
      segments: paramSegments(LAYOUT, rt.limits.maxBufferSize),
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

for (const kind of ["adamw", "distro"] as const) {
  Deno.test(`${kind}: a checkpoint saved from split parameters resumes with the bits of a straight run`, async () => {
    using flatRt = await GpuRuntime.create();
    using splitRt = await GpuRuntime.create({ maxBufferBytes: CAP });
    const straight = await run(flatRt, kind, 4);
    const dir = await Deno.makeTempDir();
    try {
      const chunking = { chunk: DISTRO.chunk, topk: DISTRO.topk };
      const geometry = optimizerGeometry(LAYOUT, kind, chunking);
      {
        const parts = makeParts(splitRt, kind, initParams(LAYOUT, CONFIG, 7));
        using _model = parts.model;
        using _optimizer = parts.optimizer;
        await steps(parts, 1, 2);
        const captured = await captureTraining(parts, { lastLr: LR });
        await writeTrainingCheckpoint(dir, {
          config: CONFIG,
          layout: LAYOUT,
          weights: captured.weights,
          optimizer: captured.optimizer,
          trainer: {
            step: 2,
            optimizer: kind,
            totalBatch: 2,
            sequenceLength: T,
            data: { sequences: 8, shuffleSeed: null, nextSequence: 4 },
            lrSchedule: { kind: "Constant", baseLr: LR, warmupSteps: 0, warmupInitLr: 0 },
            weightsDtype: "F32",
          },
        }, { geometry });
      }
      const saved = await readTrainingCheckpoint(dir, { optimizer: kind, chunking });
      const parts = makeParts(splitRt, kind, saved.weights);
      using _model = parts.model;
      using _optimizer = parts.optimizer;
      assert.ok(parts.model.params.buffers.length >= 3);
      await restoreTraining(parts, { optimizer: saved.optimizer, lastLr: LR });
      const stats = await steps(parts, 3, 4);
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
    const chunking = { chunk: DISTRO.chunk, topk: DISTRO.topk };
    const dir = await Deno.makeTempDir();
    try {
      {
        using rt = await GpuRuntime.create();
        const parts = makeParts(rt, kind, initParams(LAYOUT, CONFIG, 7));
        using _model = parts.model;
        using _optimizer = parts.optimizer;
        await steps(parts, 1, 2);
        const captured = await captureTraining(parts, { lastLr: LR });
        await writeTrainingCheckpoint(dir, {
          config: CONFIG,
          layout: LAYOUT,
          weights: captured.weights,
          optimizer: captured.optimizer,
          trainer: {
            step: 2,
            optimizer: kind,
            totalBatch: 2,
            sequenceLength: T,
            data: { sequences: 8, shuffleSeed: null, nextSequence: 4 },
            lrSchedule: { kind: "Constant", baseLr: LR, warmupSteps: 0, warmupInitLr: 0 },
            weightsDtype: "F32",
          },
          // Shards: the weights come from several files.
        }, { geometry: optimizerGeometry(LAYOUT, kind, chunking), maxShardBytes: 40_000 });
      }
      for (const cap of [undefined, CAP]) {
        using rt = await GpuRuntime.create(cap === undefined ? {} : { maxBufferBytes: cap });
        const whole = await readTrainingCheckpoint(dir, { optimizer: kind, chunking });
        const old = makeParts(rt, kind, whole.weights);
        using _oldModel = old.model;
        using _oldOptimizer = old.optimizer;
        await restoreTraining(old, { optimizer: whole.optimizer, lastLr: LR });

        const opened = await openTrainingCheckpoint(dir, { optimizer: kind, chunking });
        assert.ok(Array.isArray(opened.weights), "f32 weights are left in their files");
        const streamed = makeParts(rt, kind, new Float32Array(LAYOUT.totalSize));
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
        assert.deepEqual(await steps(streamed, 3, 4), await steps(old, 3, 4), `${what}: losses`);
        const [c, d] = [await snapshot(streamed), await snapshot(old)];
        assert.deepEqual(c.params, d.params, `${what}: parameters after two more steps`);
        assert.deepEqual(c.state, d.state, `${what}: optimizer state after two more steps`);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
