/**
 * Split-K on lavapipe: the workgroup-tiled kernel with K cut into slices (shaders/split_k.ts)
 * against the f64 reference, bit-identical reruns, and the slicing a caller pins. A small policy
 * (64 target workgroups, slices of 16) makes small shapes split, so the GPU profile's split path
 * runs here on the CPU adapter.
 */
import assert from "node:assert/strict";
import { GpuRuntime } from "./gpu.ts";
import { Matmul, type MatmulArgs, type MatmulLayout, type MatmulOperandTypes } from "./matmul.ts";
import { GPU_PROFILE, type MatmulTiling, type SplitKPolicy } from "./profile.ts";
import { matmulRef } from "./reference/matmul.ts";
import { assertClose, bf16Encode, bf16Round, F32_EPS, randomF32 } from "./testing/kernels.ts";

const POLICY: SplitKPolicy = { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 4 << 20 };

/** A small odd tile: 24 × 8 outputs per workgroup, depth 5 (slices of 20). */
const ODD: MatmulTiling = { strategy: "tiled", rows: 3, cols: 2, workgroup: [4, 8], depth: 5 };

interface Case {
  m: number;
  n: number;
  k: number;
  batch?: number;
  accumulate?: boolean;
  alpha?: number;
  strideC?: number;
}

/**
 * Every case splits under {@link POLICY} with both tilings; K is ragged against slices × depth in
 * the first three (the last slice short), whole in the fourth.
 */
const CASES: Case[] = [
  { m: 20, n: 24, k: 100 },
  { m: 70, n: 65, k: 77, accumulate: true, alpha: 0.5 },
  { m: 9, n: 12, k: 48, batch: 3 },
  // Accumulating, so the gaps strideC leaves between outputs keep C's old values.
  { m: 5, n: 7, k: 256, batch: 2, accumulate: true, alpha: -2, strideC: 40 },
];

type Types = { a: "f32" | "f16" | "bf16"; b: "f32" | "f16" | "bf16" };

function operand(rt: GpuRuntime, label: string, x: Float32Array, t: Types["a"]) {
  if (t === "f16") return rt.buffer(label, new Uint16Array(new Float16Array(x).buffer));
  if (t === "bf16") return rt.buffer(label, bf16Encode(x));
  return rt.buffer(label, x);
}

/**
 * Runs case `c` twice in one pass (the second reusing the partials' scratch) into two copies of
 * the same old C; checks the first against the reference within the f32 bound and the second
 * against the first bit for bit. Returns the slices it ran.
 */
async function runCase(
  rt: GpuRuntime,
  mm: Matmul,
  layout: MatmulLayout,
  c: Case,
  seed: number,
  types: Types,
): Promise<number> {
  const batch = c.batch ?? 1;
  const round = (x: Float32Array, t: Types["a"]) =>
    t === "f16" ? x.map(Math.f16round) : t === "bf16" ? x.map(bf16Round) : x;
  const a = round(randomF32(seed, batch * c.m * c.k), types.a);
  const b = round(randomF32(seed + 1, batch * c.k * c.n), types.b);
  const strideC = c.strideC ?? c.m * c.n;
  const old = randomF32(seed + 2, batch * strideC);
  const shape = { m: c.m, n: c.n, k: c.k, layout, batch, strideC, alpha: c.alpha };
  const ga = operand(rt, "a", a, types.a), gb = operand(rt, "b", b, types.b);
  const outs = [rt.buffer("c0", old), rt.buffer("c1", old)];
  const inputType: MatmulOperandTypes = types.a === types.b ? types.a : types;
  const args = (out: GPUBuffer): MatmulArgs => ({
    ...shape,
    a: ga,
    b: gb,
    c: out,
    accumulate: c.accumulate,
    inputType,
  });
  const plan = mm.splitK(args(outs[0]));
  const step = rt.beginStep("split-K test");
  for (const out of outs) mm.encode(step.pass, args(out));
  await step.submit();
  const [got, again] = await Promise.all(outs.map((o) => rt.read(o)));
  for (const buf of [ga, gb, ...outs]) rt.destroyBuffer(buf);
  const what = `${layout} ${JSON.stringify(types)} ${JSON.stringify(c)} in ${plan.slices} slices`;
  const want = matmulRef(a, b, { ...shape, accumulateInto: c.accumulate ? old : undefined });
  // As matmul_test.ts: an f32 dot product of length k summed in any order (split-K's slices
  // then their sum is one such order) with fma is within (k + 2)·2u·(|alpha|·Σ|a||b| + |c_old|).
  const mag = matmulRef(a.map(Math.abs), b.map(Math.abs), {
    ...shape,
    alpha: Math.abs(c.alpha ?? 1),
  });
  const tol = (i: number) =>
    (c.k + 2) * 2 * F32_EPS * (mag[i] + (c.accumulate ? Math.abs(old[i]) : 0)) + 1e-30;
  assertClose(got, want, tol, what);
  assert.deepEqual(new Uint32Array(again.buffer), new Uint32Array(got.buffer), `rerun: ${what}`);
  return plan.slices;
}

