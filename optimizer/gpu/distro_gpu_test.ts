import assert from "node:assert/strict";
import { assertClose, randomF32 } from "../../shaders/testing/kernels.ts";
import { type DistroConfig, DistroReference, type NamedParam } from "../distro.ts";
import { aggregateFixed } from "../exact.ts";
import { hasFastDct } from "../fast_dct.ts";
import type { ChunkLayout } from "../layout.ts";
import type { DistroResult } from "../result.ts";
import { DistroOptimizer, type FlatParam } from "./distro_gpu.ts";
import { chunkRows, hasChunkKernels } from "./chunk_wgsl.ts";
import { GpuRuntime } from "../../shaders/mod.ts";

const SHAPES: [string, number[]][] = [["w", [48, 80]], ["norm", [80]], ["proj", [40, 24]]];

function flatLayout(shapes = SHAPES): { params: FlatParam[]; size: number } {
  let offset = 0;
  const params = shapes.map(([name, shape]) => {
    const p = { name, shape, offset };
    offset += Math.ceil(shape.reduce((a, b) => a * b) / 64) * 64;
    return p;
  });
  return { params, size: offset };
}

function sizeOf(shape: readonly number[]) {
  return shape.reduce((a, b) => a * b);
}

/** Zeroes the padding after each parameter (to the next multiple of 64), as in a model's buffer. */
function zeroPadding(flat: Float32Array, params: readonly FlatParam[]): void {
  for (const p of params) {
    flat.fill(0, p.offset + sizeOf(p.shape), p.offset + Math.ceil(sizeOf(p.shape) / 64) * 64);
  }
}

async function singleNodeMatchesReference(
  config: DistroConfig,
  exactTheta: boolean,
  shapes = SHAPES,
) {
  using rt = await GpuRuntime.create();
  const { params, size } = flatLayout(shapes);
  const flat = randomF32(1, size, -0.5, 0.5);
  const refParams: NamedParam[] = params.map((p) => ({
    name: p.name,
    shape: p.shape,
    data: flat.slice(p.offset, p.offset + sizeOf(p.shape)),
  }));
  const ref = new DistroReference(refParams, config);
  const theta = rt.buffer("params", flat);
  const gradsBuf = rt.buffer("grads", size * 4);
  const sumsq = rt.buffer("sumsq", 4);
  using opt = new DistroOptimizer(rt, { params, size, config });
  let prev: DistroResult | null = null;
  let settled: Float32Array[] = [];
  for (let t = 1; t <= 4; t++) {
    const lr = 0.01 / t;
    const grads = randomF32(50 + t, size, -2, 2);
    const refGrads = params.map((p) => grads.slice(p.offset, p.offset + sizeOf(p.shape)));
    let sq = 0;
    for (const g of refGrads) for (const x of g) sq += x * x;
    zeroPadding(grads, params);
    rt.write(gradsBuf, grads);
    rt.write(sumsq, new Float32Array([sq]));
    const step = rt.beginStep(`distro ${t}`);
    opt.encodeStep(step, { params: theta, grads: gradsBuf, lr, stepNumber: t, gradSumSq: sumsq });
    await step.submit();

    const gen = ref.generate(refGrads, lr);
    if (prev) ref.apply([prev], lr);
    settled = refParams.map((p) => p.data.slice());
    ref.lookahead(lr);
    prev = DistroReference.result({ step: t, batch: { start: 0, end: 0 }, trainerNonce: 0 }, gen);

    const own = await opt.readOwn();
    const delta = await opt.delta.read();
    const got = await rt.read(theta);
    for (const [n, p] of params.entries()) {
      const span = [p.offset, p.offset + sizeOf(p.shape)];
      assertClose(delta.slice(span[0], span[1]), ref.delta[n], 1e-6, `step ${t} δ ${p.name}`);
      assert.deepEqual(own[n].indices, gen.own[n].indices, `step ${t} indices of ${p.name}`);
      assertClose(own[n].values, gen.own[n].values, 1e-6, `step ${t} values of ${p.name}`);
      const gp = got.slice(span[0], span[1]);
      if (exactTheta) {
        assert.deepEqual(gp, refParams[n].data, `step ${t} θ of ${p.name} (bit-identical)`);
      } else {
        let differ = 0;
        for (let i = 0; i < gp.length; i++) if (gp[i] !== refParams[n].data[i]) differ++;
        assert.ok(differ <= gp.length * 0.002, `step ${t} θ of ${p.name}: ${differ} differ`);
        assertClose(gp, refParams[n].data, 2.1 * lr, `step ${t} θ of ${p.name}`);
      }
    }
    const sent = await opt.readResult();
    for (const [n, s] of sent.entries()) {
      assertClose(s.values, gen.transmit[n].values, 1e-6, `step ${t} sent values`);
    }
  }
  // A checkpoint must hold the trained θ, not the next step's lookahead.
  const step = rt.beginStep("settle");
  opt.encodeSettle(step, theta);
  await step.submit();
  const final = await rt.read(theta);
  for (const [n, p] of params.entries()) {
    const gp = final.slice(p.offset, p.offset + sizeOf(p.shape));
    if (exactTheta) assert.deepEqual(gp, settled[n], `settled θ of ${p.name}`);
    else assertClose(gp, settled[n], 2.1 * 0.01, `settled θ of ${p.name}`);
  }
}

