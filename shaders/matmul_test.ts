import assert from "node:assert/strict";
import fc from "fast-check";
import { GpuRuntime } from "./gpu.ts";
import {
  Matmul,
  type MatmulArgs,
  type MatmulInputType,
  type MatmulLayout,
  type MatmulOperandTypes,
  type MatmulVariant,
  matmulVariants,
} from "./matmul.ts";
import { CPU_PROFILE, GPU_PROFILE, type MatmulTiling } from "./profile.ts";
import { matmulRef } from "./reference/matmul.ts";
import { assertClose, bf16Encode, bf16Round, F32_EPS, randomF32 } from "./testing/kernels.ts";
import { GpuStageError } from "./errors.ts";

interface Case {
  m: number;
  n: number;
  k: number;
  batch?: number;
  accumulate?: boolean;
  alpha?: number;
}

/** Shapes covering 1×1×1, odd sizes (scalar path), multiples of 4 with ragged edge tiles. */
const CASES: Case[] = [
  { m: 1, n: 1, k: 1 },
  { m: 7, n: 13, k: 5 },
  { m: 6, n: 11, k: 16 },
  { m: 33, n: 20, k: 17 },
  { m: 17, n: 36, k: 12 },
  { m: 64, n: 48, k: 40, alpha: 0.5 },
  { m: 9, n: 12, k: 8, batch: 3, accumulate: true },
  { m: 5, n: 7, k: 3, batch: 2, accumulate: true, alpha: -2 },
];

async function runCase(
  rt: GpuRuntime,
  mm: Matmul,
  layout: MatmulLayout,
  c: Case,
  seed: number,
  inputType: MatmulOperandTypes = "f32",
  variant?: MatmulVariant,
): Promise<MatmulVariant | undefined> {
  const batch = c.batch ?? 1;
  const types = typeof inputType === "string" ? { a: inputType, b: inputType } : inputType;
  // 16-bit inputs: the reference multiplies the same (rounded) values, so the tolerance is f32's.
  const round = (x: Float32Array, t: MatmulInputType) =>
    t === "f16" ? x.map(Math.f16round) : t === "bf16" ? x.map(bf16Round) : x;
  const a = round(randomF32(seed, batch * c.m * c.k), types.a);
  const b = round(randomF32(seed + 1, batch * c.k * c.n), types.b);
  const old = randomF32(seed + 2, batch * c.m * c.n);
  const args0 = { m: c.m, n: c.n, k: c.k, layout, batch, accumulate: c.accumulate, alpha: c.alpha };
  const upload = (label: string, x: Float32Array, t: MatmulInputType) =>
    t === "f16"
      ? rt.buffer(label, new Uint16Array(new Float16Array(x).buffer))
      : t === "bf16"
      ? rt.buffer(label, bf16Encode(x))
      : rt.buffer(label, x);
  const ga = upload("a", a, types.a), gb = upload("b", b, types.b), gc = rt.buffer("c", old);
  const args: MatmulArgs = { ...args0, a: ga, b: gb, c: gc, inputType, variant };
  if (variant !== undefined && !matmulVariants(args, mm.tiling).includes(variant)) {
    for (const buf of [ga, gb, gc]) rt.destroyBuffer(buf);
    return undefined;
  }
  const step = rt.beginStep("matmul test");
  mm.encode(step.pass, args);
  await step.submit();
  const got = await rt.read(gc);
  for (const buf of [ga, gb, gc]) rt.destroyBuffer(buf);
  const want = matmulRef(a, b, { ...args0, accumulateInto: c.accumulate ? old : undefined });
  // Error bound of an f32 dot product of length k summed in any order with fma:
  // |err| <= (k + 2)·2u·(|alpha|·Σ|a||b| + |c_old|), u = 2⁻²⁴. Σ|a||b| comes from the reference
  // on absolute values, so the bound is per element and tight enough to catch a wrong index.
  const absA = a.map(Math.abs), absB = b.map(Math.abs);
  const mag = matmulRef(absA, absB, { ...args0, alpha: Math.abs(c.alpha ?? 1) });
  const tol = (i: number) =>
    (c.k + 2) * 2 * F32_EPS * (mag[i] + (c.accumulate ? Math.abs(old[i]) : 0)) + 1e-30;
  const used = mm.variant(args);
  assertClose(got, want, tol, `matmul ${layout} ${used} ${JSON.stringify(c)}`);
  return used;
}

