/**
 * The RMSNorm forward that sums a split-K product's partials itself (`xPartials`, from
 * `Matmul.encodeUnreduced`) against the reduce followed by the norm's residual add: the same bits
 * in x, the output and rstd, on lavapipe with a small split-K policy that makes the product split.
 */
import assert from "node:assert/strict";
import { GpuRuntime } from "./gpu.ts";
import { Matmul, type MatmulArgs } from "./matmul.ts";
import { GPU_PROFILE, type SplitKPolicy } from "./profile.ts";
import { RmsNorm } from "./rmsnorm.ts";
import { assertClose, randomF32 } from "./testing/kernels.ts";

const POLICY: SplitKPolicy = { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 4 << 20 };

/** N rows, C wide, from a product over K = F (ragged against the slices: the last one short). */
const N = 70, C = 48, F = 200;

for (const rowReduction of ["invocation", "workgroup"] as const) {
  Deno.test(`rmsnorm forward sums split-K partials with the reduce's bits (${rowReduction} rows)`, async () => {
    using rt = await GpuRuntime.create();
    using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: POLICY });
    const norm = new RmsNorm(rt, 64, rowReduction);
    const act = randomF32(1, N * F), w = randomF32(2, C * F), resid = randomF32(3, N * C);
    const gain = randomF32(4, C, 0.5, 1.5);
    const ga = rt.buffer("act", act), gw = rt.buffer("w", w), weight = rt.buffer("gain", gain);
    const product = (c: GPUBuffer): MatmulArgs => ({
      a: ga,
      b: gw,
      c,
      m: N,
      n: C,
      k: F,
      layout: "nt",
    });
    // The unreduced path's x starts as NaN: every element must be written from the partials.
    const xs = [
      rt.buffer("x reduced", N * C * 4),
      rt.buffer("x", new Float32Array(N * C).fill(NaN)),
    ];
    const outs = [0, 1].map((i) => rt.buffer(`out ${i}`, N * C * 4));
    const rstds = [0, 1].map((i) => rt.buffer(`rstd ${i}`, N * 4));
    const adds = [0, 1].map((i) => rt.buffer(`resid ${i}`, resid));
    const step = rt.beginStep("split norm");
    mm.encode(step.pass, product(xs[0]));
    norm.forward(step.pass, {
      x: xs[0],
      add: adds[0],
      weight,
      out: outs[0],
      rstd: rstds[0],
      n: N,
      c: C,
    });
    const [parts, ...more] = mm.encodeUnreduced(step.pass, product(xs[1]));
    assert.ok(parts !== undefined, "the product should split under the policy");
    assert.equal(more.length, 0);
    assert.equal(parts.slices, 7);
    const fused = { x: xs[1], add: adds[1], xPartials: parts };
    norm.forward(step.pass, { ...fused, weight, out: outs[1], rstd: rstds[1], n: N, c: C });
    await step.submit();
    for (const [name, bufs] of [["x", xs], ["out", outs], ["rstd", rstds]] as const) {
      const [want, got] = await Promise.all(bufs.map((b) => rt.readU32({ buffer: b })));
      assert.deepEqual(got, want, `${name}: the fused sum changed bits`);
    }
    // Both right, not just equal: x = act·wᵀ + resid within the f32 bound of a sum over F.
    const x = await rt.read({ buffer: xs[1] });
    const ref = new Float32Array(N * C);
    for (let r = 0; r < N; r++) {
      for (let c = 0; c < C; c++) {
        let s = 0;
        for (let k = 0; k < F; k++) s += act[r * F + k] * w[c * F + k];
        ref[r * C + c] = s + resid[r * C + c];
      }
    }
    assertClose(x, ref, 1e-4, "x = act·wᵀ + resid");
  });
}

