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
import { Matmul, type MatmulArgs, type MatmulLayout, type MatmulOperandTypes } from "./matmul.ts";
import {
  GPU_PROFILE,
  type MatmulTiling,
  type SplitKPolicy,
  vec4Tiling as vec4,
} from "./profile.ts";
import { matmulRef } from "./reference/matmul.ts";
import { tiledVec4Kernel } from "./matmul_wgsl.ts";
import { assertClose, bf16Encode, bf16Round, F32_EPS, randomF32 } from "./testing/kernels.ts";

/** The scalar kernel every vec4 tiling must match bit for bit (the GPU profile's until 2026-11-29). */
const SCALAR: MatmulTiling = {
  strategy: "tiled",
  rows: 4,
  cols: 4,
  workgroup: [16, 16],
  depth: 16,
};

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

Deno.test("the GPU profile's tiling is one of the tilings pinned here", () => {
  assert.ok(TILINGS.some((t) => JSON.stringify(t) === JSON.stringify(GPU_PROFILE.matmul)));
});

type OperandType = "f32" | "f16" | "bf16";

function upload(rt: GpuRuntime, label: string, x: Float32Array, t: OperandType): GPUBuffer {
  if (t === "f16") return rt.buffer(label, new Uint16Array(new Float16Array(x).buffer));
  if (t === "bf16") return rt.buffer(label, bf16Encode(x));
  return rt.buffer(label, x);
}

function rounded(x: Float32Array, t: OperandType): Float32Array {
  return t === "f16" ? x.map(Math.f16round) : t === "bf16" ? x.map(bf16Round) : x;
}

interface Case {
  m: number;
  n: number;
  k: number;
  layout: MatmulLayout;
  batch: number;
  accumulate: boolean | "chain";
  alpha: number;
  a: OperandType;
  b: OperandType;
  seed: number;
}

/**
 * Runs `c` on each kernel into its own copy of the same old C and returns the outputs' bits;
 * checks the first against the f64 reference within the bound of an f32 fma dot product.
 */
async function runOn(
  rt: GpuRuntime,
  kernels: Matmul[],
  c: Case,
  pin?: (mm: Matmul, args: MatmulArgs) => MatmulArgs,
): Promise<Uint32Array[]> {
  const a = rounded(randomF32(c.seed, c.batch * c.m * c.k), c.a);
  const b = rounded(randomF32(c.seed + 1, c.batch * c.k * c.n), c.b);
  const old = randomF32(c.seed + 2, c.batch * c.m * c.n);
  const shape = { m: c.m, n: c.n, k: c.k, layout: c.layout, batch: c.batch, alpha: c.alpha };
  const ga = upload(rt, "a", a, c.a), gb = upload(rt, "b", b, c.b);
  const inputType: MatmulOperandTypes = c.a === c.b ? c.a : { a: c.a, b: c.b };
  const outs = kernels.map((_, i) => rt.buffer(`c${i}`, old));
  const step = rt.beginStep("tiled-vec4 test");
  kernels.forEach((mm, i) => {
    const args: MatmulArgs = {
      ...shape,
      a: ga,
      b: gb,
      c: outs[i],
      accumulate: c.accumulate,
      inputType,
    };
    mm.encode(step.pass, pin ? pin(mm, args) : args);
  });
  await step.submit();
  const got = await Promise.all(outs.map((o) => rt.read(o)));
  for (const buf of [ga, gb, ...outs]) rt.destroyBuffer(buf);
  const into = c.accumulate ? old : undefined;
  const want = matmulRef(a, b, { ...shape, accumulateInto: into });
  const mag = matmulRef(a.map(Math.abs), b.map(Math.abs), { ...shape, alpha: Math.abs(c.alpha) });
  const tol = (i: number) =>
    (c.k + 2) * 2 * F32_EPS * (mag[i] + (into ? Math.abs(old[i]) : 0)) + 1e-30;
  assertClose(got[0], want, tol, `reference: ${JSON.stringify(c)}`);
  return got.map((x) => new Uint32Array(x.buffer));
}

