/**
 * The `tiled-vec4` variants a tuned SGEMM has (shaders/matmul_wgsl.ts, `tiledVec4Kernel`): the K
 * loop unrolled (`unrollK`, `--tiling` flag `u`) and the staged elements fetched from storage as
 * vec4 (`vec4Loads`, `g4`), alone, together and double-buffered, on lavapipe: the same bits as the
 * scalar `tiled` kernel for every layout, operand type, ragged edge, batch, accumulation mode,
 * alpha and split-K slicing; and each does what it says (its own pipelines, no K loop left, vec4
 * loads where the call's rows are whole vec4 and the scalar fetch elsewhere). Whether they pay is
 * a GPU question (`sh bench/gpu/run.sh sweep`).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { GpuRuntime } from "./gpu.ts";
import { Matmul, type MatmulArgs, type MatmulLayout } from "./matmul.ts";
import {
  GPU_PROFILE,
  type MatmulTiling,
  type SplitKPolicy,
  vec4Tiling as vec4,
} from "./profile.ts";
import { tiledVec4Kernel } from "./matmul_wgsl.ts";
import { formatTiling } from "./tiling_arg.ts";
import { randomF32 } from "./testing/kernels.ts";
import {
  ALL_TYPES,
  type Case,
  LAYOUTS,
  type OperandType,
  randomModes,
  runOn,
  sameBits,
  SCALAR,
  type Types,
} from "./testing/matmul_bits.ts";

const U = { unrollK: true }, G4 = { vec4Loads: true }, UG4 = { unrollK: true, vec4Loads: true };
const UKR = { unrollK: true, kRows: true }, G4KR = { vec4Loads: true, kRows: true };

/**
 * Each variant on a tile shape the plain kernel's test pins: unrolled on 128 × 128 tiles of 8×8;
 * vec4 loads on the GPU profile's 64 × 64 in 4×4 blocks; both on the odd 15 invocations whose
 * staging (20 × 8 and 40 × 8, 40 and 80 vec4) does not divide evenly; both double-buffered at
 * depth 4 (K = 76 runs 19 slices through the two buffers); vec4 loads double-buffered on the odd
 * tile; the GPU profile's own tiling, 64 × 64 in 4×4 blocks unrolled; 16 × 8 outputs per
 * invocation unrolled (the sweep's 128 accumulators, here on 64 × 64 tiles of 32 invocations); and
 * a workgroup array per K row (`kRows`) on the profile's unrolled tiling and on the odd tile with
 * vec4 loads (rolled: its staging writes four K rows a fetch).
 */
const TILINGS: MatmulTiling[] = [
  vec4(8, 8, [16, 16], 8, 1, U),
  vec4(4, 4, [16, 16], 16, 1, G4),
  vec4(4, 8, [5, 3], 8, 1, UG4),
  vec4(8, 8, [16, 16], 4, 2, UG4),
  vec4(4, 8, [5, 3], 4, 2, G4),
  vec4(4, 4, [16, 16], 16, 1, U),
  vec4(16, 8, [8, 4], 8, 1, U),
  vec4(4, 4, [16, 16], 16, 1, UKR),
  vec4(4, 8, [5, 3], 8, 1, G4KR),
];

Deno.test("the GPU profile's tiling is one of the variants pinned here", () => {
  assert.ok(TILINGS.some((t) => JSON.stringify(t) === JSON.stringify(GPU_PROFILE.matmul)));
});

/**
 * Each tiling runs every layout, tiling `i` on layout `l` with types `(i + l) mod T`: over the
 * nine tilings each layout meets every type, each tiling three of them (pipelines cost about half
 * a second each to build on lavapipe, so not the full product).
 */
function rows(types: readonly Types[]) {
  return TILINGS.flatMap((tiling, i) =>
    LAYOUTS.map((layout, l) => ({ tiling, layout, types: types[(i + l) % types.length] }))
  );
}

