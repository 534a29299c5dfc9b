/**
 * The `tiled-vec4` matmul (4×4 output blocks read as vec4, the next K slice prefetched), with one
 * slice of workgroup memory and double-buffered (`buffers: 2`), on lavapipe: the same bits as the
 * scalar `tiled` kernel for every layout, operand type, ragged edge, batch, accumulation mode and
 * split-K slicing, and within the f32 bound of the f64 reference. Its speed is a GPU question
 * (bench/matmul_gpu.ts --sweep); these tests pin its maths.
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
import { randomF32 } from "./testing/kernels.ts";
import {
  ALL_TYPES,
  type Case,
  LAYOUTS,
  randomModes,
  runOn,
  sameBits,
  SCALAR,
  type Types,
} from "./testing/matmul_bits.ts";

/**
 * A 128 × 128 tile of 8×8 per invocation (the shape tuned SGEMMs use), the GPU profile's 64 × 64
 * in 4×4 blocks, and an odd one: 15 invocations stage 20 × 5 and 40 × 5 slices, which do not
 * divide evenly, with a 4 × 8 block each; then each double-buffered (the 128 × 128 one at depth 4,
 * so that K = 70 runs 18 slices through the two buffers).
 *
 * The double-buffered ones fail the bit-for-bit comparison (checked by mutating the generator) if
 * the prefetched slice is staged into the buffer being read (`wa = ra`), if the FMAs always read
 * the first buffer, or if the loop's one barrier is dropped.
 */
const TILINGS: MatmulTiling[] = [
  vec4(8, 8, [16, 16], 8),
  vec4(4, 4, [16, 16], 16),
  vec4(4, 8, [5, 3], 5),
  vec4(8, 8, [16, 16], 4, 2),
  vec4(4, 4, [16, 16], 16, 2),
  vec4(4, 8, [5, 3], 5, 2),
];

const name = (t: MatmulTiling) =>
  `vec4 ${t.rows}x${t.cols}/d${t.depth}${t.buffers === 2 ? " double-buffered" : ""}`;

Deno.test("the GPU profile's tiling, less its unrolled K loop, is one of the tilings pinned here", () => {
  // The unrolled form is pinned with the other variants (matmul_tiled_vec4_variants_test.ts).
  const { unrollK: _, ...rolled } = GPU_PROFILE.matmul;
  assert.ok(TILINGS.some((t) => JSON.stringify(t) === JSON.stringify(rolled)));
});

/** One run of the covering design: a tiling of {@link TILINGS}, a layout and operand types. */
interface Row {
  tiling: number;
  layout: MatmulLayout;
  types: Types;
}

/**
 * Which tiling runs which layout with which operand types. Every pipeline is one (kernel, layout,
 * types, split) and costs roughly the same to build (about half a second of CPU with a cold shader
 * cache on lavapipe), so the full product of 6 tilings, 3 layouts and 4 operand types, split and
 * not, with the scalar kernel beside each, built 128 (with the split-K reduce). A tiling's code
 * paths (its register tile, workgroup shape, depth, one buffer or two, whole or guarded staging
 * loads) are fixed by the tiling; the layout picks which operand is staged along K and padded; the
 * operand types only how a word is loaded. They meet in pairs, so the design covers pairs: tiling
 * `i` with types `j` runs layout `(i + j + ⌊i/3⌋) mod 3`. Over 4 types (3 without f16) each tiling
 * runs every layout and every type, and each layout every type: 24 pipelines and 12 of the scalar
 * kernel, not 84. Split over K, 2 types: each tiling runs both types and two layouts, each tile
 * shape and each buffer count all three, and each layout both types: 12 and 6, not 42.
 * `design covers…` below checks these pairs; every run is a ragged shape compared bit for bit with
 * the scalar kernel, as the full product was.
 */
function design(types: readonly Types[]): Row[] {
  return TILINGS.flatMap((_, i) =>
    types.map((t, j) => ({ tiling: i, layout: LAYOUTS[(i + j + Math.floor(i / 3)) % 3], types: t }))
  );
}

const SPLIT_TYPES: Types[] = [["f32", "f32"], ["bf16", "f32"]];

/** The factors of a row whose pairs the design must cover. */
function factors(r: Row): Record<string, string> {
  const t = TILINGS[r.tiling];
  return {
    tiling: name(t),
    shape: `${t.rows}x${t.cols}/${t.workgroup.join("x")}`,
    buffers: `${t.buffers ?? 1}`,
    layout: r.layout,
    types: r.types.join("/"),
  };
}

