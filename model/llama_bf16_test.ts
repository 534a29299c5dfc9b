import assert from "node:assert/strict";
import type { ModelPrecision } from "./precision.ts";
import { spreadWeights } from "./testing/fixtures.ts";
import {
  assertNearReference,
  bits,
  LAYOUT,
  model,
  trainOneBatch,
} from "./testing/half_precision.ts";
import { GpuRuntime } from "../shaders/mod.ts";

/** bf16 needs no device feature: every test runs on a runtime without shader-f16. */
function plainRuntime(): Promise<GpuRuntime> {
  return GpuRuntime.create({ f16: false });
}

Deno.test("bf16 model: loss and gradients within bf16 rounding of the f64 reference", async () => {
  using rt = await plainRuntime();
  // As in llama_f16_test.ts, with bf16's unit roundoff u = 2⁻⁸ ≈ 3.9e-3 (8 bits of significand)
  // in place of f16's 2⁻¹¹: the loss within 2u (3.2e-4 measured), every tensor's gradient within
  // 20u in norm (2.3e-2 measured at worst; f32 meets 1e-5 and 2e-6, so these are bf16's alone).
  await assertNearReference(rt, "bf16", { loss: 8e-3, gradient: 8e-2 });
});

Deno.test("bf16 training follows f32's losses, and two runs are bit-identical", async () => {
  using rt = await plainRuntime();
  const steps = 12;
  const f32 = await trainOneBatch(rt, "f32", steps);
  const a = await trainOneBatch(rt, "bf16", steps);
  const b = await trainOneBatch(rt, "bf16", steps);
  // Every step's loss near f32's (1.3e-3 relative measured at worst): the masters and the update
  // are f32, so the runs stay together while the loss falls from ln 37 ≈ 3.6 to about 0.7 (a
  // stale or wrongly converted weight copy drifts away).
  for (let s = 0; s < steps; s++) {
    const rel = Math.abs(a.losses[s] - f32.losses[s]) / f32.losses[s];
    assert.ok(rel < 5e-3, `step ${s + 1}: bf16 loss ${a.losses[s]} vs f32 ${f32.losses[s]}`);
  }
  assert.ok(a.losses.at(-1)! < 0.6 * a.losses[0], `losses ${a.losses.join(" ")}`);
  assert.deepEqual(a.losses, b.losses);
  assert.deepEqual(bits(a.params), bits(b.params), "final masters of two bf16 runs");
  // The masters kept f32 precision: they are not bf16 values.
  const u = bits(a.params);
  assert.ok(u.some((x) => (x & 0xffff) !== 0));
});

Deno.test("bf16 model: saved activations take less memory, on an adapter without shader-f16", async () => {
  using rt = await plainRuntime();
  assert.equal(rt.hasF16, false);
  const w = spreadWeights(LAYOUT, 1, 0.02);
  using m32 = model(rt, w, "f32");
  using m16 = model(rt, w, "bf16");
  assert.equal(m16.precision, "bf16");
  assert.ok(m16.activationBytes < m32.activationBytes);
  assert.throws(() => model(rt, w, "bf8" as ModelPrecision), /"f32", "f16" or "bf16", got "bf8"/);
});
