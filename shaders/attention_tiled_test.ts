import assert from "node:assert/strict";
import {
  attentionTiles,
  tiledDkvKernel,
  tiledForwardKernel,
  tiledWorkgroupBytes,
} from "./attention_tiled.ts";
import { GpuRuntime } from "./gpu.ts";
import { Attention } from "./attention.ts";
import { type AttentionTiling, GPU_PROFILE } from "./profile.ts";
import {
  assertMatchesReference,
  assertSameOutputs,
  type AttentionCase,
  caseName,
  runAttention,
} from "./testing/attention_cases.ts";

const ROWS: AttentionTiling = { strategy: "rows", rows: 0, staged: 0 };
const tiled = (rows: number, staged: number): AttentionTiling => ({
  strategy: "tiled",
  rows,
  staged,
});

/** Forward and backward of one case with `tiling`: the inputs and every output, read back. */
const run = (rt: GpuRuntime, c: AttentionCase, tiling: AttentionTiling, lockstep = 1) =>
  runAttention(rt, c, { workgroupSize: 64, lockstep, tiling });

/** Ragged T against every tile, GQA groups, D from 4 to 64, documents on and off, batch > 1. */
const CASES: AttentionCase[] = [
  { dims: { b: 1, t: 1, h: 1, kvh: 1, d: 4 }, seed: 1 },
  { dims: { b: 2, t: 19, h: 6, kvh: 2, d: 4 }, seed: 2 },
  { dims: { b: 3, t: 23, h: 4, kvh: 1, d: 8, scale: 0.7 }, seed: 3 },
  { dims: { b: 2, t: 21, h: 4, kvh: 2, d: 32 }, lengths: [[5, 1, 9, 6], [21]], seed: 4 },
  { dims: { b: 1, t: 37, h: 2, kvh: 1, d: 64 }, seed: 5 },
  { dims: { b: 2, t: 17, h: 2, kvh: 2, d: 12 }, lengths: [[1, 16], [8, 8, 1]], seed: 6 },
];

/** Tiles smaller than, not dividing, and larger than T: every boundary case of the walks. */
const TILINGS = [tiled(4, 3), tiled(5, 8), tiled(8, 1), tiled(64, 64)];

Deno.test("tiled attention gives the row kernels' bits: forward, dQ, dK, dV", async () => {
  using rt = await GpuRuntime.create();
  for (const c of CASES) {
    // The row kernels with a lockstep walk of 7 (runs crossing heads and batch entries), itself
    // bit-identical to the plain walk (attention_test.ts).
    const plain = (await run(rt, c, ROWS, 7)).got;
    for (const tiling of TILINGS) {
      const { got } = await run(rt, c, tiling);
      assertSameOutputs(got, plain, `${caseName(c)} tiles ${tiling.rows}x${tiling.staged}`);
    }
  }
});

Deno.test("several query rows per invocation give the row kernels' bits", async () => {
  // Each invocation owns 2, 3 or 4 consecutive query rows (forward and dQ): tiles of 4 x 2 = 8
  // positions, 5 x 3 = 15 and 16 x 4 = 64, ragged against every T, rows past T in the last
  // tile, and with documents rows of one invocation in different documents.
  using rt = await GpuRuntime.create();
  const several = [
    { ...tiled(4, 3), queries: 2 },
    { ...tiled(5, 8), queries: 3 },
    { ...tiled(16, 64), queries: 4 },
  ];
  for (const c of CASES) {
    const plain = (await run(rt, c, ROWS)).got;
    for (const tiling of several) {
      const { got } = await run(rt, c, tiling);
      assertSameOutputs(
        got,
        plain,
        `${caseName(c)} tiles ${tiling.rows}x${tiling.staged}` +
          ` queries ${tiling.queries}`,
      );
    }
  }
  const limits = { maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256 };
  assert.equal(attentionTiles(several[1], "dq", 8, false, limits).queries, 3);
  assert.equal(attentionTiles(several[1], "dkv", 8, false, limits).queries, 1);
  assert.throws(
    () => attentionTiles({ ...tiled(8, 8), queries: 9 }, "forward", 8, false, limits),
    /attention forward: tiled queries must be an integer in 1\.\.8, got 9/,
  );
});

