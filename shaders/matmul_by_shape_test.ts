/**
 * The matmul's table of tilings by shape class on lavapipe: each call runs its class's tiling,
 * pinned tilings are honoured or refused, and the table changes no bit, with split-K off and on
 * (split-K plans with the reference tiling, whichever tiling runs). Small tilings and low
 * thresholds, so tiny shapes cross every class and the pipelines compile quickly.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { GpuRuntime } from "./gpu.ts";
import { Matmul, type MatmulArgs, type MatmulLayout } from "./matmul.ts";
import {
  GPU_MATMUL_TABLE,
  GPU_PROFILE,
  type MatmulShapeRule,
  type MatmulTiling,
  SPLIT_K_OFF,
  type SplitKPolicy,
} from "./profile.ts";
import { randomF32 } from "./testing/kernels.ts";

const REFERENCE = GPU_PROFILE.matmul; // 64 x 64 tiles, depth 16
const tiling = (
  strategy: "tiled" | "tiled-vec4",
  rows: number,
  cols: number,
  workgroup: [number, number],
  depth: number,
): MatmulTiling => ({ strategy, rows, cols, workgroup, depth });

/** Rules over 64 x 64 reference tiles: 2+ tiles of nn, 3+ of nt, any tn; depths 4, 8 and 16. */
const TABLE: MatmulShapeRule[] = [
  { name: "nn", layouts: ["nn"], minWorkgroups: 2, tiling: tiling("tiled", 2, 4, [8, 4], 4) },
  {
    name: "nt",
    layouts: ["nt"],
    minWorkgroups: 3,
    tiling: tiling("tiled-vec4", 4, 4, [4, 4], 8),
  },
  {
    name: "tn",
    layouts: ["tn"],
    minWorkgroups: 1,
    tiling: tiling("tiled-vec4", 8, 4, [4, 8], 16),
  },
];
const SMALL_SPLIT: SplitKPolicy = { targetWorkgroups: 64, minSliceK: 16, scratchBytes: 4 << 20 };

Deno.test("each call runs its shape class's tiling; pinned tilings are honoured or refused", async () => {
  using rt = await GpuRuntime.create({ profile: { ...GPU_PROFILE, matmulByShape: TABLE } });
  using mm = new Matmul(rt);
  assert.deepEqual(mm.byShape, TABLE);
  const probe = rt.buffer("probe", 16); // never bound: the pick reads the shape only
  const args = (layout: MatmulLayout, m: number, n: number): MatmulArgs => ({
    a: probe,
    b: probe,
    c: probe,
    m,
    n,
    k: 8,
    layout,
  });
  assert.equal(mm.tilingFor(args("nn", 64, 64)), REFERENCE, "one tile");
  assert.equal(mm.tilingFor(args("nn", 65, 64)), TABLE[0].tiling, "two tiles");
  assert.equal(mm.tilingFor(args("nt", 128, 64)), REFERENCE);
  assert.equal(mm.tilingFor(args("nt", 64, 129)), TABLE[1].tiling);
  assert.equal(mm.tilingFor(args("tn", 1, 1)), TABLE[2].tiling);
  assert.equal(mm.tilingFor({ ...args("nt", 1, 1), batch: 3 }), TABLE[1].tiling, "batch counts");
  // Pinned: the whole product's tiling for a part that alone would pick another.
  assert.equal(mm.tilingFor({ ...args("nn", 1, 1), tiling: TABLE[0].tiling }), TABLE[0].tiling);
  assert.equal(mm.tilingFor({ ...args("nn", 99, 99), tiling: { ...REFERENCE } }).depth, 16);
  assert.throws(
    () => mm.tilingFor({ ...args("nn", 1, 1), tiling: tiling("tiled", 1, 1, [2, 2], 2) }),
    /neither the reference tiling nor one of this kernel's rules'/,
  );
  // A tiling given to the constructor runs every shape; so does the runtime's matmulTiling.
  using fixed = new Matmul(rt, REFERENCE);
  assert.deepEqual(fixed.byShape, []);
  assert.equal(fixed.tilingFor(args("tn", 1, 1)), REFERENCE);
  using forced = await GpuRuntime.create({
    profile: { ...GPU_PROFILE, matmulByShape: TABLE },
    matmulTiling: REFERENCE,
  });
  assert.deepEqual(forced.profile.matmulByShape, []);
});

Deno.test("rules the adapter cannot run are dropped; malformed ones refused", async () => {
  using rt = await GpuRuntime.create();
  const storage = rt.limits.maxComputeWorkgroupStorageSize;
  // 16·16 rows and columns of f32 at a depth that needs more workgroup memory than the adapter has.
  const depth = 16 * Math.ceil(storage / (2 * 16 * 16 * 4 * 16) + 1);
  const huge = tiling("tiled", 16, 16, [16, 16], depth);
  const reference = { ...REFERENCE, depth };
  const rules = [{ ...TABLE[0], tiling: huge }, TABLE[1]];
  using mm = new Matmul(rt, reference, { byShape: rules });
  assert.deepEqual(mm.byShape, [TABLE[1]]);
  assert.throws(
    () =>
      new Matmul(rt, REFERENCE, {
        byShape: [{ ...TABLE[1], tiling: { ...TABLE[1].tiling, rows: 6 } }],
      }),
    /matmul rule "nt": tiled-vec4 rows and cols must be multiples of 4/,
  );
  assert.throws(
    () =>
      new Matmul(rt, REFERENCE, {
        byShape: [{ ...TABLE[1], tiling: { ...TABLE[1].tiling, depth: 32 } }],
      }),
    /depth 32 must divide/,
  );
});