async function runAll(
  rt: GpuRuntime,
  mm: Matmul,
  inputType: MatmulOperandTypes = "f32",
  variant?: MatmulVariant,
): Promise<Set<MatmulVariant>> {
  const seen = new Set<MatmulVariant>();
  let seed = 1;
  for (const layout of ["nn", "nt", "tn"] as const) {
    for (const c of CASES) {
      const used = await runCase(rt, mm, layout, c, seed += 3, inputType, variant);
      if (used) seen.add(used);
    }
  }
  return seen;
}

/**
 * A register tiling whose kernels compile in a fraction of the CPU profile's 16×32 (seconds each
 * on lavapipe): the f16 tests cover the f16 loads of every variant, which do not depend on the
 * tile; the profile's own tile is covered in f32 below.
 */
const SMALL_REGISTER: MatmulTiling = {
  strategy: "register",
  rows: 8,
  cols: 16,
  workgroup: [8, 8],
  depth: 0,
};

/** The variants the CPU profile picks on {@link CASES} (each layout). */
const CPU_DEFAULTS: MatmulVariant[] = ["dot", "outer", "packed", "scalar", "vec4"];

/** The CPU (register) variants, each forced wherever it can run. */
const CPU_VARIANTS: MatmulVariant[] = ["packed", "vec4", "outer", "transposed", "dot", "scalar"];

Deno.test("matmul matches the f64 reference for every layout and kernel variant", async (t) => {
  using rt = await GpuRuntime.create();
  await t.step("register tiling: defaults, then every CPU variant forced", async () => {
    const tiling: MatmulTiling = {
      strategy: "register",
      rows: 8,
      cols: 16,
      workgroup: [8, 8],
      depth: 0,
    };
    using mm = new Matmul(rt, tiling);
    const seen = await runAll(rt, mm);
    assert.deepEqual([...seen].sort(), CPU_DEFAULTS);
    for (const variant of CPU_VARIANTS) {
      const used = await runAll(rt, mm, "f32", variant);
      assert.deepEqual([...used], [variant], `${variant} ran on some case`);
    }
  });
  await t.step("a different register shape gives the same results", async () => {
    const tiling: MatmulTiling = {
      strategy: "register",
      rows: 3,
      cols: 8,
      workgroup: [4, 2],
      depth: 0,
    };
    await runAll(rt, new Matmul(rt, tiling));
  });
  await t.step("workgroup-tiled kernel (GPU profile), including a small odd tile", async () => {
    await runAll(rt, new Matmul(rt, GPU_PROFILE.matmul));
    const odd: MatmulTiling = { strategy: "tiled", rows: 3, cols: 2, workgroup: [4, 8], depth: 5 };
    await runAll(rt, new Matmul(rt, odd));
  });
});

Deno.test("matmul property: random shapes, layouts, batches and flags match the reference", async () => {
  using rt = await GpuRuntime.create();
  using mm = new Matmul(rt);
  const dim = fc.integer({ min: 1, max: 40 });
  const shape = fc.record({
    m: dim,
    n: dim,
    k: dim,
    batch: fc.integer({ min: 1, max: 3 }),
    accumulate: fc.boolean(),
    alpha: fc.constantFrom(1, 0.5, -1.5),
    layout: fc.constantFrom<MatmulLayout>("nn", "nt", "tn"),
    seed: fc.integer({ min: 0, max: 1 << 30 }),
  });
  // Fixed seed: a failure reproduces; shrinking reports the smallest failing shape.
  await fc.assert(
    fc.asyncProperty(shape, async ({ layout, seed, ...c }) => {
      await runCase(rt, mm, layout, c, seed);
    }),
    { numRuns: 60, seed: 20261121 },
  );
});

