import assert from "node:assert/strict";
import fc from "fast-check";
import {
  matmulRuleFor,
  type MatmulShape,
  type MatmulTable,
  pickMatmulTiling,
  tileWorkgroups,
  validateMatmulTable,
} from "./matmul_picker.ts";
import {
  CPU_PROFILE,
  GPU_MATMUL_TABLE,
  GPU_MEDIUM_WORKGROUPS,
  GPU_PROFILE,
  GPU_WIDE_WORKGROUPS,
  type MatmulShapeRule,
  type MatmulTiling,
} from "./profile.ts";
import { splitKPlan } from "./split_k.ts";

const LAYOUTS = ["nn", "nt", "tn"] as const;
/** Limits that never bind (an H200 binds 4 GiB). */
const ROOMY = { maxStorageBufferBindingSize: 2 ** 32 - 4, maxBufferSize: 2 ** 40 };

const shape = (layout: MatmulShape["layout"], m: number, n: number, k: number, batch = 1) => ({
  layout,
  m,
  n,
  k,
  batch,
});
const ruleName = (s: MatmulShape) => matmulRuleFor(GPU_PROFILE, s)?.name ?? "reference";

Deno.test("GPU table: each layout's medium and wide classes run their 8x8 tilings, narrow the reference", () => {
  assert.equal(GPU_WIDE_WORKGROUPS, 2112);
  assert.equal(GPU_MEDIUM_WORKGROUPS, GPU_PROFILE.splitK.targetWorkgroups);
  for (const layout of LAYOUTS) {
    for (
      const [size, s] of [["wide", shape(layout, 4096, 4096, 4096)], [
        "medium",
        shape(layout, 16384, 256, 256),
      ]] as const
    ) {
      const picked = pickMatmulTiling(GPU_PROFILE, s);
      const rule = GPU_MATMUL_TABLE.find((r) => r.name === `${size} ${layout}`)!;
      assert.equal(picked, rule.tiling, `${size} ${layout}`);
      assert.equal(ruleName(s), `${size} ${layout}`);
      assert.deepEqual([picked.strategy, picked.rows, picked.cols], ["tiled-vec4", 8, 8]);
    }
    assert.equal(pickMatmulTiling(GPU_PROFILE, shape(layout, 256, 256, 16384)), GPU_PROFILE.matmul);
  }
  // The H200's fastest per class (2026-11-30): [workgroup, depth] of each rule's 8x8 tiling.
  const measured: Record<string, [number[], number]> = {
    "wide nn": [[16, 16], 8],
    "wide nt": [[16, 16], 8],
    "wide tn": [[16, 16], 16],
    "medium nn": [[16, 16], 8],
    "medium nt": [[16, 8], 8],
    "medium tn": [[16, 8], 8],
  };
  assert.deepEqual(GPU_MATMUL_TABLE.map((r) => r.name), Object.keys(measured));
  for (const r of GPU_MATMUL_TABLE) {
    assert.deepEqual([r.tiling.workgroup, r.tiling.depth], measured[r.name], r.name);
  }
});

Deno.test("GPU table: the boundaries are 512 and 2112 reference tiles, batch included, K ignored", () => {
  for (const layout of LAYOUTS) {
    // [64·511, 64] is 511 tiles of 64 x 64, [64·2111, 64] 2111; one more row starts the next.
    assert.equal(ruleName(shape(layout, 64 * 511, 64, 256)), "reference");
    assert.equal(ruleName(shape(layout, 64 * 511 + 1, 64, 256)), `medium ${layout}`);
    assert.equal(ruleName(shape(layout, 64 * 2111, 64, 256)), `medium ${layout}`);
    assert.equal(ruleName(shape(layout, 64 * 2111 + 1, 64, 256)), `wide ${layout}`);
    assert.equal(ruleName(shape(layout, 64 * 2112, 1, 256)), `wide ${layout}`, "one column");
    assert.equal(ruleName(shape(layout, 64 * 1056, 64, 256, 2)), `wide ${layout}`, "batch 2");
    assert.equal(ruleName(shape(layout, 64 * 1056, 64, 256, 1)), `medium ${layout}`);
    assert.equal(ruleName(shape(layout, 64 * 256, 64, 256, 2)), `medium ${layout}`, "batch 2");
    assert.equal(ruleName(shape(layout, 64 * 256, 64, 256, 1)), "reference");
    for (const k of [1, 7, 1 << 20]) {
      assert.equal(ruleName(shape(layout, 4096, 4096, k)), `wide ${layout}`, `k ${k}`);
      assert.equal(ruleName(shape(layout, 2048, 1024, k)), `medium ${layout}`, `k ${k}`);
    }
  }
});