const BASE: DistroConfig = {
  chunk: 16,
  topk: 4,
  decay: 0.99,
  weightDecay: 0.1,
  clipGradNorm: 1,
  quantize1bit: true,
};

Deno.test("GPU DisTrO single-node steps are bit-identical to the reference (1-bit)", async () => {
  await singleNodeMatchesReference(BASE, true);
});

Deno.test("without weight decay a buffer copy restores θ: still bit-identical (1-bit)", async () => {
  await singleNodeMatchesReference({ ...BASE, weightDecay: null }, true);
});

Deno.test("the largest fast chunk (128) takes the fused kernels and stays bit-identical", async () => {
  const shapes: [string, number[]][] = [["w", [128, 128]], ["norm", [128]], ["odd", [128, 6]]];
  await singleNodeMatchesReference({ ...BASE, chunk: 128, topk: 8 }, true, shapes);
});

Deno.test("the lookahead apart from θ trains at the same point and leaves the same bits", async () => {
  for (const weightDecay of [0.1, null]) {
    using rt = await GpuRuntime.create();
    const { params, size } = flatLayout();
    const config = { ...BASE, weightDecay };
    using inPlace = new DistroOptimizer(rt, { params, size, config });
    using apart = new DistroOptimizer(rt, { params, size, config });
    const init = randomF32(31, size, -0.5, 0.5);
    zeroPadding(init, params);
    const thetaA = rt.buffer("θ in place", init), thetaB = rt.buffer("θ apart", init);
    const grads = rt.buffer("grads", size * 4);
    const sumsq = rt.buffer("sumsq", new Float32Array([4]));
    const sent: DistroResult[] = [];
    for (let t = 1; t <= 4; t++) {
      const lr = 0.02 / t, prevLr = 0.02 / Math.max(1, t - 1);
      rt.write(grads, randomF32(60 + t, size, -1, 1));
      const step = rt.beginStep(`round ${t}`);
      if (t >= 3) {
        // Round t applies round t−2's results: this client's and a peer's (its own in bf16).
        const results = [sent[t - 3], {
          ...sent[t - 3],
          trainerNonce: 9,
          batch: { start: 5, end: 5 },
        }];
        const update = inPlace.layouts.map((l, n) =>
          aggregateFixed(l, results.map((r) => r.params[n]))
        );
        inPlace.encodeApply(step, { params: thetaA, lr: prevLr, update });
        apart.encodeApply(step, { params: thetaB, lr: prevLr, update });
      }
      inPlace.encodeLookahead(step, { params: thetaA, prevLr });
      apart.encodeLookaheadApart(step, { params: thetaB, prevLr, lr });
      await step.submit();
      // Both train at the same point: θA holds it in place, the apart buffer beside θB.
      assert.deepEqual(
        await apart.lookaheadWeights.read(),
        await rt.read(thetaA),
        `round ${t} (wd ${weightDecay}): lookahead weights`,
      );
      const gen = rt.beginStep(`generate ${t}`);
      inPlace.encodeGenerate(gen, { params: thetaA, grads, lr, gradSumSq: sumsq });
      apart.encodeGenerate(gen, { params: thetaB, grads, lr, gradSumSq: sumsq });
      await gen.submit();
      const label = `round ${t} (wd ${weightDecay})`;
      assert.deepEqual(await rt.read(thetaB), await rt.read(thetaA), `${label}: θ`);
      assert.deepEqual(await apart.delta.read(), await inPlace.delta.read(), `${label}: δ`);
      const [a, b] = [await inPlace.readResult(), await apart.readResult()];
      assert.deepEqual(b, a, `${label}: result`);
      sent.push({ step: t, batch: { start: 0, end: 0 }, trainerNonce: 0, params: a });
    }
  }
});