for (const rowReduction of ["invocation", "workgroup"] as const) {
  Deno.test(`rmsnorm backward sums an accumulating product's partials with the reduce's bits (${rowReduction} rows)`, async () => {
    using rt = await GpuRuntime.create();
    using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: POLICY });
    const norm = new RmsNorm(rt, 64, rowReduction);
    // dh = dgate·Wg + dup·Wu (both [N, F]·[F, C]), the second's reduce left to the norm backward.
    const dgate = rt.buffer("dgate", randomF32(11, N * F)),
      wg = rt.buffer("wg", randomF32(12, F * C));
    const dup = rt.buffer("dup", randomF32(13, N * F)), wu = rt.buffer("wu", randomF32(14, F * C));
    const x = rt.buffer("x", randomF32(15, N * C)), weight = rt.buffer("gain", randomF32(16, C));
    const rstd = rt.buffer("rstd", randomF32(17, N, 0.5, 2));
    const oldDx = randomF32(18, N * C), oldDw = randomF32(19, C);
    // 0: both products reduced; 1: the second's partials summed by the norm; 2: both products'.
    const runs = [0, 1, 2];
    const dhs = runs.map((i) => rt.buffer(`dh ${i}`, N * C * 4));
    const dxs = runs.map((i) => rt.buffer(`dx ${i}`, oldDx));
    const dws = runs.map((i) => rt.buffer(`dw ${i}`, oldDw));
    const product = (
      a: GPUBuffer,
      b: GPUBuffer,
      c: GPUBuffer,
      accumulate: boolean,
    ): MatmulArgs => ({
      a,
      b,
      c,
      m: N,
      n: C,
      k: F,
      accumulate,
    });
    const back = { x, weight, rstd, n: N, c: C, accumulate: true };
    const step = rt.beginStep("split norm backward");
    mm.encode(step.pass, product(dgate, wg, dhs[0], false));
    mm.encode(step.pass, product(dup, wu, dhs[0], true));
    norm.backward(step.pass, { ...back, dOut: dhs[0], dx: dxs[0], dWeight: dws[0] });
    mm.encode(step.pass, product(dgate, wg, dhs[1], false));
    const one = mm.encodeUnreduced(step.pass, product(dup, wu, dhs[1], true));
    assert.equal(one.length, 1);
    assert.ok(one[0].accumulate, "the product accumulates");
    norm.backward(step.pass, {
      ...back,
      dOut: dhs[1],
      dOutPartials: one,
      dx: dxs[1],
      dWeight: dws[1],
    });
    // The second product keeps the first's partials: both come back, in order, for the norm.
    const first = mm.encodeUnreduced(step.pass, product(dgate, wg, dhs[2], false));
    const two = mm.encodeUnreduced(step.pass, product(dup, wu, dhs[2], true), first);
    assert.equal(two.length, 2);
    assert.equal(two[0], first[0]);
    norm.backward(step.pass, {
      ...back,
      dOut: dhs[2],
      dOutPartials: two,
      dx: dxs[2],
      dWeight: dws[2],
    });
    await step.submit();
    for (const [name, bufs] of [["dOut", dhs], ["dx", dxs], ["dWeight", dws]] as const) {
      const [want, ...got] = await Promise.all(bufs.map((b) => rt.readU32({ buffer: b })));
      for (const [i, g] of got.entries()) {
        assert.deepEqual(g, want, `${name}: the fused sum of ${i + 1} product(s) changed bits`);
      }
    }
    assert.ok((await rt.read({ buffer: dhs[2] })).every((v) => Number.isFinite(v) && v !== 0));
  });
}

Deno.test("encodeUnreduced writes C when unsplit and refuses a product that is not plain", async () => {
  using rt = await GpuRuntime.create();
  using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: POLICY });
  const a = rt.buffer("a", randomF32(5, 4 * 8)), b = rt.buffer("b", randomF32(6, 8 * 8));
  const c = rt.buffer("c", 4 * 8 * 4);
  const step = rt.beginStep("unsplit");
  // K = 8 holds no two slices of 16: unsplit, so C is written and there are no partials.
  assert.deepEqual(mm.encodeUnreduced(step.pass, { a, b, c, m: 4, n: 8, k: 8 }), []);
  const big = { a: rt.buffer("A", N * F * 4), b: rt.buffer("B", F * C * 4), m: N, n: C, k: F };
  const out = rt.buffer("C", N * C * 4);
  assert.throws(
    () =>
      mm.encodeUnreduced(step.pass, {
        ...big,
        c: rt.buffer("C2", 2 * N * C * 4),
        batch: 2,
        strideA: 0,
        strideB: 0,
      }),
    /left unreduced must be a plain/,
  );
  assert.throws(
    () => mm.encodeUnreduced(step.pass, { ...big, c: out, alpha: 2 }),
    /left unreduced must be a plain/,
  );
  await step.submit();
  const got = await rt.read({ buffer: c });
  assert.ok(got.some((v) => v !== 0), "the unsplit product was not written");
});

Deno.test("encodeUnreduced reduces the kept partials first when the next product runs unsplit", async () => {
  using rt = await GpuRuntime.create();
  using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: POLICY });
  const a = rt.buffer("a", randomF32(21, N * F)), b = rt.buffer("b", randomF32(22, F * C));
  // K = 8: no split, so this product adds onto C as stored, and C must hold the first product.
  const a2 = rt.buffer("a2", randomF32(23, N * 8)), b2 = rt.buffer("b2", randomF32(24, 8 * C));
  const cs = [0, 1].map((i) => rt.buffer(`c ${i}`, N * C * 4));
  const first = (c: GPUBuffer): MatmulArgs => ({ a, b, c, m: N, n: C, k: F });
  const second = (c: GPUBuffer): MatmulArgs => ({
    a: a2,
    b: b2,
    c,
    m: N,
    n: C,
    k: 8,
    accumulate: true,
  });
  const step = rt.beginStep("kept, then unsplit");
  mm.encode(step.pass, first(cs[0]));
  mm.encode(step.pass, second(cs[0]));
  const kept = mm.encodeUnreduced(step.pass, first(cs[1]));
  assert.equal(kept.length, 1);
  assert.deepEqual(mm.encodeUnreduced(step.pass, second(cs[1]), kept), []);
  assert.throws(
    () => mm.encodeUnreduced(step.pass, { ...first(cs[1]), deferReduce: true }),
    /cannot defer/,
  );
  await step.submit();
  const [want, got] = await Promise.all(cs.map((c) => rt.readU32({ buffer: c })));
  assert.deepEqual(got, want);
});
