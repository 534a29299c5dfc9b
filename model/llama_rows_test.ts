/**
 * The GPU model on rows with labels, position ids and packed documents (Psyche's Preprocessed
 * columns), against the f64 reference; and their defaults keep the bits of plain token rows.
 */
import assert from "node:assert/strict";
import { LlamaModel } from "./llama.ts";
import { llamaParamLayout } from "./params.ts";
import { referenceLossAndGrad } from "./reference.ts";
import type { RowExtras } from "./rows.ts";
import { seededTokens, smallLlamaConfig, spreadWeights } from "./testing/fixtures.ts";
import { GpuRuntime } from "../shaders/mod.ts";

const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);
const B = 2, T = 7;

/** Loss and gradients of one step over the slots' rows (lossScale 1/predictions, 0 if none). */
async function gpuStep(
  rt: GpuRuntime,
  weights: Float32Array,
  slots: { tokens: Uint32Array; extras?: RowExtras }[],
  options: { recompute?: boolean } = {},
) {
  using model = new LlamaModel(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights,
    microBatch: B,
    seqLen: T,
    slots: slots.length,
    recompute: options.recompute,
  });
  let predictions = 0;
  slots.forEach((s, i) => predictions += model.writeTokens(i, s.tokens, s.extras));
  const step = rt.beginStep("rows step");
  model.encodeZeroGrads(step);
  const lossScale = predictions > 0 ? 1 / predictions : 0;
  for (let i = 0; i < slots.length; i++) model.encodeForwardBackward(step, { slot: i, lossScale });
  await step.submit();
  const { lossSum } = await model.readStats();
  return { lossSum, predictions, grads: await model.readGrads() };
}

/** Every gradient within 1e-4 of its tensor's largest reference gradient. */
function assertGradsClose(got: Float32Array, want: Float64Array): void {
  for (const e of LAYOUT.entries) {
    const w = want.subarray(e.offset, e.offset + e.size);
    const scale = w.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    assert.ok(scale > 1e-6, `${e.name}: reference gradient is all zero`);
    for (let i = 0; i < e.size; i++) {
      const g = got[e.offset + i];
      assert.ok(
        Math.abs(g - w[i]) <= 1e-4 * scale,
        `${e.name}[${i}]: GPU ${g}, reference ${w[i]} (scale ${scale})`,
      );
    }
  }
}

Deno.test("masked labels, restarting positions and packed documents match the f64 reference", async () => {
  using rt = await GpuRuntime.create();
  const w = spreadWeights(LAYOUT, 11, 0.3);
  const tokens = seededTokens(5, 2 * B * T, CONFIG.vocabSize);
  // Slot 0: row 0 packs documents of 3 and 4 tokens, the first one's prompt (2 tokens) masked;
  // row 1 packs 2, 2 and 3, the middle document fully masked.
  const labels0 = Int32Array.from(tokens.subarray(0, B * T));
  for (const i of [0, 1, 9, 10]) labels0[i] = -100;
  const positions0 = Int32Array.from([0, 1, 2, 0, 1, 2, 3, 0, 1, 0, 1, 0, 1, 2]);
  const lengths0 = [[3, 4], [2, 2, 3]];
  // Slot 1: plain rows (the defaults), given explicitly to the reference only.
  const slots = [
    {
      tokens: tokens.subarray(0, B * T),
      extras: { labels: labels0, positionIds: positions0, sequenceLengths: lengths0 },
    },
    { tokens: tokens.subarray(B * T) },
  ];
  const got = await gpuStep(rt, w, slots);
  const labels = Int32Array.from(tokens);
  labels.set(labels0);
  const positionIds = Int32Array.from({ length: 2 * B * T }, (_, i) => i % T);
  positionIds.set(positions0);
  const ref = referenceLossAndGrad(CONFIG, LAYOUT, w, {
    tokens,
    count: 2 * B,
    seqLen: T,
    labels,
    positionIds,
    sequenceLengths: [...lengths0, [T], [T]],
  });
  // T − 1 = 6 predictions per row, less the masked labels 1 (row 0), 9 and 10 (row 1): 5 + 4 + 12.
  assert.equal(got.predictions, 21);
  assert.equal(ref.predictions, 21);
  const loss = got.lossSum / got.predictions;
  assert.ok(Math.abs(loss - ref.loss) < 1e-5 * ref.loss, `loss ${loss} vs ${ref.loss}`);
  assertGradsClose(got.grads, ref.grads);
  // Each column changes the computation: the reference without any of them differs.
  const plain = referenceLossAndGrad(CONFIG, LAYOUT, w, { tokens, count: 2 * B, seqLen: T });
  for (
    const [name, extras] of [
      ["labels", { labels }],
      ["position ids", { positionIds }],
      ["documents", { sequenceLengths: [...lengths0, [T], [T]] }],
    ] as const
  ) {
    const one = referenceLossAndGrad(CONFIG, LAYOUT, w, {
      tokens,
      count: 2 * B,
      seqLen: T,
      ...extras,
    });
    assert.ok(Math.abs(one.loss - plain.loss) > 1e-6, `${name} change nothing`);
  }
});