Deno.test("split-K matches the f64 reference on every layout, ragged K, accumulate, 16-bit operands", async (t) => {
  using rt = await GpuRuntime.create();
  const typeSets: Types[] = [
    { a: "f32", b: "f32" },
    { a: "bf16", b: "bf16" },
    { a: "f32", b: "bf16" },
  ];
  if (rt.hasF16) typeSets.push({ a: "f16", b: "f16" }, { a: "f32", b: "f16" });
  // Each pipeline is one (tiling, layout, types): rather than all of them, every layout runs every
  // operand type on one tiling, alternating, so each tiling also runs every layout and every type
  // (pairs, not the product: half the pipelines to build), each on every case.
  const tilings = [["GPU profile", GPU_PROFILE.matmul], ["odd tile", ODD]] as const;
  for (const [i, [name, tiling]] of tilings.entries()) {
    await t.step(name, async () => {
      using mm = new Matmul(rt, tiling, { splitK: POLICY });
      let seed = 1;
      for (const [j, types] of typeSets.entries()) {
        for (const [l, layout] of (["nn", "nt", "tn"] as const).entries()) {
          if ((l + j) % 2 !== i) continue;
          for (const c of CASES) {
            const slices = await runCase(rt, mm, layout, c, seed += 3, types);
            assert.ok(slices > 1, `${layout} ${JSON.stringify(c)} must split, ran unsplit`);
          }
        }
      }
    });
  }
});

Deno.test("split matmuls of growing size share the partials' scratch in one pass", async () => {
  using rt = await GpuRuntime.create();
  using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: POLICY });
  const k = 96;
  const shapes = [[16, 24], [8, 8], [40, 64]]; // the scratch grows on the third
  const a = shapes.map(([m], i) => randomF32(20 + i, k * m));
  const b = shapes.map(([, n], i) => randomF32(30 + i, k * n));
  const cs = shapes.map(([m, n], i) => rt.buffer(`c${i}`, m * n * 4));
  const step = rt.beginStep("three split tn");
  for (const [i, [m, n]] of shapes.entries()) {
    const args = { a: rt.buffer(`a${i}`, a[i]), b: rt.buffer(`b${i}`, b[i]), c: cs[i], m, n, k };
    assert.ok(mm.splitK({ ...args, layout: "tn" }).slices > 1);
    mm.encode(step.pass, { ...args, layout: "tn" });
  }
  await step.submit();
  for (const [i, [m, n]] of shapes.entries()) {
    const want = matmulRef(a[i], b[i], { m, n, k, layout: "tn" });
    // The bound of runCase with Σ|a||b| ≤ k for inputs in [-1, 1].
    assertClose(await rt.read(cs[i]), want, (k + 2) * 2 * F32_EPS * k, `product ${i}`);
  }
});

Deno.test("parts pinned to the whole product's slices give its bits; chain never splits", async () => {
  // The LM head splits its weight gradient dW [V, C] += dlogitsᵀ·hf over vocabulary blocks: rows
  // of C here. The whole (130 rows, 3 row tiles) takes 64 slices of 32; alone, its first 64 rows
  // (1 tile) would take 128 of 16, so only pinning `sliceK` keeps the whole's bits.
  using rt = await GpuRuntime.create();
  const policy = { targetWorkgroups: 128, minSliceK: 16, scratchBytes: 8 << 20 };
  using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: policy });
  const [m, n, k, split] = [130, 64, 2048, 64];
  const a = rt.buffer("a", randomF32(1, k * m)), b = rt.buffer("b", randomF32(2, k * n));
  const old = randomF32(3, m * n);
  const whole = rt.buffer("whole", old), parts = rt.buffer("parts", old);
  // nn: A [m, k] rows split at `split` (its byte offset a multiple of 256).
  const args: MatmulArgs = { a, b, c: whole, m, n, k, layout: "nn", accumulate: true };
  const plan = mm.splitK(args);
  assert.deepEqual(plan, { slices: 64, sliceK: 32 });
  const rows = (start: number, count: number): MatmulArgs => ({
    ...args,
    a: { buffer: a, offset: start * k * 4, size: count * k * 4 },
    c: { buffer: parts, offset: start * n * 4, size: count * n * 4 },
    m: count,
    sliceK: plan.sliceK,
  });
  const { sliceK: _, ...unpinned } = rows(0, split);
  assert.equal(mm.splitK(unpinned).sliceK, 16, "alone, the part would slice differently");
  const step = rt.beginStep("pinned parts");
  mm.encode(step.pass, args);
  mm.encode(step.pass, rows(0, split));
  mm.encode(step.pass, rows(split, m - split));
  await step.submit();
  const [w, p] = [await rt.read(whole), await rt.read(parts)];
  assert.deepEqual(new Uint32Array(p.buffer), new Uint32Array(w.buffer));
  // A chained sum runs through C in K order: the policy leaves it unsplit, a pin is refused.
  assert.equal(mm.splitK({ ...args, accumulate: "chain" }).slices, 1);
  const bad = rt.beginStep("chain pinned");
  assert.throws(
    () => mm.encode(bad.pass, { ...args, accumulate: "chain", sliceK: 32 }),
    /accumulate "chain" cannot split K/,
  );
  await bad.submit();
});