Deno.test("a read-only lookahead and the dry decay leave θ and δ; P is the lookahead's", async () => {
  using rt = await GpuRuntime.create();
  const { params, size } = flatLayout();
  using opt = new DistroOptimizer(rt, { params, size, config: { ...BASE, weightDecay: 0.1 } });
  const init = randomF32(41, size, -0.5, 0.5);
  zeroPadding(init, params);
  for (let i = 0; i < size; i += 3) init[i] = -0;
  const theta = rt.buffer("θ", init);
  const grads = rt.buffer("grads", randomF32(42, size, -1, 1));
  const sumsq = rt.buffer("sumsq", new Float32Array([4]));
  // A result first, so δ is non-zero and the lookahead moves P away from θ.
  const first = rt.beginStep("first");
  opt.encodeLookaheadApart(first, { params: theta, prevLr: 0, lr: 0, readOnly: true });
  opt.encodeGenerate(first, { params: theta, grads, lr: 0.01, gradSumSq: sumsq });
  await first.submit();
  // Bits, not values: −0 must stay −0.
  const bits = async (b: GPUBuffer) => new Uint32Array((await rt.read(b)).buffer);
  const initBits = new Uint32Array(init.buffer);
  assert.deepEqual(await bits(theta), initBits, "θ after a read-only step");
  const delta = await opt.delta.read();
  const step = rt.beginStep("read-only lookahead");
  opt.encodeLookaheadApart(step, { params: theta, prevLr: 0.01, lr: 0.01, readOnly: true });
  await step.submit();
  const ahead = await opt.lookaheadWeights.read();
  const want = init.map((x, i) => Math.fround(x - Math.fround(0.01) * Math.sign(delta[i])));
  assert.deepEqual(ahead, want, "P = θ − prevLr·sign(δ)");
  assert.deepEqual(await bits(theta), initBits, "θ is not decayed");
  const scratch = randomF32(43, size, -1, 1);
  const scratchBuf = rt.buffer("scratch", scratch);
  const dry = rt.beginStep("dry decay");
  opt.encodeDryDecay(dry, { scratch: scratchBuf });
  await dry.submit();
  assert.deepEqual(await bits(scratchBuf), new Uint32Array(scratch.buffer), "scratch·1");
  assert.deepEqual(await bits(theta), initBits, "θ untouched");
  assert.deepEqual(await opt.delta.read(), delta, "δ untouched");
  assert.ok(opt.hasResult, "the own result is kept");
});

Deno.test("GPU DisTrO single-node steps match the reference (unquantized values)", async () => {
  await singleNodeMatchesReference(
    { ...BASE, quantize1bit: false, clipGradNorm: null, weightDecay: null, chunk: 8 },
    false,
  );
});

