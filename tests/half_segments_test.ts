/**
 * Mixed precision with the 16-bit weight copies split into several GPU buffers (GpuRuntime's
 * `maxBufferBytes` forces the split on a 4-layer tiny model) trains with the bits of the same
 * model whose copies are one buffer: losses, gradient norms, gradients, AdamW and DisTrO steps,
 * and a networked DisTrO round, whose forward reads the copies refreshed from the lookahead
 * weights. f16 and bf16 alike. A second split run also caps the storage bindings, so the LM head
 * reads its copy by row blocks and the refresh converts in ranges, inside a segment buffer.
 */
import assert from "node:assert/strict";
import { encodeGradients, trainStep } from "../train/mod.ts";
import {
  halfSegments,
  initParams,
  LlamaModel,
  llamaParamLayout,
  matmulWeightNames,
  type ModelPrecision,
  readLlamaConfig,
} from "../model/mod.ts";
import {
  AdamW,
  aggregateFixed,
  type DistroConfig,
  DistroOptimizer,
  type Optimizer,
} from "../optimizer/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import { seededTokens } from "../model/testing/fixtures.ts";

const TINY = new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname;
/** Four layers: 352 KiB of 16-bit copies, three buffers under the cap. */
const CONFIG = { ...(await readLlamaConfig(TINY)), numLayers: 4 };
const LAYOUT = llamaParamLayout(CONFIG);
/** The largest f32 tensor's bytes: the least the masters need per buffer. */
const CAP = Math.max(...LAYOUT.entries.map((e) => e.size)) * 4;
/** A binding of a quarter of the LM head: it is read in row blocks, converted in ranges. */
const BINDING_CAP = CAP / 4;
const NAMES = matmulWeightNames(CONFIG);
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

type HalfPrecision = Exclude<ModelPrecision, "f32">;
type Kind = "adamw" | "distro";
type Caps = { maxBufferBytes?: number; maxBindingBytes?: number };

/**
 * The split runtimes compared with one buffer for the copies. Small bindings with AdamW only:
 * DisTrO's weight decay binds each tensor whole, so it needs the LM head in one binding.
 */
function setups(kind: Kind): [string, Caps][] {
  const split: [string, Caps] = ["split copies", { maxBufferBytes: CAP }];
  if (kind === "distro") return [split];
  return [split, ["split copies, small bindings", { ...split[1], maxBindingBytes: BINDING_CAP }]];
}

/** A runtime for `precision` (f16 needs shader-f16; null without it). */
async function runtime(precision: HalfPrecision, caps: Caps): Promise<GpuRuntime | null> {
  const rt = await GpuRuntime.create({ ...caps, f16: precision === "f16" });
  if (precision === "f16" && !rt.hasF16) {
    rt[Symbol.dispose]();
    return null;
  }
  return rt;
}

/** Two micro-batches of one sequence for step `step`. */
function batches(step: number): Uint32Array[] {
  return [0, 1].map((i) => seededTokens(100 * step + i, T, CONFIG.vocabSize));
}

function makeParts(rt: GpuRuntime, kind: Kind, precision: HalfPrecision, seed: number) {
  const model = new LlamaModel(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights: initParams(LAYOUT, CONFIG, seed),
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

/** Three steps from seeded weights: statistics, and the gradients, parameters and state left. */
async function run(rt: GpuRuntime, kind: Kind, precision: HalfPrecision) {
  const parts = makeParts(rt, kind, precision, 7);
  using _model = parts.model;
  using _optimizer = parts.optimizer;
  const stats = [];
  for (let s = 1; s <= 3; s++) {
    stats.push(
      await trainStep(parts, {
        stepNumber: s,
        lr: LR,
        microBatches: batches(s),
        clipGradients: true,
      }),
    );
  }
  return {
    stats,
    grads: await parts.model.readGrads(),
    params: await parts.model.readParams(),
    state: await parts.optimizer.readState(),
  };
}

Deno.test("the 16-bit copies of the test model really take several buffers under the cap", () => {
  const copies = halfSegments(LAYOUT, { names: NAMES, maxBufferBytes: CAP });
  assert.ok(copies.length >= 3, `${copies.length} buffers`);
  // The LM head's copy is read in blocks: it is over the capped binding.
  assert.ok(2 * CONFIG.vocabSize * CONFIG.hiddenSize > BINDING_CAP);
});

for (const precision of ["bf16", "f16"] as const) {
  for (const kind of ["adamw", "distro"] as const) {
    Deno.test(`${precision}, ${kind}: steps on split 16-bit copies have the bits of one buffer`, async (t) => {
      const flatRt = await runtime(precision, {});
      if (flatRt === null) {
        t.step({ name: "skipped: no shader-f16", ignore: true, fn: () => {} });
        return;
      }
      using _flatRt = flatRt;
      const flat = await run(flatRt, kind, precision);
      // Clipping is active, so the gradient norm's bits reach the parameters.
      assert.ok(flat.stats[0].gradNorm > 0.5, `grad norm ${flat.stats[0].gradNorm}`);
      for (const [what, caps] of setups(kind)) {
        using rt = (await runtime(precision, caps))!;
        const split = await run(rt, kind, precision);
        assert.deepEqual(split.stats, flat.stats, `${what}: losses and gradient norms`);
        assert.deepEqual(split.grads, flat.grads, `${what}: gradients`);
        assert.deepEqual(split.params, flat.params, `${what}: parameters`);
        assert.deepEqual(split.state, flat.state, `${what}: optimizer state`);
      }
    });
  }

  Deno.test(`${precision}: a networked DisTrO round (forward at the lookahead) on split copies has the bits of one buffer`, async (t) => {
    const round = async (rt: GpuRuntime) => {
      const parts = makeParts(rt, "distro", precision, 3);
      using model = parts.model;
      using opt = parts.optimizer as DistroOptimizer;
      const losses: number[] = [];
      for (let r = 1; r <= 2; r++) {
        const step = rt.beginStep(`round ${r}`);
        opt.encodeLookaheadApart(step, { params: model.params, prevLr: LR, lr: LR });
        const grads = encodeGradients(model, step, batches(r), opt.lookaheadWeights);
        opt.encodeGenerate(step, {
          params: model.params,
          grads: model.grads,
          lr: LR,
          gradSumSq: grads.gradSumSq,
        });
        await step.submit();
        losses.push((await model.readStats(2)).lossSum / grads.predictions);
        const own = await opt.readResult();
        const update = opt.layouts.map((l, n) => aggregateFixed(l, [own[n]]));
        const apply = rt.beginStep(`apply ${r}`);
        opt.encodeApply(apply, { params: model.params, lr: LR, update });
        await apply.submit();
      }
      return {
        losses,
        grads: await model.readGrads(),
        params: await model.readParams(),
        ahead: await opt.lookaheadWeights.read(),
        state: await opt.readState(),
      };
    };
    const flatRt = await runtime(precision, {});
    if (flatRt === null) {
      t.step({ name: "skipped: no shader-f16", ignore: true, fn: () => {} });
      return;
    }
    using _flatRt = flatRt;
    using splitRt = (await runtime(precision, { maxBufferBytes: CAP }))!;
    const flat = await round(flatRt);
    assert.ok(flat.losses.every((l) => l > 0 && Number.isFinite(l)), `losses ${flat.losses}`);
    assert.deepEqual(await round(splitRt), flat);
  });
}