function sameBits(bits: Uint32Array[], names: string[], c: Case): void {
  for (let i = 1; i < bits.length; i++) {
    assert.deepEqual(bits[i], bits[0], `${names[i]} against ${names[0]}: ${JSON.stringify(c)}`);
  }
}

Deno.test("tiled-vec4 gives the scalar tiled kernel's bits: random shapes, layouts, types, modes", async () => {
  using rt = await GpuRuntime.create();
  const types: [OperandType, OperandType][] = [["f32", "f32"], ["bf16", "bf16"], ["f32", "bf16"]];
  if (rt.hasF16) types.push(["f16", "f16"]);
  const off = { splitK: { targetWorkgroups: 0, minSliceK: 0, scratchBytes: 0 } };
  const kernels = [SCALAR, ...TILINGS].map((t) => new Matmul(rt, t, off));
  const names = ["tiled 4x4", ...TILINGS.map(name)];
  const dim = fc.integer({ min: 1, max: 70 });
  const cases = fc.record({
    m: dim,
    n: dim,
    k: dim,
    layout: fc.constantFrom<MatmulLayout>("nn", "nt", "tn"),
    batch: fc.integer({ min: 1, max: 2 }),
    accumulate: fc.constantFrom<boolean | "chain">(false, true, "chain"),
    alpha: fc.constantFrom(1, 0.5, -1.5),
    types: fc.constantFrom(...types),
    seed: fc.integer({ min: 0, max: 1 << 30 }),
  }).map(({ types: [a, b], ...c }) => ({
    ...c,
    a,
    b,
    alpha: c.accumulate === "chain" ? 1 : c.alpha,
  }));
  // Fixed seed: a failure reproduces; shrinking reports the smallest failing case.
  await fc.assert(
    fc.asyncProperty(cases, async (c) => sameBits(await runOn(rt, kernels, c), names, c)),
    { numRuns: 40, seed: 20261126 },
  );
  // Shapes larger than one tile in every direction, K over several slices and ragged.
  for (const layout of ["nn", "nt", "tn"] as const) {
    const c: Case = {
      m: 150,
      n: 133,
      k: 77,
      layout,
      batch: 1,
      accumulate: true,
      alpha: 1,
      a: "f32",
      b: "f32",
      seed: 5,
    };
    sameBits(await runOn(rt, kernels, c), names, c);
  }
  for (const mm of kernels) mm[Symbol.dispose]();
});

Deno.test("tiled-vec4 split over K gives the scalar tiled kernel's bits for the same slices", async () => {
  using rt = await GpuRuntime.create();
  // Small enough that these shapes split; slices pinned to a multiple of every depth (16, 8, 5, 4).
  const policy: SplitKPolicy = { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 4 << 20 };
  const kernels = [SCALAR, ...TILINGS].map((t) => new Matmul(rt, t, { splitK: policy }));
  const names = ["tiled 4x4", ...TILINGS.map(name)];
  const pin = (mm: Matmul, args: MatmulArgs): MatmulArgs => {
    const pinned = { ...args, sliceK: 80 };
    assert.ok(mm.splitK(pinned).slices > 1, "must split");
    return pinned;
  };
  let seed = 1;
  for (const layout of ["nn", "nt", "tn"] as const) {
    for (const [a, b] of [["f32", "f32"], ["bf16", "f32"]] as const) {
      const c: Case = {
        m: 37,
        n: 70,
        k: 250,
        layout,
        batch: 2,
        accumulate: true,
        alpha: -0.5,
        a,
        b,
        seed: seed += 3,
      };
      sameBits(await runOn(rt, kernels, c, pin), names, c);
    }
  }
  for (const mm of kernels) mm[Symbol.dispose]();
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