Deno.test("matmul with f16 inputs matches the reference on every variant", async (t) => {
  using rt = await GpuRuntime.create();
  if (!rt.hasF16) {
    console.warn(`skipped: adapter "${rt.info.description}" has no shader-f16`);
    return;
  }
  await t.step("register tiling (8×16)", async () => {
    using mm = new Matmul(rt, SMALL_REGISTER);
    const seen = await runAll(rt, mm, "f16");
    assert.deepEqual([...seen].sort(), CPU_DEFAULTS);
    assert.deepEqual([...await runAll(rt, mm, "f16", "transposed")], ["transposed"]);
  });
  await t.step("tiled profile", async () => {
    await runAll(rt, new Matmul(rt, GPU_PROFILE.matmul), "f16");
  });
});

Deno.test("matmul with one f16 and one f32 operand matches the reference", async () => {
  using rt = await GpuRuntime.create();
  if (!rt.hasF16) {
    console.warn(`skipped: adapter "${rt.info.description}" has no shader-f16`);
    return;
  }
  for (const types of [{ a: "f32", b: "f16" }, { a: "f16", b: "f32" }] as const) {
    using mm = new Matmul(rt, SMALL_REGISTER);
    const seen = await runAll(rt, mm, types);
    assert.deepEqual([...seen].sort(), CPU_DEFAULTS);
    await runAll(rt, new Matmul(rt, GPU_PROFILE.matmul), types);
  }
});

Deno.test("matmul with bf16 inputs matches the reference on every variant", async (t) => {
  using rt = await GpuRuntime.create();
  // On the 8×16 register tiling, as the f16 tests: bf16 loads are spelled the same for every tile,
  // and the CPU profile's own 16×32 kernels (minutes of compiling each in bf16 on a loaded CI
  // machine) are covered in f32 above. The variants picked by default are the forced ones' pipelines.
  await t.step("register tiling (8×16): the variants the CPU profile picks", async () => {
    using mm = new Matmul(rt, SMALL_REGISTER);
    assert.deepEqual([...await runAll(rt, mm, "bf16")].sort(), CPU_DEFAULTS);
  });
  await t.step("register tiling (8×16): every CPU variant forced", async () => {
    using mm = new Matmul(rt, SMALL_REGISTER);
    for (const variant of CPU_VARIANTS) {
      assert.deepEqual([...await runAll(rt, mm, "bf16", variant)], [variant]);
    }
  });
  await t.step("GPU profile (tiled-vec4), and a small odd tile", async () => {
    await runAll(rt, new Matmul(rt, GPU_PROFILE.matmul), "bf16");
    const odd: MatmulTiling = { strategy: "tiled", rows: 3, cols: 2, workgroup: [4, 8], depth: 5 };
    await runAll(rt, new Matmul(rt, odd), "bf16");
  });
});

Deno.test("matmul with one bf16 and one f32 operand matches the reference", async () => {
  using rt = await GpuRuntime.create();
  for (const types of [{ a: "f32", b: "bf16" }, { a: "bf16", b: "f32" }] as const) {
    using mm = new Matmul(rt, SMALL_REGISTER);
    assert.deepEqual([...await runAll(rt, mm, types)].sort(), CPU_DEFAULTS);
    assert.deepEqual([...await runAll(rt, mm, types, "transposed")], ["transposed"]);
    await runAll(rt, new Matmul(rt, GPU_PROFILE.matmul), types);
  }
});