Deno.test("a workgroup array per staged row gives the row kernels' bits, and its own pipelines", async () => {
  using rt = await GpuRuntime.create();
  const arrays = [
    { ...tiled(4, 3), rowArrays: true as const },
    { ...tiled(5, 8), queries: 3, rowArrays: true as const },
    { ...tiled(64, 64), rowArrays: true as const },
  ];
  for (const c of CASES) {
    const plain = (await run(rt, c, ROWS)).got;
    for (const tiling of arrays) {
      const { got } = await run(rt, c, tiling);
      assertSameOutputs(got, plain, `${caseName(c)} tiles ${tiling.rows}x${tiling.staged} arrays`);
    }
  }
  // Each pass keys its own pipeline: a key without the variant would run the flat kernel's twin.
  const before = rt.pipelineCount;
  await run(rt, CASES[1], tiled(4, 3));
  assert.equal(rt.pipelineCount - before, 3, "the flat tiles' forward, dQ and dK/dV pipelines");
  // The staged rows are two-dimensional and read a row at a time.
  const text = tiledForwardKernel(32, { rows: 4, staged: 3, queries: 1, rowArrays: true });
  assert.match(text, /var<workgroup> ks: array<array<vec4<f32>, 8>, 3>;/);
  assert.match(text, /ks\[so\]\[7u\]/);
  assert.doesNotMatch(text, /ks\[so \+/);
  const dkv = tiledDkvKernel(32, { rows: 4, staged: 3, queries: 1, rowArrays: true });
  assert.match(dkv, /var<workgroup> qs: array<array<vec4<f32>, 8>, 3>;/);
  assert.match(dkv, /qs\[x \/ 8u\]\[x % 8u\] = q\[src\];/);
});

Deno.test("tiled attention matches the f64 reference, with and without documents", async () => {
  using rt = await GpuRuntime.create();
  for (const c of [CASES[2], CASES[3]]) {
    const { host, got } = await run(rt, c, tiled(8, 5));
    assertMatchesReference(c, host, got);
  }
});

Deno.test("the GPU profile runs the tiled kernels for D = 32 and the row kernels for D = 64", async () => {
  using rt = await GpuRuntime.create({ profile: GPU_PROFILE, profileDispatches: true });
  // CASES[3] has D = 32 and documents, CASES[4] D = 64.
  const profiled = [await runAttention(rt, CASES[3]), await runAttention(rt, CASES[4])];
  const passes = rt.dispatchTimings!.map((t) => t.name.replace(/\/\d+(x\d+)?$/, ""));
  assert.deepEqual(passes.filter((n) => !n.includes("delta")), [
    "attention/tiled-forward/documents/d32",
    "attention/tiled-dq/documents/d32",
    "attention/tiled-dkv/documents/d32",
    "attention/forward/d64",
    "attention/dq/d64",
    "attention/dkv/lockstep32/d64",
  ]);
  // Either family gives the row kernels' bits.
  for (const [i, c] of [CASES[3], CASES[4]].entries()) {
    assertSameOutputs(profiled[i].got, (await run(rt, c, ROWS)).got, caseName(c));
  }
  assert.throws(
    () => new Attention(rt, { tiling: { ...tiled(64, 64), maxHeadDim: 0 } }),
    /maxHeadDim must be a positive integer, got 0/,
  );
});

Deno.test("tiled attention shrinks its staged rows to the workgroup memory, or refuses by name", () => {
  const limits = { maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256 };
  const gpu = tiled(64, 64);
  // D = 32: 64 key and value rows fill 16 KiB exactly; the packed kernel's bound needs a row less.
  assert.equal(attentionTiles(gpu, "forward", 32, false, limits).staged, 64);
  assert.equal(attentionTiles(gpu, "forward", 32, true, limits).staged, 63);
  for (const d of [4, 32, 64, 128, 256]) {
    for (const pass of ["forward", "dq", "dkv"] as const) {
      const { staged } = attentionTiles(gpu, pass, d, true, limits);
      assert.ok(staged >= 1 && tiledWorkgroupBytes(pass, d, staged, true) <= 16384, `${pass} ${d}`);
      assert.ok(tiledWorkgroupBytes(pass, d, staged + 1, true) > 16384 || staged === 64);
    }
  }
  assert.equal(attentionTiles(gpu, "dkv", 256, false, limits).staged, 7);
  assert.throws(
    () =>
      attentionTiles(gpu, "dkv", 256, false, { ...limits, maxComputeWorkgroupStorageSize: 1024 }),
    /attention dkv: one staged row of head size D = 256 needs 2056 bytes.*maxComputeWorkgroupStorageSize 1024/,
  );
  assert.throws(() => attentionTiles(tiled(512, 8), "forward", 32, false, limits), /1\.\.256/);
});

Deno.test("tiled attention runs at its smallest workgroup memory: D = 64 with 16 KiB", async () => {
  // The same bits with the tile the default WebGPU limit allows (32 staged rows at D = 64).
  using rt = await GpuRuntime.create();
  const c: AttentionCase = {
    dims: { b: 1, t: 70, h: 2, kvh: 1, d: 64 },
    lengths: [[33, 37]],
    seed: 9,
  };
  const limits = { maxComputeWorkgroupStorageSize: 16384, maxComputeInvocationsPerWorkgroup: 256 };
  assert.equal(attentionTiles(tiled(64, 64), "forward", 64, true, limits).staged, 31);
  const plain = (await run(rt, c, ROWS)).got;
  const { got } = await run(rt, c, tiled(64, 31));
  assertSameOutputs(got, plain, caseName(c));
});

Deno.test("tiled attention over more than 65535 workgroups: a two-dimensional grid", async () => {
  // One row per workgroup: 1,100 heads x 60 positions = 66,000 workgroups in every pass, past
  // one grid dimension's 65,535, so the tile index takes wid.y too.
  using rt = await GpuRuntime.create();
  const c: AttentionCase = { dims: { b: 1, t: 60, h: 1100, kvh: 1100, d: 4 }, seed: 11 };
  const plain = (await run(rt, c, ROWS)).got;
  const { got } = await run(rt, c, tiled(1, 4));
  assertSameOutputs(got, plain, caseName(c));
});
