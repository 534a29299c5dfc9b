import assert from "node:assert/strict";
import {
  classVerdicts,
  parseShapeSets,
  shapeClass,
  shapeSetMatmuls,
  type ShapeTiming,
  stepMatmuls,
} from "./matmul_shapes.ts";
import { readLlamaConfig } from "../model/mod.ts";
import {
  CPU_PROFILE,
  formatTiling,
  GPU_PROFILE,
  GPU_WIDE_WORKGROUPS,
  type MatmulShape,
} from "../shaders/mod.ts";

const config = (name: string) =>
  readLlamaConfig(new URL(`../config/models/${name}/config.json`, import.meta.url).pathname);

Deno.test("--shapes: model and micro-batch per item, bad items named", () => {
  assert.deepEqual(parseShapeSets("20m-4x256,1b-1x128"), [
    { name: "20m-4x256", model: "llama-20m", batch: 4, seqLen: 256 },
    { name: "1b-1x128", model: "llama-1b", batch: 1, seqLen: 128 },
  ]);
  for (const bad of ["20m", "20m-4x", "20m-0x256", "-4x256", "20m-4x256,"]) {
    assert.throws(() => parseShapeSets(bad), /expected <model>-<B>x<T>/, bad);
  }
});

Deno.test("the 20M model's step at 16 x 1024: twelve distinct matmuls, the head over chunks of 4160", async () => {
  const shapes = shapeSetMatmuls(
    await config("llama-20m"),
    parseShapeSets("20m-16x1024")[0],
    GPU_PROFILE,
  );
  const text = shapes.map((s) => `${s.layout} ${s.m}x${s.n}x${s.k}: ${s.uses.join(", ")}`);
  assert.deepEqual(text, [
    "nt 16384x256x256: q forward, k/v forward, o forward",
    "nn 16384x256x256: q input gradient, k/v input gradient, o input gradient",
    "tn 256x256x16384: q weight gradient, k/v weight gradient, o weight gradient",
    "nt 16384x768x256: gate/up forward",
    "nn 16384x256x768: gate/up input gradient",
    "tn 768x256x16384: gate/up weight gradient",
    "nt 16384x256x768: down forward",
    "nn 16384x768x256: down input gradient",
    "tn 256x768x16384: down weight gradient",
    "nt 4160x32000x256: LM head logits",
    "nn 4160x256x32000: LM head input gradient",
    "tn 32000x256x4160: LM head weight gradient",
  ]);
  assert.ok(shapes.every((s) => s.batch === 1));
});

Deno.test("the 1B model at 1 x 128: grouped key/value heads and the 128256-word head", async () => {
  const shapes = stepMatmuls(await config("llama-1b"), 128, 1024);
  const keys = shapes.map((s) => `${s.layout} ${s.m}x${s.n}x${s.k}`);
  assert.equal(shapes.length, 15);
  for (
    const want of [
      "nt 128x512x2048", // k/v forward: 8 heads of 64
      "tn 512x2048x128",
      "nt 128x8192x2048",
      "nn 128x8192x2048", // down input gradient
      "nt 128x128256x2048",
      "tn 128256x2048x128",
    ]
  ) assert.ok(keys.includes(want), want);
});

Deno.test("shape classes: narrow under the split-K target, wide from the table's threshold", () => {
  const s = (layout: MatmulShape["layout"], m: number, n: number): MatmulShape => ({
    layout,
    m,
    n,
    k: 64,
    batch: 1,
  });
  const cls = (x: MatmulShape) => shapeClass(GPU_PROFILE, x, GPU_WIDE_WORKGROUPS);
  assert.equal(cls(s("tn", 256, 256)), "tn narrow"); // 16 tiles
  assert.equal(cls(s("nt", 64 * 511, 64)), "nt narrow");
  assert.equal(cls(s("nt", 64 * 512, 64)), "nt medium"); // the split-K target, 512
  assert.equal(cls(s("nn", 64 * 2111, 64)), "nn medium");
  assert.equal(cls(s("nn", 64 * 2112, 64)), "nn wide");
  assert.equal(cls({ ...s("nn", 64 * 1056, 64), batch: 2 }), "nn wide");
});

Deno.test("class verdicts: the fastest single tiling per class against the picker's choices", () => {
  const ref = formatTiling(GPU_PROFILE.matmul);
  const ruleTiling = (name: string) =>
    formatTiling(GPU_PROFILE.matmulByShape.find((r) => r.name === name)!.tiling);
  const big = ruleTiling("wide nt"), mid = ruleTiling("medium nt");
  assert.notEqual(big, mid);
  const shape = (m: number, n: number): MatmulShape => ({ layout: "nt", m, n, k: 256, batch: 1 });
  const wide1 = shape(4160, 32000), wide2 = shape(16384, 768), medium = shape(16384, 256);
  const timings: ShapeTiming[] = [
    { shape: wide1, tiling: ref, ms: 10 },
    { shape: wide1, tiling: big, ms: 8 },
    { shape: wide1, tiling: mid, ms: 9 },
    { shape: wide2, tiling: ref, ms: 3 },
    { shape: wide2, tiling: big, ms: 4 },
    { shape: wide2, tiling: mid, ms: 3.5 },
    { shape: medium, tiling: ref, ms: 2 },
    { shape: medium, tiling: big, ms: 1 },
    { shape: medium, tiling: mid, ms: 1.5 },
    // Timed under one tiling only: left out.
    { shape: shape(64, 64), tiling: ref, ms: 1 },
  ];
  const verdicts = classVerdicts(timings, {
    profile: GPU_PROFILE,
    wideWorkgroups: GPU_WIDE_WORKGROUPS,
    format: formatTiling,
  });
  assert.deepEqual(verdicts, [
    {
      shapeClass: "nt medium",
      shapes: 1,
      best: big,
      bestMs: 1,
      picked: mid,
      pickedMs: 1.5,
      ratio: 1.5,
    },
    {
      shapeClass: "nt wide",
      shapes: 2,
      best: big,
      bestMs: 12,
      picked: big,
      pickedMs: 12,
      ratio: 1,
    },
  ]);
  // The CPU profile picks its register tiling, which was not timed: nothing to say.
  assert.deepEqual(
    classVerdicts(timings, { profile: CPU_PROFILE, wideWorkgroups: 2112, format: formatTiling }),
    [],
  );
});