Deno.test("f16 inputs without shader-f16 are refused by name", async () => {
  using rt = await GpuRuntime.create({ f16: false });
  const mm = new Matmul(rt);
  const x = rt.buffer("x", 64);
  const step = rt.beginStep("no f16");
  assert.throws(
    () => mm.encode(step.pass, { a: x, b: x, c: x, m: 2, n: 2, k: 2, inputType: "f16" }),
    /needs the "shader-f16" feature/,
  );
  await step.submit();
});

Deno.test("nt matmuls sharing the transpose scratch in one pass stay separate", async () => {
  using rt = await GpuRuntime.create();
  using mm = new Matmul(rt, CPU_PROFILE.matmul);
  const [m, k] = [12, 16];
  const shapes = [24, 8, 40]; // the scratch grows on the third call while the first two use it
  const a = randomF32(1, m * k), ga = rt.buffer("a", a);
  const bs = shapes.map((n, i) => randomF32(10 + i, n * k));
  for (const variant of ["transposed", "packed"] as const) {
    const cs = shapes.map((n, i) => rt.buffer(`c${i}`, m * n * 4));
    const step = rt.beginStep("three nt");
    shapes.forEach((n, i) => {
      const b = rt.buffer(`b${i}`, bs[i]);
      mm.encode(step.pass, { a: ga, b, c: cs[i], m, n, k, layout: "nt", variant });
    });
    await step.submit();
    for (const [i, n] of shapes.entries()) {
      const want = matmulRef(a, bs[i], { m, n, k, layout: "nt" });
      // Same bound as runCase, with Σ|a||b| ≤ k for inputs in [-1, 1].
      const tol = (k + 2) * 2 * F32_EPS * k;
      assertClose(await rt.read(cs[i]), want, tol, `${variant} product ${i}`);
    }
  }
});

Deno.test("batched matmul can share one operand across the batch (stride 0)", async () => {
  using rt = await GpuRuntime.create();
  for (const tiling of [CPU_PROFILE.matmul, GPU_PROFILE.matmul]) {
    using mm = new Matmul(rt, tiling);
    for (const layout of ["nn", "nt", "tn"] as const) {
      const [m, n, k, batch] = [5, 8, 12, 3];
      const a = randomF32(7, batch * m * k), b = randomF32(8, k * n);
      const c = rt.buffer("c", batch * m * n * 4);
      const args = { m, n, k, layout, batch, strideB: 0 };
      const step = rt.beginStep("shared b");
      mm.encode(step.pass, { ...args, a: rt.buffer("a", a), b: rt.buffer("b", b), c });
      await step.submit();
      const want = matmulRef(a, b, args);
      // Same bound as runCase, with Σ|a||b| ≤ k for inputs in [-1, 1].
      assertClose(
        await rt.read(c),
        want,
        (k + 2) * 2 * F32_EPS * k,
        `${tiling.strategy} ${layout}`,
      );
    }
  }
});

Deno.test("matmul reuses pipelines across shapes", async () => {
  using rt = await GpuRuntime.create();
  const mm = new Matmul(rt);
  const a = rt.buffer("a", 64 * 64 * 4),
    b = rt.buffer("b", 64 * 64 * 4),
    c = rt.buffer("c", 64 * 64 * 4);
  const step = rt.beginStep("shapes");
  for (const [m, n, k] of [[8, 8, 8], [16, 32, 8], [64, 64, 64]]) {
    mm.encode(step.pass, { a, b, c, m, n, k, layout: "nt" });
  }
  await step.submit();
  assert.equal(rt.pipelineCount, 2, "one transpose and one vec4 pipeline for every nt shape");
});

