import assert from "node:assert/strict";
import { readModelDir, writeModelDir } from "./checkpoint.ts";
import { spreadWeights } from "./testing/fixtures.ts";
import {
  assertNearReference,
  bits,
  CONFIG,
  LAYOUT,
  model,
  trainOneBatch,
} from "./testing/half_precision.ts";
import { GpuRuntime } from "../shaders/mod.ts";

async function f16Runtime(): Promise<GpuRuntime | null> {
  const rt = await GpuRuntime.create();
  if (rt.hasF16) return rt;
  console.warn(`skipped: adapter "${rt.info.description}" has no shader-f16`);
  rt[Symbol.dispose]();
  return null;
}

Deno.test("f16 model: loss and gradients within f16 rounding of the f64 reference", async () => {
  using rt = await f16Runtime();
  if (!rt) return;
  // Each matmul operand but the gradients is rounded to f16 (relative error u = 2⁻¹¹ ≈ 4.9e-4)
  // and products are summed in f32, so each matmul output is off by at most 2u·Σ|a||b|; rounding
  // errors of random sign partly cancel in the loss (6e-5 measured), so 4u = 2e-3 bounds it with
  // room. The f32 model meets 1e-5 (llama_test.ts), so this tolerance is f16's alone.
  // Gradients: every tensor's error, as a norm, within 2% (40u) of its reference norm. The
  // rounding of saved activations and weights enters each product forward and again backward,
  // and compounds through two layers and the attention softmax (3.5e-3 measured at worst, 2e-6
  // in f32).
  await assertNearReference(rt, "f16", { loss: 2e-3, gradient: 2e-2 });
});

Deno.test("f16 model overfits one batch, and its f32 master weights round-trip bit for bit", async () => {
  using rt = await f16Runtime();
  if (!rt) return;
  const { losses, params: trained } = await trainOneBatch(rt, "f16", 40);
  // ln 37 ≈ 3.6 at the start; one memorised batch of 12 predictions goes far below.
  assert.ok(losses[0] > 3, `first loss ${losses[0]}`);
  assert.ok(losses.at(-1)! < 0.3, `losses ${losses.map((l) => l.toFixed(3)).join(" ")}`);
  const dir = await Deno.makeTempDir();
  try {
    await writeModelDir(dir, { config: CONFIG, layout: LAYOUT, weights: trained });
    const back = await readModelDir(dir);
    assert.ok(back.weights !== null);
    assert.ok(bits(back.weights).every((b, i) => b === bits(trained)[i]), "master weights");
    // The trained masters are not f16 values: they kept f32 precision.
    assert.ok(trained.some((x) => Math.f16round(x) !== x));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("f16 model: saved activations take less memory; f16 without shader-f16 is refused", async () => {
  using rt = await f16Runtime();
  if (!rt) return;
  const w = spreadWeights(LAYOUT, 1, 0.02);
  using m32 = model(rt, w, "f32");
  using m16 = model(rt, w, "f16");
  assert.equal(m32.precision, "f32");
  assert.ok(m16.activationBytes < m32.activationBytes);
  using plain = await GpuRuntime.create({ f16: false });
  assert.throws(() => model(plain, w, "f16"), /precision "f16" needs the "shader-f16" feature/);
});