Deno.test("the CPU profile's matmul never splits, and refuses a pinned split", async () => {
  using rt = await GpuRuntime.create({ profile: undefined });
  using mm = new Matmul(rt, {
    strategy: "register",
    rows: 8,
    cols: 16,
    workgroup: [8, 8],
    depth: 0,
  });
  const x = rt.buffer("x", 4 * 4096 * 4);
  const args: MatmulArgs = { a: x, b: x, c: x, m: 4, n: 4, k: 4096, layout: "tn" };
  assert.equal(mm.splitK(args).slices, 1);
  const step = rt.beginStep("pinned on register");
  assert.throws(() => mm.encode(step.pass, { ...args, sliceK: 64 }), /only the workgroup-tiled/);
  await step.submit();
});

/**
 * Encodes `cases` as split products writing views of one buffer holding `old` (each at its
 * float offset), deferred or not, then flushes; returns the buffer's bits and the dispatches.
 */
async function deferredRun(
  rt: GpuRuntime,
  policy: SplitKPolicy,
  run: {
    cases: (Case & { layout: MatmulLayout; at: number })[];
    old: Float32Array;
    defer: boolean;
  },
): Promise<{ bits: Uint32Array; reduces: number }> {
  using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: policy });
  const out = rt.buffer("c", run.old);
  const inputs: GPUBuffer[] = [];
  const step = rt.beginStep("deferred reduces");
  for (const [i, c] of run.cases.entries()) {
    const batch = c.batch ?? 1;
    const a = rt.buffer(`a${i}`, randomF32(100 + i, batch * c.m * c.k));
    const b = rt.buffer(`b${i}`, randomF32(200 + i, batch * c.k * c.n));
    inputs.push(a, b);
    const strideC = c.strideC ?? c.m * c.n;
    const size = ((batch - 1) * strideC + c.m * c.n) * 4;
    const args: MatmulArgs = {
      ...c,
      a,
      b,
      c: { buffer: out, offset: c.at * 4, size },
      deferReduce: run.defer,
    };
    assert.ok(mm.splitK(args).slices > 1, JSON.stringify(c));
    mm.encode(step.pass, args);
  }
  const reduces = mm.pendingReduces;
  mm.flushReduces(step.pass);
  assert.equal(mm.pendingReduces, 0);
  await step.submit();
  const bits = new Uint32Array((await rt.read(out)).buffer);
  for (const b of [out, ...inputs]) rt.destroyBuffer(b);
  return { bits, reduces };
}