Deno.test("GPU apply of an uploaded aggregate equals the reference apply, any order", async () => {
  using rt = await GpuRuntime.create();
  const { params, size } = flatLayout();
  const flat = randomF32(7, size, -0.5, 0.5);
  // No weight decay: the generate below must leave θ itself unchanged.
  using opt = new DistroOptimizer(rt, { params, size, config: { ...BASE, weightDecay: null } });
  const results: DistroResult[] = [2, 0, 1].map((peer) => {
    const r = new DistroReference(
      params.map((p) => ({ ...p, data: new Float32Array(sizeOf(p.shape)) })),
      { ...BASE, quantize1bit: peer !== 1 },
    );
    const gen = r.generate(params.map((p, n) => randomF32(90 + 3 * peer + n, sizeOf(p.shape))), 1);
    return DistroReference.result(
      { step: 3, batch: { start: peer, end: peer }, trainerNonce: 0 },
      gen,
    );
  });
  const refParams = params.map((p) => ({
    ...p,
    data: flat.slice(p.offset, p.offset + sizeOf(p.shape)),
  }));
  new DistroReference(refParams, BASE).apply(results, 0.05);
  const ordered = [...results].sort((a, b) => a.batch.start - b.batch.start);
  const update = opt.layouts.map((l, n) => aggregateFixed(l, ordered.map((r) => r.params[n])));
  const theta = rt.buffer("params", flat);
  // A lookahead still active when the aggregate arrives is undone first.
  const gen = rt.beginStep("generate and lookahead");
  const grads = rt.buffer("grads", randomF32(8, size));
  opt.encodeGenerate(gen, { params: theta, grads, lr: 1e-3, gradSumSq: rt.buffer("s", 4) });
  opt.encodeLookahead(gen, { params: theta, prevLr: 0.5 });
  await gen.submit();
  assert.notDeepEqual(await rt.read(theta), flat);
  const step = rt.beginStep("apply");
  opt.encodeApply(step, { params: theta, lr: 0.05, update });
  await step.submit();
  const got = await rt.read(theta);
  for (const [n, p] of params.entries()) {
    assert.deepEqual(got.slice(p.offset, p.offset + sizeOf(p.shape)), refParams[n].data, p.name);
  }
  assert.throws(
    () => opt.encodeApply(rt.beginStep("bad"), { params: theta, lr: 1, update: update.slice(1) }),
    /aggregate has 2 parameters, the model has 3/,
  );
  const big = [{ ...update[0], coeffs: update[0].coeffs.map((q, e) => e === 3 ? 40000 : q) }];
  assert.throws(
    () =>
      opt.encodeApply(rt.beginStep("bad"), {
        params: theta,
        lr: 1,
        update: [...big, ...update.slice(1)],
      }),
    /"w": entry 3: .* coefficient 40000 \(limit 2\^15\)/,
  );
});

Deno.test("encodeReset zeroes δ and forgets the previous result", async () => {
  using rt = await GpuRuntime.create();
  const { params, size } = flatLayout();
  using opt = new DistroOptimizer(rt, { params, size, config: { ...BASE, clipGradNorm: null } });
  const theta = rt.buffer("params", randomF32(3, size));
  const grads = rt.buffer("grads", randomF32(4, size));
  const step = rt.beginStep("one");
  opt.encodeStep(step, { params: theta, grads, lr: 0.1, stepNumber: 1, gradSumSq: null });
  await step.submit();
  assert.ok(opt.hasResult);
  assert.ok((await opt.delta.read()).some((d) => d !== 0));
  const reset = rt.beginStep("reset");
  opt.encodeReset(reset);
  await reset.submit();
  assert.equal(opt.hasResult, false);
  assert.ok((await opt.delta.read()).every((d) => d === 0));
});