/** The `[x, y]` values of factors `x`, `y` that no row of `rows` runs together. */
function missingPairs(rows: Row[], values: Row[], x: string, y: string): string[] {
  const seen = new Set(rows.map((r) => `${factors(r)[x]} with ${factors(r)[y]}`));
  const all = new Set(values.map((r) => `${factors(r)[x]} with ${factors(r)[y]}`));
  return [...all].filter((p) => !seen.has(p));
}

/** Every combination of tiling, layout and types: the values each factor takes. */
function fullProduct(types: readonly Types[]): Row[] {
  return TILINGS.flatMap((_, tiling) =>
    LAYOUTS.flatMap((layout) => types.map((t) => ({ tiling, layout, types: t })))
  );
}

Deno.test("design covers every pair of tiling, tile shape, buffer count, layout and types", () => {
  for (const types of [ALL_TYPES, ALL_TYPES.slice(0, 3), SPLIT_TYPES]) {
    const rows = design(types), all = fullProduct(types);
    const names = ["shape", "buffers", "layout", "types"];
    const pairs = names.flatMap((x, i) => names.slice(i + 1).map((y) => [x, y]));
    if (types !== SPLIT_TYPES) pairs.push(["tiling", "layout"], ["tiling", "types"]);
    else pairs.push(["tiling", "types"]);
    for (const [x, y] of pairs) {
      assert.deepEqual(missingPairs(rows, all, x, y), [], `${x} × ${y}, ${types.length} types`);
    }
  }
});

/** A Matmul per tiling of {@link TILINGS} and the scalar one; `using` disposes them all. */
function kernelsOn(rt: GpuRuntime, splitK: SplitKPolicy) {
  const kernels = [SCALAR, ...TILINGS].map((t) => new Matmul(rt, t, { splitK }));
  return {
    pair: (r: Row): Matmul[] => [kernels[0], kernels[r.tiling + 1]],
    names: (r: Row) => ["tiled 4x4", name(TILINGS[r.tiling])],
    [Symbol.dispose]: () => kernels.forEach((mm) => mm[Symbol.dispose]()),
  };
}

Deno.test("tiled-vec4 gives the scalar tiled kernel's bits: random shapes, layouts, types, modes", async () => {
  using rt = await GpuRuntime.create();
  const rows = design(rt.hasF16 ? ALL_TYPES : ALL_TYPES.slice(0, 3));
  using kernels = kernelsOn(rt, { targetWorkgroups: 0, minSliceK: 0, scratchBytes: 0 });
  const modes = randomModes(fc.integer({ min: 1, max: 70 }));
  const accumulate = [true, "chain", false] as const;
  for (const [index, row] of rows.entries()) {
    const [a, b] = row.types;
    const check = async (c: Case) =>
      sameBits(await runOn(rt, kernels.pair(row), c), kernels.names(row), c);
    // Fixed seed: a failure reproduces; shrinking reports the smallest failing case.
    await fc.assert(
      fc.asyncProperty(modes, (m) => check({ ...m, layout: row.layout, a, b })),
      { numRuns: 3, seed: 20261126 + index },
    );
    // Larger than one tile in every direction, K over several slices and ragged; a tiling's
    // consecutive rows take each accumulation mode in turn.
    const mode = accumulate[index % 3];
    await check({
      m: 150,
      n: 133,
      k: 77,
      layout: row.layout,
      batch: 1 + index % 2,
      accumulate: mode,
      alpha: mode === "chain" ? 1 : -0.5,
      a,
      b,
      seed: 5 + index,
    });
  }
});

Deno.test("tiled-vec4 split over K gives the scalar tiled kernel's bits for the same slices", async () => {
  using rt = await GpuRuntime.create();
  // Small enough that these shapes split; slices pinned to a multiple of every depth (16, 8, 5, 4).
  using kernels = kernelsOn(rt, { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 4 << 20 });
  const pin = (mm: Matmul, args: MatmulArgs): MatmulArgs => {
    const pinned = { ...args, sliceK: 80 };
    assert.ok(mm.splitK(pinned).slices > 1, "must split");
    return pinned;
  };
  let seed = 1;
  for (const row of design(SPLIT_TYPES)) {
    const [a, b] = row.types;
    const c: Case = {
      m: 37,
      n: 70,
      k: 250,
      layout: row.layout,
      batch: 2,
      accumulate: true,
      alpha: -0.5,
      a,
      b,
      seed: seed += 3,
    };
    sameBits(await runOn(rt, kernels.pair(row), c, pin), kernels.names(row), c);
  }
});