/** Runs `args` through each kernel into a copy of the same old C; returns the outputs' bits. */
async function bitsOf(
  rt: GpuRuntime,
  kernels: Matmul[],
  c: { m: number; n: number; k: number; layout: MatmulLayout; batch: number; seed: number },
  accumulate: boolean | "chain",
): Promise<Uint32Array[]> {
  const { m, n, k, batch } = c;
  const ga = rt.buffer("a", randomF32(c.seed, batch * m * k));
  const gb = rt.buffer("b", randomF32(c.seed + 1, batch * k * n));
  const old = randomF32(c.seed + 2, batch * m * n);
  const outs = kernels.map((_, i) => rt.buffer(`c${i}`, old));
  const step = rt.beginStep("by-shape test");
  kernels.forEach((mm, i) =>
    mm.encode(step.pass, { a: ga, b: gb, c: outs[i], m, n, k, layout: c.layout, batch, accumulate })
  );
  await step.submit();
  const got = await Promise.all(outs.map((o) => rt.read(o)));
  for (const buf of [ga, gb, ...outs]) rt.destroyBuffer(buf);
  return got.map((x) => new Uint32Array(x.buffer));
}

Deno.test("the table changes no bit: split-K off and on, every layout, ragged shapes", async () => {
  using rt = await GpuRuntime.create();
  for (const splitK of [SPLIT_K_OFF, SMALL_SPLIT]) {
    using picked = new Matmul(rt, REFERENCE, { splitK, byShape: TABLE });
    using fixed = new Matmul(rt, REFERENCE, { splitK });
    const cases = fc.record({
      m: fc.integer({ min: 1, max: 150 }),
      n: fc.integer({ min: 1, max: 150 }),
      k: fc.integer({ min: 1, max: 300 }),
      layout: fc.constantFrom<MatmulLayout>("nn", "nt", "tn"),
      batch: fc.integer({ min: 1, max: 2 }),
      accumulate: fc.constantFrom<boolean | "chain">(false, true, "chain"),
      seed: fc.integer({ min: 0, max: 1 << 30 }),
    });
    const probe = rt.buffer("probe", 16); // never bound: the plan and pick read the shape only
    let split = 0, claimed = 0;
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        const { m, n, k, layout, batch, accumulate } = c;
        const args = { a: probe, b: probe, c: probe, m, n, k, layout, batch, accumulate };
        // Split-K plans with the reference, so both kernels slice alike.
        assert.deepEqual(picked.splitK(args), fixed.splitK(args));
        if (picked.splitK(args).slices > 1) split++;
        if (picked.tilingFor(args) !== REFERENCE) claimed++;
        const [a, b] = await bitsOf(rt, [picked, fixed], c, c.accumulate);
        assert.deepEqual(a, b, JSON.stringify(c));
      }),
      { numRuns: 25, seed: 20261129 },
    );
    assert.ok(claimed > 0, "some products ran a rule's tiling");
    if (splitK === SMALL_SPLIT) assert.ok(split > 0, "some products split K");
  }
});

Deno.test("the GPU profile's own 8x8 tilings give the reference's bits", async () => {
  using rt = await GpuRuntime.create();
  using fixed = new Matmul(rt, REFERENCE, { splitK: SPLIT_K_OFF });
  const probe = rt.buffer("probe", 16);
  let seed = 11;
  // Each rule alone with its threshold at one tile, so small shapes run every rule's tiling (the
  // medium rules come after the wide ones, so a table of all would hide them).
  for (const rule of GPU_MATMUL_TABLE) {
    using picked = new Matmul(rt, REFERENCE, {
      splitK: SPLIT_K_OFF,
      byShape: [{ ...rule, minWorkgroups: 1 }],
    });
    assert.equal(picked.byShape.length, 1, `lavapipe runs ${rule.name}'s tiling`);
    const layout = rule.layouts[0];
    // Larger than a 128 x 128 tile both ways, K ragged against depths 8 and 16.
    const c = { m: 150, n: 133, k: 77, layout, batch: 1, seed: seed += 3 };
    assert.equal(
      picked.tilingFor({ ...c, a: probe, b: probe, c: probe }),
      picked.byShape[0].tiling,
    );
    const [a, b] = await bitsOf(rt, [picked, fixed], c, true);
    assert.deepEqual(a, b, rule.name);
  }
});

Deno.test("the one corner where depths differ: a chained −0 C with only −0 products and a padded K", async () => {
  // docs/kernels.md, "Why the choice changes no bit": padding adds fma(0, 0, acc) = acc + 0,
  // which turns −0 into +0. Accumulators started at +0 (every call but a chain from −0) never
  // hold −0, so nothing else can tell depths apart; the LM head's chains start from +0 sums.
  using rt = await GpuRuntime.create();
  const m = 4, n = 4, k = 8;
  const a = rt.buffer("a", new Float32Array(m * k).fill(-0));
  const b = rt.buffer("b", new Float32Array(k * n).fill(1));
  const signs: string[] = [];
  for (const depth of [8, 16]) {
    using mm = new Matmul(rt, tiling("tiled-vec4", 4, 4, [4, 4], depth), { splitK: SPLIT_K_OFF });
    const c = rt.buffer("c", new Float32Array(m * n).fill(-0));
    const step = rt.beginStep("−0 chain");
    mm.encode(step.pass, { a, b, c, m, n, k, layout: "nn", accumulate: "chain" });
    await step.submit();
    const out = await rt.read(c);
    signs.push(
      out.every((x) => Object.is(x, -0))
        ? "−0"
        : out.every((x) => Object.is(x, 0))
        ? "+0"
        : "mixed",
    );
  }
  // Depth 8 covers K = 8 exactly; depth 16 pads 8 zero products.
  assert.deepEqual(signs, ["−0", "+0"]);
});