/** A Matmul per tiling and the scalar one; `using` disposes them all. */
function kernelsOn(rt: GpuRuntime, splitK: SplitKPolicy) {
  const scalar = new Matmul(rt, SCALAR, { splitK });
  const variants = new Map(TILINGS.map((t) => [t, new Matmul(rt, t, { splitK })]));
  return {
    pair: (t: MatmulTiling): Matmul[] => [scalar, variants.get(t)!],
    names: (t: MatmulTiling) => ["tiled 4x4", formatTiling(t)],
    [Symbol.dispose]: () => [scalar, ...variants.values()].forEach((mm) => mm[Symbol.dispose]()),
  };
}

Deno.test("tiled-vec4 variants give the scalar tiled kernel's bits: shapes, layouts, types, modes", async () => {
  using rt = await GpuRuntime.create();
  const types = rt.hasF16 ? ALL_TYPES : ALL_TYPES.slice(0, 3);
  using kernels = kernelsOn(rt, { targetWorkgroups: 0, minSliceK: 0, scratchBytes: 0 });
  // Multiples of 4 (ragged against every tile all the same), so vec4 loads run; the unrolled
  // kernel alone needs nothing of the shape and takes any size.
  const whole = fc.integer({ min: 1, max: 18 }).map((x) => 4 * x);
  const any = fc.integer({ min: 1, max: 70 });
  const accumulate = [true, "chain", false] as const;
  for (const [index, row] of rows(types).entries()) {
    const [a, b] = row.types;
    const check = async (c: Case) =>
      sameBits(await runOn(rt, kernels.pair(row.tiling), c), kernels.names(row.tiling), c);
    const dim = row.tiling.vec4Loads ? whole : any;
    // Fixed seed: a failure reproduces; shrinking reports the smallest failing case.
    await fc.assert(
      fc.asyncProperty(randomModes(dim), (m) => check({ ...m, layout: row.layout, a, b })),
      { numRuns: 3, seed: 20261130 + index },
    );
    // Larger than one tile every way, K over several slices and ragged against the depth; then,
    // for vec4 loads, a shape whose rows are not whole vec4 (the scalar fetch runs it).
    const mode = accumulate[index % 3];
    const big: Case = {
      m: 152,
      n: 132,
      k: 76,
      layout: row.layout,
      batch: 1 + index % 2,
      accumulate: mode,
      alpha: mode === "chain" ? 1 : -0.5,
      a,
      b,
      seed: 5 + index,
    };
    await check(big);
    if (row.tiling.vec4Loads) await check({ ...big, m: 37, n: 70, k: 29, seed: 7 + index });
  }
});

Deno.test("tiled-vec4 variants split over K give the scalar tiled kernel's bits", async () => {
  using rt = await GpuRuntime.create();
  // Small enough that these shapes split; slices pinned to 80, a multiple of every depth and of 4.
  using kernels = kernelsOn(rt, { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 4 << 20 });
  const pin = (mm: Matmul, args: MatmulArgs): MatmulArgs => {
    const pinned = { ...args, sliceK: 80 };
    assert.ok(mm.splitK(pinned).slices > 1, "must split");
    return pinned;
  };
  // Two layouts per tiling (each layout four times in all), f32 and bf16 × f32 in turn.
  const split = TILINGS.flatMap((tiling, i) =>
    [0, 1].map((j) => ({
      tiling,
      layout: LAYOUTS[(i + j) % 3],
      types: (j === 0 ? ["f32", "f32"] : ["bf16", "f32"]) as Types,
    }))
  );
  let seed = 1;
  for (const row of split) {
    const [a, b] = row.types;
    // K = 248: three slices of 80 and one of 8.
    const c: Case = {
      m: 36,
      n: 68,
      k: 248,
      layout: row.layout,
      batch: 2,
      accumulate: true,
      alpha: -0.5,
      a,
      b,
      seed: seed += 3,
    };
    sameBits(await runOn(rt, kernels.pair(row.tiling), c, pin), kernels.names(row.tiling), c);
  }
});