Deno.test("tiled-vec4 tilings the kernel or the adapter cannot run are refused by name", async () => {
  using rt = await GpuRuntime.create();
  assert.throws(() => new Matmul(rt, vec4(6, 4, [8, 8], 8)), /multiples of 4/);
  const storage = rt.limits.maxComputeWorkgroupStorageSize;
  // 16·16 rows and columns of f32, depth chosen to pass the adapter's workgroup memory.
  const depth = Math.ceil(storage / (2 * 16 * 16 * 4)) + 1;
  assert.throws(
    () => new Matmul(rt, vec4(16, 16, [16, 16], depth)),
    new RegExp(`over the adapter's maxComputeWorkgroupStorageSize ${storage}`),
  );
  const invocations = rt.limits.maxComputeInvocationsPerWorkgroup;
  assert.throws(
    () => new Matmul(rt, vec4(4, 4, [invocations, 2], 1)),
    /over the adapter's maxComputeInvocationsPerWorkgroup/,
  );
  // Double buffering stages two slices: a depth whose one slice fits and whose two do not.
  // Per K row 16·16 rows of A and columns of B, plus a vec4 of padding each for nt.
  const row = (2 * 16 * 16 + 8) * 4;
  const fits = Math.floor(storage / row);
  new Matmul(rt, vec4(16, 16, [16, 16], fits))[Symbol.dispose]();
  assert.throws(
    () => new Matmul(rt, vec4(16, 16, [16, 16], fits, 2)),
    new RegExp(`stages ${2 * fits * row} bytes .* maxComputeWorkgroupStorageSize ${storage}`),
  );
  const scalarDouble = { ...SCALAR, buffers: 2 } as const;
  assert.throws(() => new Matmul(rt, scalarDouble), /buffers: 2 .* needs the tiled-vec4 strategy/);
  const three = { ...vec4(4, 4, [8, 8], 8), buffers: 3 } as unknown as MatmulTiling;
  assert.throws(() => new Matmul(rt, three), /buffers must be 1 or 2/);
});

Deno.test("a double-buffered tiling builds its own pipelines, not its single-buffered twin's", async () => {
  using rt = await GpuRuntime.create();
  // K = 8 is too short to split unpinned (slices of at least 8); pinned, it runs two of 4.
  const policy: SplitKPolicy = { targetWorkgroups: 64, minSliceK: 8, scratchBytes: 1 << 20 };
  const twins = [vec4(4, 4, [4, 4], 4), vec4(4, 4, [4, 4], 4, 2)].map((t) =>
    new Matmul(rt, t, { splitK: policy })
  );
  const a = rt.buffer("a", randomF32(1, 8 * 8)), b = rt.buffer("b", randomF32(2, 8 * 8));
  const c = rt.buffer("c", 8 * 8 * 4);
  const before = rt.pipelineCount;
  const step = rt.beginStep("twins");
  for (const mm of twins) {
    mm.encode(step.pass, { a, b, c, m: 8, n: 8, k: 8 });
    mm.encode(step.pass, { a, b, c, m: 8, n: 8, k: 8, sliceK: 4 });
  }
  await step.submit();
  // Each twin: its unsplit kernel and its split one (the split-K reduction is shared). Fails (3)
  // if the pipeline keys leave out the buffer count: the twin would silently run the other's kernel.
  assert.equal(rt.pipelineCount - before, 2 * 2 + 1);
  for (const mm of twins) mm[Symbol.dispose]();
});

Deno.test("double-buffered tiled-vec4 waits at one barrier per K slice, the single-buffered at two", () => {
  for (const layout of ["nn", "nt", "tn"] as const) {
    for (const split of [false, true]) {
      const loop = (t: MatmulTiling) => {
        const source = tiledVec4Kernel(layout, t, "f32", split);
        const body = source.slice(source.indexOf("for (var k0"));
        return body.slice(0, body.indexOf("\n  }\n")).split("workgroupBarrier()").length - 1;
      };
      assert.equal(loop(vec4(8, 8, [16, 16], 8)), 2);
      assert.equal(loop(vec4(8, 8, [16, 16], 8, 2)), 1);
    }
  }
});
