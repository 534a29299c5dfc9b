/**
 * GPU DisTrO with storage bindings capped below its largest parameter and below its result
 * buffers (GpuRuntime's `maxBindingBytes`): every kernel binds blocks of whole chunk rows and
 * windows of the result entries, and the steps have the bits of the uncapped run. The shapes
 * take every kernel family: fused fast DCT (8×8 chunks), dense vec4 DCT with the per-chunk
 * feedback and apply (12×12), scalar kernels (10×6) and a 1-D parameter cut into blocks.
 */
import assert from "node:assert/strict";
import { randomF32 } from "../../shaders/testing/kernels.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import type { DistroConfig } from "../distro.ts";
import { aggregateFixed } from "../exact.ts";
import { chunkBlocks } from "../chunk_blocks.ts";
import { chunkLayout } from "../layout.ts";
import { DistroOptimizer, type FlatParam } from "./distro_gpu.ts";

const SHAPES: [string, number[]][] = [
  ["embed", [240, 24]],
  ["w", [64, 16]],
  ["norm", [1536]],
  ["odd", [40, 6]],
];
/** Two chunk rows of "embed" (2·12·24 floats), under one "norm" and the result buffers. */
const CAP = 4096;

const CONFIG: DistroConfig = {
  chunk: 12,
  topk: 8,
  decay: 0.99,
  weightDecay: 0.1,
  clipGradNorm: 1,
  quantize1bit: false,
};

/** Throws naming the first element whose bits differ (a deepEqual diff of long arrays is slow). */
function assertSameBits(
  got: Float32Array | Uint32Array,
  want: Float32Array | Uint32Array,
  what: string,
) {
  assert.equal(got.length, want.length, `${what}: length`);
  const g = new Uint32Array(got.buffer, got.byteOffset, got.length);
  const w = new Uint32Array(want.buffer, want.byteOffset, want.length);
  const i = g.findIndex((x, j) => x !== w[j]);
  assert.ok(i < 0, `${what}: element ${i} is ${got[i]}, uncapped ${want[i]}`);
}

function layout(): { params: FlatParam[]; size: number } {
  let offset = 0;
  const params = SHAPES.map(([name, shape]) => {
    const p = { name, shape, offset };
    offset += Math.ceil(shape.reduce((a, b) => a * b) / 64) * 64;
    return p;
  });
  return { params, size: offset };
}

/** Three single-node steps, then two networked rounds; everything read back. */
async function train(rt: GpuRuntime, config: DistroConfig) {
  const { params, size } = layout();
  using opt = new DistroOptimizer(rt, { params, size, config });
  const theta = rt.buffer("params", randomF32(1, size, -0.5, 0.5));
  const grads = rt.buffer("grads", size * 4);
  const sumsq = rt.buffer("sumsq", new Float32Array([9]));
  const out = new Map<string, Float32Array | Uint32Array>();
  const record = async (when: string) => {
    out.set(`${when}: θ`, await rt.read(theta));
    out.set(`${when}: δ`, await opt.delta.read());
    for (const [n, own] of (await opt.readOwn()).entries()) {
      out.set(`${when}: own indices of ${SHAPES[n][0]}`, own.indices);
      out.set(`${when}: own values of ${SHAPES[n][0]}`, own.values);
    }
  };
  for (let t = 1; t <= 3; t++) {
    rt.write(grads, randomF32(10 + t, size, -2, 2));
    const step = rt.beginStep(`step ${t}`);
    opt.encodeStep(step, { params: theta, grads, lr: 0.01, stepNumber: t, gradSumSq: sumsq });
    await step.submit();
    await record(`step ${t}`);
  }
  const settle = rt.beginStep("settle");
  opt.encodeSettle(settle, theta);
  await settle.submit();
  for (let r = 1; r <= 2; r++) {
    const step = rt.beginStep(`round ${r}`);
    opt.encodeLookaheadApart(step, { params: theta, prevLr: 0.01, lr: 0.02 });
    rt.write(grads, randomF32(20 + r, size, -2, 2));
    opt.encodeGenerate(step, { params: theta, grads, lr: 0.02, gradSumSq: sumsq });
    await step.submit();
    out.set(`round ${r}: lookahead weights`, await opt.lookaheadWeights.read());
    // The own result and a peer's (its signs, every third flipped: those entries cancel).
    const own = await opt.readResult();
    const peer = own.map((s) => ({
      ...s,
      values: s.values.map((v, i) => (v > 0 ? 1 : -1) * (i % 3 === 0 ? -1 : 1)),
    }));
    const update = opt.layouts.map((l, n) => aggregateFixed(l, [own[n], peer[n]]));
    const apply = rt.beginStep(`apply ${r}`);
    opt.encodeApply(apply, { params: theta, lr: 0.02, update });
    opt.encodeDecay(apply, { params: theta, lr: 0.02 });
    await apply.submit();
    await record(`round ${r}`);
  }
  return out;
}

Deno.test("the test cap cuts parameters into blocks and is below the result buffers", () => {
  const layouts = layout().params.map((p) => chunkLayout(p.name, p.shape, CONFIG));
  const blocks = layouts.map((l) => chunkBlocks(l, { maxBytes: CAP, alignBytes: 256 }).length);
  assert.deepEqual(blocks, [10, 1, 2, 1]);
  const entries = layouts.reduce((s, l) => s + l.chunks * l.k, 0);
  assert.ok(entries * 4 > CAP, `${entries} result entries`);
});

for (const quantize1bit of [false, true]) {
  Deno.test(`capped storage bindings give the uncapped bits (quantize ${quantize1bit})`, async () => {
    const config = { ...CONFIG, quantize1bit };
    using whole = await GpuRuntime.create();
    using capped = await GpuRuntime.create({ maxBindingBytes: CAP });
    const want = await train(whole, config);
    const got = await train(capped, config);
    assert.deepEqual([...got.keys()], [...want.keys()]);
    for (const [what, w] of want) assertSameBits(got.get(what)!, w, what);
  });
}