Deno.test("each variant builds its own pipelines; vec4 loads fall back to the scalar fetch's", async () => {
  using rt = await GpuRuntime.create();
  const policy: SplitKPolicy = { targetWorkgroups: 64, minSliceK: 8, scratchBytes: 1 << 20 };
  const tilings = [
    vec4(4, 4, [4, 4], 4),
    vec4(4, 4, [4, 4], 4, 1, U),
    vec4(4, 4, [4, 4], 4, 1, G4),
    vec4(4, 4, [4, 4], 4, 1, UG4),
    vec4(4, 4, [4, 4], 4, 2, UG4),
    vec4(4, 4, [4, 4], 4, 1, UKR),
  ];
  const kernels = tilings.map((t) => new Matmul(rt, t, { splitK: policy }));
  const a = rt.buffer("a", randomF32(1, 2 * 8 * 8 + 1)),
    b = rt.buffer("b", randomF32(2, 2 * 8 * 8));
  const c = rt.buffer("c", 2 * 8 * 8 * 4);
  const run = async (args: Omit<MatmulArgs, "a" | "b" | "c">) => {
    const before = rt.pipelineCount;
    const step = rt.beginStep("variants");
    for (const mm of kernels) {
      mm.encode(step.pass, { a, b, c, ...args });
      mm.encode(step.pass, { a, b, c, ...args, sliceK: 4 });
    }
    await step.submit();
    return rt.pipelineCount - before;
  };
  // Whole vec4 rows: each tiling its unsplit and its split kernel (the reduction is shared).
  // Fails if a pipeline key leaves out a variant: the tiling would silently run its twin's kernel.
  assert.equal(await run({ m: 8, n: 8, k: 8 }), 6 * 2 + 1);
  // Rows of 7 (nt: A's and B's rows run along K) are not whole vec4: the vec4-load tilings run
  // their scalar-fetch twins (plain, unrolled, unrolled double-buffered), and only those build,
  // beside the K-row tiling's own.
  assert.equal(await run({ m: 7, n: 7, k: 7, layout: "nt" }), (3 + 1) * 2);
  // So does a batch whose A matrices start 65 elements apart (a vec4 would straddle two rows).
  const apart = { m: 8, n: 8, k: 8, batch: 2, strideA: 65, strideC: 64, layout: "tn" } as const;
  assert.equal(await run(apart), (3 + 1) * 2);
  for (const mm of kernels) mm[Symbol.dispose]();
});

/** The source of `t`'s kernel for `layout`, split or not. */
const source = (layout: MatmulLayout, t: MatmulTiling, split: boolean) =>
  tiledVec4Kernel(layout, t, "f32", split);