Deno.test("DistroOptimizer rejects bad layouts and arguments", async () => {
  using rt = await GpuRuntime.create();
  const config = BASE;
  assert.throws(
    () =>
      new DistroOptimizer(rt, { params: [{ name: "a", shape: [8], offset: 3 }], size: 64, config }),
    /"a" at offset 3/,
  );
  assert.throws(
    () =>
      new DistroOptimizer(rt, {
        params: [{ name: "a", shape: [80], offset: 0 }],
        size: 64,
        config,
      }),
    /end within 64/,
  );
  using opt = new DistroOptimizer(rt, {
    params: [{ name: "a", shape: [64], offset: 0 }],
    size: 64,
    config,
  });
  const buf = rt.buffer("p", 256);
  assert.throws(
    () =>
      opt.encodeGenerate(rt.beginStep("x"), { params: buf, grads: buf, lr: 0.1, gradSumSq: null }),
    /clipGradNorm > 0 needs gradSumSq/,
  );
  await assert.rejects(() => opt.readResult(), /no result has been generated/);
});

Deno.test("profile: every kernel gets its own timed pass, named after it", async () => {
  using rt = await GpuRuntime.create();
  const { params, size } = flatLayout();
  const config: DistroConfig = {
    chunk: 16,
    topk: 3,
    decay: 0.9,
    weightDecay: null,
    clipGradNorm: null,
    quantize1bit: true,
  };
  using opt = new DistroOptimizer(rt, { params, size, config, profile: true });
  const theta = rt.buffer("params", randomF32(3, size));
  const grads = rt.buffer("grads", randomF32(4, size));
  for (let t = 1; t <= 2; t++) {
    const step = rt.beginStep("profiled");
    opt.encodeStep(step, { params: theta, grads, lr: 0.01, stepNumber: t, gradSumSq: null });
    await step.submit();
    if (!rt.hasTimestamps) continue;
    const count = (name: string) => step.timings.filter((s) => s.name === name).length;
    const n = params.length;
    // Power-of-two chunks take the fused feedback + fast DCT kernels, the others two passes.
    const isFused = (l: ChunkLayout) => hasFastDct(l.n1) && hasFastDct(l.n2);
    const fused = opt.layouts.filter(isFused);
    assert.ok(fused.length > 0 && fused.length < n, "the layout mixes fused and two-pass ones");
    // Every other kernel is one table dispatch per pipeline (all fit one binding). The fused
    // column pass is keyed by chunk height and columns per invocation, the DCT's row pass by
    // chunk width and whether it writes row maxima; top-k by its kernel; the apply's per-chunk
    // kernel by chunk width and row block, the rest take the vec4 or the scalar exact kernel.
    const kinds = (layouts: readonly ChunkLayout[], key: (l: ChunkLayout) => string) =>
      new Set(layouts.map(key)).size;
    const rowMax = (l: ChunkLayout) => isFused(l) && l.n2 % 4 === 0;
    const cols = (l: ChunkLayout) => l.shape.length === 2 ? l.shape[1] : 1;
    const twoCols = (l: ChunkLayout) => cols(l) % 2 === 0 && l.n2 % 2 === 0;
    const fusedPasses = kinds(fused, (l) => `${l.n1} ${twoCols(l)}`) +
      kinds(fused, (l) => `${l.n2} ${rowMax(l)}`);
    const topks = kinds(opt.layouts, (l) => rowMax(l) ? "rows" : `${l.totalk % 4}`);
    const applies = kinds(
      opt.layouts,
      (l) =>
        hasChunkKernels(l.n2) ? `chunk ${l.n2} ${chunkRows(l.n1)}` : l.n2 % 4 === 0 ? "vec4" : "1",
    );
    const twoPass = n - fused.length;
    assert.deepEqual(
      ["feedback+dct", "feedback", "dct", "topk", "own-fixed", "apply", "lookahead"].map(count),
      t === 1
        ? [fusedPasses, twoPass, twoPass, topks, 0, 0, 1]
        : [fusedPasses, twoPass, twoPass, topks, 1, applies, 1],
    );
    assert.ok(step.timings.every((s) => s.ms >= 0));
  }
});