Deno.test("deferred split-K reduces, one dispatch for many products, give the immediate bits", async () => {
  using rt = await GpuRuntime.create();
  // Random shapes, layouts, batches, alpha and accumulate, at 256-byte offsets of one buffer
  // (an immediate reduce binds its output, so its offset must be aligned) with gaps between.
  const rand = randomF32(7, 400).map((x) => (x + 1) / 2);
  let r = 0;
  const pick = (lo: number, hi: number) => lo + Math.floor(rand[r++] * (hi - lo + 1));
  const cases: (Case & { layout: MatmulLayout; at: number })[] = [];
  let at = 64 * pick(0, 2);
  for (let i = 0; i < 9; i++) {
    const batch = pick(1, 3), m = pick(3, 40), n = pick(3, 40);
    const strideC = batch > 1 && i % 2 === 0 ? m * n + pick(1, 9) : undefined;
    cases.push({
      m,
      n,
      k: pick(40, 160),
      batch,
      strideC,
      layout: (["nn", "nt", "tn"] as const)[i % 3],
      accumulate: i % 3 !== 1,
      alpha: i % 4 === 0 ? 1 : (rand[r++] - 0.5) * 4,
      at,
    });
    at += Math.ceil(((batch - 1) * (strideC ?? m * n) + m * n + pick(0, 99)) / 64) * 64;
  }
  const old = randomF32(3, at + 64);
  const immediate = await deferredRun(rt, POLICY, { cases, old, defer: false });
  const deferred = await deferredRun(rt, POLICY, { cases, old, defer: true });
  assert.equal(immediate.reduces, 0);
  assert.equal(deferred.reduces, cases.length, "all nine wait for one reduce");
  assert.deepEqual(deferred.bits, immediate.bits);
  // A budget of about two products' partials: the group flushes as it fills, same bits.
  const tight = await deferredRun(rt, { ...POLICY, scratchBytes: 64 << 10 }, {
    cases,
    old,
    defer: true,
  });
  assert.ok(tight.reduces < cases.length, `${tight.reduces} pending at the end`);
  assert.deepEqual(tight.bits, immediate.bits);
});

Deno.test("a product touching a pending output waits for its reduce", async () => {
  using rt = await GpuRuntime.create();
  using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: POLICY });
  const m = 16, n = 16, k = 96;
  const a = randomF32(1, k * m), b = randomF32(2, k * n);
  const ga = rt.buffer("a", a), gb = rt.buffer("b", b), c = rt.buffer("c", m * n * 4);
  const d = rt.buffer("d", m * n * 4);
  const step = rt.beginStep("read after deferred");
  mm.encode(step.pass, { a: ga, b: gb, c, m, n, k, layout: "tn", deferReduce: true });
  assert.equal(mm.pendingReduces, 1);
  // d = cᵀ·c reads c: the pending reduce runs first. Then c += aᵀ·b again, deferred.
  mm.encode(step.pass, { a: c, b: c, c: d, m: n, n, k: m, layout: "tn" });
  assert.equal(mm.pendingReduces, 0);
  mm.encode(step.pass, {
    a: ga,
    b: gb,
    c,
    m,
    n,
    k,
    layout: "tn",
    accumulate: true,
    deferReduce: true,
  });
  mm.encode(step.pass, {
    a: ga,
    b: gb,
    c,
    m,
    n,
    k,
    layout: "tn",
    accumulate: true,
    deferReduce: true,
  });
  assert.equal(mm.pendingReduces, 1, "the second accumulation into c flushed the first");
  mm.flushReduces(step.pass);
  await step.submit();
  const ab = matmulRef(a, b, { m, n, k, layout: "tn" });
  const tol = (k + 2) * 2 * F32_EPS * k * 3;
  assertClose(await rt.read(c), ab.map((x) => 3 * x), tol, "c = 3·aᵀb");
  const want = matmulRef(ab, ab, { m: n, n, k: m, layout: "tn" });
  assertClose(await rt.read(d), want, 1e-3, "d = cᵀc, c after its reduce");
  for (const x of [ga, gb, c, d]) rt.destroyBuffer(x);
});

Deno.test("reduces queued by an abandoned step are discarded, not run in the next one", async () => {
  using rt = await GpuRuntime.create();
  using mm = new Matmul(rt, GPU_PROFILE.matmul, { splitK: POLICY });
  const m = 16, n = 16, k = 96;
  const a = randomF32(1, k * m), b = randomF32(2, k * n), old = randomF32(3, m * n);
  const ga = rt.buffer("a", a), gb = rt.buffer("b", b), c = rt.buffer("c", old);
  const args: MatmulArgs = { a: ga, b: gb, c, m, n, k, layout: "tn", deferReduce: true };
  {
    // An exception while encoding: the step is dropped unsubmitted, its split product never runs.
    using abandoned = rt.beginStep("abandoned");
    mm.encode(abandoned.pass, args);
    assert.equal(mm.pendingReduces, 1);
    mm.discardReduces();
    assert.equal(mm.pendingReduces, 0);
  }
  const step = rt.beginStep("next");
  mm.encode(step.pass, { ...args, accumulate: true });
  mm.flushReduces(step.pass);
  await step.submit();
  // Without the discard the stale entry would first overwrite c with never-written partials.
  const ab = matmulRef(a, b, { m, n, k, layout: "tn" });
  const tol = (k + 2) * 2 * F32_EPS * k * 3;
  assertClose(await rt.read(c), ab.map((x, i) => x + old[i]), tol, "c = old + aᵀb");
});