Deno.test("unrolled tiled-vec4 has no K loop: one block of FMAs per K step of a slice", () => {
  for (const layout of LAYOUTS) {
    for (const split of [false, true]) {
      for (const buffers of [1, 2] as const) {
        const t = vec4(8, 4, [16, 16], 8, buffers, U);
        const text = source(layout, t, split);
        const loops = text.match(/\bfor \(/g) ?? [];
        assert.equal(loops.length, 1, "only the loop over K slices");
        assert.doesNotMatch(text, /\bkk\b/);
        // depth × (rows/4 · cols/4 blocks of 4 vec4 FMAs), and the same FMAs as the rolled loop's.
        const fmas = (s: string) => (s.match(/ = fma\(/g) ?? []).length;
        assert.equal(fmas(text), 8 * 2 * 1 * 4);
        const rolled = source(layout, vec4(8, 4, [16, 16], 8, buffers), split);
        assert.equal(fmas(rolled) * 8, fmas(text));
        assert.match(rolled, /for \(var kk = 0u; kk < 8u; kk\+\+\)/);
      }
    }
  }
});

Deno.test("kRows stages a workgroup array per K row: an unrolled read's one dynamic index is the invocation's", () => {
  for (const layout of LAYOUTS) {
    for (const split of [false, true]) {
      const text = source(layout, vec4(8, 4, [16, 8], 8, 1, UKR), split);
      // 8 K rows of 64 tile rows (A) and 64 tile columns (B), as vec4, padded where staged along K.
      const aRow = 16 + (layout !== "tn" ? 1 : 0), bRow = 16 + (layout === "nt" ? 1 : 0);
      assert.match(text, new RegExp(`var<workgroup> As: array<array<vec4<f32>, ${aRow}>, 8>;`));
      assert.match(text, new RegExp(`var<workgroup> Bs: array<array<vec4<f32>, ${bRow}>, 8>;`));
      const reads = text.match(/let [ab]\d = [AB]s\[[^;]*;/g) ?? [];
      // depth × (rows/4 + cols/4) reads, each at a constant K row and column + lid.
      assert.equal(reads.length, 8 * (2 + 1));
      for (const read of reads) assert.match(read, /= [AB]s\[\d+u\]\[\d+u \+ lid\.[xy]\];$/);
      // Without it, one flat index per read.
      const flat = source(layout, vec4(8, 4, [16, 8], 8, 1, U), split);
      assert.doesNotMatch(flat, /array<array</);
      assert.match(flat, /let a0 = As\[\d+u \+ lid\.y\];/);
    }
  }
});

Deno.test("vec4-load tiled-vec4 binds its operands as vec4 and fetches a vec4 per four elements", () => {
  const loads = (text: string, operand: "a" | "b") =>
    (text.match(new RegExp(`\\b${operand}\\[`, "g")) ?? []).length;
  for (const layout of LAYOUTS) {
    for (const [type, t4] of [["f32", "vec4<f32>"], ["bf16", "vec2<u32>"], ["f16", "vec4<f16>"]]) {
      const t = vec4(8, 8, [16, 16], 8, 1, G4);
      const text = tiledVec4Kernel(layout, t, type as OperandType, false);
      assert.match(text, new RegExp(`var<storage, read> a: array<${t4}>;`));
      assert.match(text, new RegExp(`var<storage, read> b: array<${t4}>;`));
      // 128 × 8 elements of each operand per slice among 256 invocations: one vec4 each, in the
      // prologue's fetch and the loop's prefetch; the scalar fetch takes four.
      assert.equal(loads(text, "a"), 2, `${layout} ${type}`);
      assert.equal(loads(text, "b"), 2, `${layout} ${type}`);
      const plain = tiledVec4Kernel(layout, vec4(8, 8, [16, 16], 8), type as OperandType);
      assert.equal(loads(plain, "a"), 8);
      assert.match(plain, /var<storage, read> a: array<(f32|u32|f16)>;/);
    }
  }
});

Deno.test("vec4 loads need a depth that is a multiple of 4, and the variants need tiled-vec4", async () => {
  using rt = await GpuRuntime.create();
  assert.throws(() => new Matmul(rt, vec4(4, 4, [8, 8], 6, 1, G4)), /multiple of 4/);
  new Matmul(rt, vec4(4, 4, [8, 8], 6, 1, U))[Symbol.dispose]();
  assert.throws(
    () => new Matmul(rt, { ...SCALAR, unrollK: true }),
    /unrollK needs the tiled-vec4 strategy/,
  );
  assert.throws(
    () => new Matmul(rt, { ...SCALAR, vec4Loads: true }),
    /vec4Loads needs the tiled-vec4 strategy/,
  );
  assert.throws(() => new Matmul(rt, vec4(4, 4, [8, 8], 8, 2, UKR)), /kRows needs one buffer/);
  assert.throws(
    () => new Matmul(rt, { ...SCALAR, kRows: true }),
    /kRows needs the tiled-vec4 strategy/,
  );
  const odd = { ...vec4(4, 4, [8, 8], 8), unrollK: false } as unknown as MatmulTiling;
  assert.throws(() => new Matmul(rt, odd), /unrollK must be true or left out/);
});