Deno.test("GPU table at the 20M and 1B models' shapes: narrow products keep the 64 x 64 tile", () => {
  // [layout, m, n, k, class]: the 20M at 16 x 1024 (N = 16384, LM-head chunk R = 4160), the 1B
  // at 1 x 128 (R = 128); the classes bench/matmul_gpu.ts --shapes timed on the H200.
  const cases: [MatmulShape["layout"], number, number, number, string][] = [
    ["nt", 16384, 256, 256, "medium nt"], // q/o forward: 1024 tiles
    ["nt", 16384, 768, 256, "wide nt"], // gate/up forward: 3072 tiles
    ["nt", 16384, 256, 768, "medium nt"], // down forward: 1024 tiles
    ["nn", 16384, 256, 256, "medium nn"], // q/o input gradient: 1024 tiles
    ["nn", 16384, 256, 768, "medium nn"], // gate/up input gradient dx [N, C]: 1024 tiles
    ["nn", 16384, 768, 256, "wide nn"], // down input gradient dx [N, F]: 3072 tiles
    ["tn", 256, 256, 16384, "reference"], // attention dW: 16 tiles (split-K)
    ["tn", 768, 256, 16384, "reference"], // MLP dW: 48 tiles (split-K)
    ["nt", 4160, 32000, 256, "wide nt"], // LM head logits: 65 x 500 tiles
    ["nn", 4160, 256, 32000, "reference"], // LM head input gradient: 260 tiles
    ["tn", 32000, 256, 4160, "medium tn"], // LM head dW: 2000 tiles, just under 2112
    ["nt", 1024, 768, 256, "reference"], // 20M at 4 x 256: gate/up forward, 192 tiles
    ["nt", 1024, 32000, 256, "wide nt"], // 20M at 4 x 256: logits, 8000 tiles
    ["tn", 32000, 256, 1024, "medium tn"], // 20M at 4 x 256: LM head dW, 2000 tiles
    ["nt", 128, 8192, 2048, "reference"], // 1B gate/up forward: 256 tiles
    ["nt", 128, 128256, 2048, "wide nt"], // 1B logits: 2 x 2004 tiles
    ["tn", 8192, 2048, 128, "wide tn"], // 1B MLP dW: 4096 tiles
    ["tn", 2048, 2048, 128, "medium tn"], // 1B attention dW: 1024 tiles
    ["tn", 128256, 2048, 128, "wide tn"], // 1B LM head dW: 64128 tiles
    ["nn", 128, 8192, 2048, "reference"], // 1B down input gradient: 256 tiles
    ["nn", 128, 2048, 128256, "reference"], // 1B LM head input gradient: 64 tiles
  ];
  for (const [layout, m, n, k, want] of cases) {
    const s = shape(layout, m, n, k);
    const tiles = tileWorkgroups(GPU_PROFILE.matmul, s);
    assert.equal(ruleName(s), want, `${layout} [${m}, ${n}, ${k}]: ${tiles} tiles`);
  }
});

Deno.test("CPU profile: no table, the register tiling for every shape", () => {
  for (const layout of LAYOUTS) {
    assert.equal(pickMatmulTiling(CPU_PROFILE, shape(layout, 8192, 8192, 64)), CPU_PROFILE.matmul);
  }
});

Deno.test("the pick is a pure function of the shape: one of the table's tilings, the same every time", () => {
  const own = [GPU_PROFILE.matmul, ...GPU_MATMUL_TABLE.map((r) => r.tiling)];
  const dim = fc.integer({ min: 1, max: 1 << 18 });
  fc.assert(
    fc.property(
      fc.constantFrom(...LAYOUTS),
      dim,
      dim,
      dim,
      fc.integer({ min: 1, max: 64 }),
      (layout, m, n, k, batch) => {
        const s = shape(layout, m, n, k, batch);
        const t = pickMatmulTiling(GPU_PROFILE, s);
        assert.ok(own.includes(t));
        assert.equal(pickMatmulTiling(GPU_PROFILE, { ...s }), t);
        // A copy of the profile picks an equal tiling: nothing but its fields counts.
        const copy = structuredClone({ matmul: GPU_PROFILE.matmul, byShape: GPU_MATMUL_TABLE });
        const picked = pickMatmulTiling({ matmul: copy.matmul, matmulByShape: copy.byShape }, s);
        assert.deepEqual(picked, t);
      },
    ),
    { numRuns: 500, seed: 20261129 },
  );
});