Deno.test("matmul rejects bad arguments with the binding and shape named", async () => {
  using rt = await GpuRuntime.create();
  const mm = new Matmul(rt);
  const small = rt.buffer("small", 10 * 4), big = rt.buffer("big", 1000 * 4);
  const step = rt.beginStep("bad");
  assert.throws(
    () => mm.encode(step.pass, { a: small, b: big, c: big, m: 4, n: 4, k: 4 }),
    /binding "a" \(f32\) holds 12 elements, needs \[m, k\] = \[4, 4\] = 16/,
  );
  assert.throws(
    () => mm.encode(step.pass, { a: big, b: small, c: big, m: 4, n: 4, k: 4, layout: "nt" }),
    /binding "b" \(f32\) holds 12 elements, needs \[n, k\]/,
  );
  assert.throws(() => mm.encode(step.pass, { a: big, b: big, c: big, m: 0, n: 4, k: 4 }), /m must/);
  assert.throws(
    () => mm.encode(step.pass, { a: big, b: big, c: big, m: 4, n: 4, k: 4, batch: 2, strideC: 8 }),
    /strideC 8 is less than m·n = 16; outputs overlap/,
  );
  assert.throws(
    () => new Matmul(rt, { strategy: "register", rows: 4, cols: 6, workgroup: [8, 8], depth: 0 }),
    RangeError,
  );
  await step.submit();
});

Deno.test("a shader that fails to compile is reported with its stage", async () => {
  using rt = await GpuRuntime.create();
  rt.pipeline("broken/kernel", () => "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }");
  await assert.rejects(() => rt.checkErrors(), (e: unknown) => {
    assert.ok(e instanceof GpuStageError);
    assert.match(e.message, /pipeline broken\/kernel/);
    return true;
  });
});

Deno.test("vec4 and packed give the bits of the K-order variants (outer, transposed, scalar)", async () => {
  // Every CPU variant but `dot` adds each output's products one at a time in K order with fma,
  // so they must agree bit for bit: swapping them (profile, shape) never changes a client's result.
  using rt = await GpuRuntime.create();
  const tilings: MatmulTiling[] = [
    CPU_PROFILE.matmul,
    { strategy: "register", rows: 4, cols: 8, workgroup: [3, 2], depth: 0 },
  ];
  // [m, n, k, batch]: ragged against every tile (n, k and m multiples of 4 only), and batched.
  const shapes = [[4, 4, 4, 1], [36, 44, 20, 1], [68, 52, 36, 1], [12, 8, 40, 2]];
  let seed = 100;
  for (const tiling of tilings) {
    using mm = new Matmul(rt, tiling);
    for (const [m, n, k, batch] of shapes) {
      for (const layout of ["nn", "nt", "tn"] as const) {
        for (const accumulate of [false, true, "chain"] as const) {
          const a = rt.buffer("a", randomF32(seed++, batch * m * k));
          const b = rt.buffer("b", randomF32(seed++, batch * n * k));
          const old = randomF32(seed++, batch * m * n);
          const args = { a, b, m, n, k, layout, batch, accumulate, alpha: accumulate ? 1 : 0.5 };
          const outs = new Map<MatmulVariant, GPUBuffer>();
          const step = rt.beginStep("vec4 bits");
          const variants = [
            "vec4",
            layout === "tn" ? [] : "packed",
            layout === "nt" ? "transposed" : "outer",
            "scalar",
          ].flat();
          for (const variant of variants) {
            const c = rt.buffer(`c ${variant}`, old);
            outs.set(variant as MatmulVariant, c);
            mm.encode(step.pass, { ...args, c, variant: variant as MatmulVariant });
          }
          await step.submit();
          const [want, ...others] = await Promise.all([...outs.values()].map((c) => rt.read(c)));
          const what = `${layout} [${m}, ${n}, ${k}] batch ${batch} accumulate ${accumulate} ` +
            `tiling ${tiling.rows}x${tiling.cols}/${tiling.workgroup}`;
          for (const [i, got] of others.entries()) {
            assert.deepEqual(
              new Uint32Array(got.buffer),
              new Uint32Array(want.buffer),
              `${[...outs.keys()][i + 1]} vs vec4: ${what}`,
            );
          }
          for (const buf of [a, b, ...outs.values()]) rt.destroyBuffer(buf);
        }
      }
    }
  }
});