Deno.test("every label masked: zero loss and zero gradients, no NaN", async () => {
  using rt = await GpuRuntime.create();
  const w = spreadWeights(LAYOUT, 3, 0.3);
  const tokens = seededTokens(9, B * T, CONFIG.vocabSize);
  const labels = new Int32Array(B * T).fill(-100);
  const got = await gpuStep(rt, w, [{ tokens, extras: { labels } }]);
  assert.equal(got.predictions, 0);
  assert.equal(got.lossSum, 0);
  assert.ok(got.grads.every((g) => g === 0), "a gradient is not zero");
  const ref = referenceLossAndGrad(CONFIG, LAYOUT, w, { tokens, count: B, seqLen: T, labels });
  assert.equal(ref.predictions, 0);
  assert.equal(ref.loss, 0);
  assert.ok(ref.grads.every((g) => g === 0));
});

Deno.test("labels = tokens, positions 0..T−1 and one document per row keep the plain bits", async () => {
  using rt = await GpuRuntime.create();
  const w = spreadWeights(LAYOUT, 21, 0.3);
  const tokens = seededTokens(13, B * T, CONFIG.vocabSize);
  const plain = await gpuStep(rt, w, [{ tokens }]);
  const defaults = await gpuStep(rt, w, [{
    tokens,
    extras: {
      labels: Int32Array.from(tokens),
      positionIds: Int32Array.from({ length: B * T }, (_, i) => i % T),
      sequenceLengths: [[T], [T]],
    },
  }]);
  assert.equal(defaults.predictions, B * (T - 1));
  assert.equal(defaults.lossSum, plain.lossSum);
  assert.deepEqual(defaults.grads, plain.grads);
  // Twice the same packed rows: the same bits.
  const packed = {
    labels: Int32Array.from(tokens).fill(-100, 0, 3),
    positionIds: Int32Array.from([0, 1, 2, 3, 0, 1, 2, 0, 0, 1, 2, 3, 4, 5]),
    sequenceLengths: [[4, 3], [1, 6]],
  };
  const first = await gpuStep(rt, w, [{ tokens, extras: packed }]);
  const second = await gpuStep(rt, w, [{ tokens, extras: packed }]);
  assert.equal(first.lossSum, second.lossSum);
  assert.deepEqual(first.grads, second.grads);
  assert.notEqual(first.lossSum, plain.lossSum);
  // The backward's recomputed layers use the slot's positions and documents too.
  const recomputed = await gpuStep(rt, w, [{ tokens, extras: packed }], { recompute: true });
  assert.equal(recomputed.lossSum, first.lossSum);
  assert.deepEqual(recomputed.grads, first.grads);
});

Deno.test("writeTokens rejects bad labels, positions and document lengths", async () => {
  using rt = await GpuRuntime.create();
  using model = new LlamaModel(rt, {
    config: CONFIG,
    layout: LAYOUT,
    microBatch: 1,
    seqLen: 4,
    slots: 1,
  });
  const tokens = Uint32Array.from([1, 2, 3, 4]);
  const V = CONFIG.vocabSize;
  assert.throws(
    () => model.writeTokens(0, tokens, { labels: Int32Array.from([1, V, 2, 3]) }),
    new RegExp(`label ${V} at position 1 is neither in \\[0, ${V}\\) nor -100`),
  );
  assert.throws(
    () => model.writeTokens(0, tokens, { labels: Int32Array.from([1, 2]) }),
    /expected 4 labels/,
  );
  assert.throws(
    () => model.writeTokens(0, tokens, { positionIds: Int32Array.from([0, 1, 4, 0]) }),
    /position id 4 at position 2 is outside \[0, 4\)/,
  );
  assert.throws(
    () => model.writeTokens(0, tokens, { sequenceLengths: [[2, 1]] }),
    /add up to 3, not 4/,
  );
  assert.throws(
    () => model.writeTokens(0, tokens, { sequenceLengths: [[2, 0, 2]] }),
    /must be positive integers adding up to 4/,
  );
  assert.throws(
    () => model.writeTokens(0, tokens, { sequenceLengths: [[4], [4]] }),
    /lengths of 1 rows, found 2/,
  );
});