Deno.test("GPU table: no rule claims a product split-K splits, so split products run the reference", () => {
  assert.doesNotThrow(() => validateMatmulTable(GPU_PROFILE));
  for (const r of GPU_MATMUL_TABLE) {
    assert.ok(r.minWorkgroups >= GPU_PROFILE.splitK.targetWorkgroups, r.name);
    assert.equal(GPU_PROFILE.matmul.depth % r.tiling.depth, 0, r.name);
  }
  const dim = fc.integer({ min: 1, max: 1 << 16 });
  fc.assert(
    fc.property(fc.constantFrom(...LAYOUTS), dim, dim, dim, fc.integer({ min: 1, max: 8 }), (
      layout,
      m,
      n,
      k,
      batch,
    ) => {
      const s = shape(layout, m, n, k, batch);
      if (matmulRuleFor(GPU_PROFILE, s) === undefined) return;
      const plan = splitKPlan(GPU_PROFILE.splitK, GPU_PROFILE.matmul, s, ROOMY);
      assert.equal(plan.slices, 1, JSON.stringify(s));
    }),
    { numRuns: 500, seed: 7 },
  );
});

Deno.test("LM head parts: a vocabulary block alone can fall in another class than the whole head", () => {
  // The 1B head's logits [128, 128256] are wide; a quarter block [128, 32064] is medium, an
  // eighth [128, 16032] narrow. So the parts must run the whole product's tiling
  // (model/lm_head.ts passes it as `tiling`).
  assert.equal(ruleName(shape("nt", 128, 128256, 2048)), "wide nt");
  assert.equal(ruleName(shape("nt", 128, 32064, 2048)), "medium nt");
  assert.equal(ruleName(shape("nt", 128, 16032, 2048)), "reference");
  assert.equal(ruleName(shape("tn", 128256, 2048, 128)), "wide tn");
  assert.equal(ruleName(shape("tn", 4160, 2048, 128)), "medium tn");
  assert.equal(ruleName(shape("tn", 960, 2048, 128)), "reference");
});

Deno.test("tables the kernel cannot honour are refused by rule name", () => {
  const vec4 = (depth: number): MatmulTiling => ({
    strategy: "tiled-vec4",
    rows: 4,
    cols: 4,
    workgroup: [8, 8],
    depth,
  });
  const rule = (over: Partial<MatmulShapeRule>): MatmulShapeRule => ({
    name: "r",
    layouts: ["nn"],
    minWorkgroups: 8,
    tiling: vec4(8),
    ...over,
  });
  const table = (r: MatmulShapeRule, matmul = GPU_PROFILE.matmul): MatmulTable => ({
    matmul,
    matmulByShape: [r],
  });
  assert.doesNotThrow(() => validateMatmulTable(table(rule({}))));
  assert.throws(() => validateMatmulTable(table(rule({}), CPU_PROFILE.matmul)), /"r".*register/);
  assert.throws(
    () => validateMatmulTable(table(rule({ tiling: CPU_PROFILE.matmul }))),
    /must be workgroup-tiled/,
  );
  assert.throws(
    () => validateMatmulTable(table(rule({ tiling: vec4(32) }))),
    /depth 32 must divide the reference tiling's depth 16/,
  );
  assert.throws(() => validateMatmulTable(table(rule({ tiling: vec4(3) }))), /depth 3/);
  assert.throws(() => validateMatmulTable(table(rule({ layouts: [] }))), /layouts/);
  assert.throws(() => validateMatmulTable(table(rule({ minWorkgroups: -1 }))), /minWorkgroups/);
  assert.throws(() => validateMatmulTable(table(rule({ minWorkgroups: 1.5 }))), /minWorkgroups/);
});
