import assert from "node:assert/strict";
import { GpuRuntime } from "./gpu.ts";
import { ropeRef } from "./reference/rope.ts";
import { Rope, ropeTable } from "./rope.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

Deno.test("rope forward and backward match the f64 reference and invert each other", async () => {
  using rt = await GpuRuntime.create();
  const rope = new Rope(rt);
  for (
    const [b, t, heads, d, theta] of [[1, 1, 1, 2, 10000], [3, 7, 5, 8, 10000], [
      2,
      33,
      2,
      64,
      500000,
    ]]
  ) {
    const n = b * t;
    const x = randomF32(t * d + heads, n * heads * d);
    const table = rt.buffer("table", ropeTable(t, d, theta));
    const fwd = rt.buffer("x", x), bwd = rt.buffer("dx", x), both = rt.buffer("both", x);
    const step = rt.beginStep("rope");
    rope.forward(step.pass, { x: fwd, table, n, t, heads, d });
    rope.backward(step.pass, { dx: bwd, table, n, t, heads, d });
    rope.forward(step.pass, { x: both, table, n, t, heads, d });
    rope.backward(step.pass, { dx: both, table, n, t, heads, d });
    await step.submit();
    // The table's angles are t·inv_freq rounded to f32 (HF's arithmetic): angle error
    // ≤ 3·t·u (inv_freq ≤ 1), so each output is within (3T + 4)·u·(|x_i| + |x_partner|).
    const half = d / 2;
    const tol = (i: number) => {
      const partner = i % d < half ? i + half : i - half;
      return (3 * t + 4) * F32_EPS * (Math.abs(x[i]) + Math.abs(x[partner]));
    };
    const dims = { n, t, heads, d, theta };
    assertClose(await rt.read(fwd), ropeRef(x, dims), tol, `forward t=${t} d=${d}`);
    assertClose(await rt.read(bwd), ropeRef(x, { ...dims, direction: -1 }), tol, "backward");
    assertClose(await rt.read(both), x, (i) => 2 * tol(i), "backward undoes forward");
  }
});

Deno.test("rope table follows HF's rotate_half frequencies", () => {
  const table = ropeTable(3, 4, 10000);
  // position 2, pair 1: angle 2 · 10000^(-2/4) = 0.02
  assert.ok(Math.abs(table[(2 * 2 + 1) * 2] - Math.cos(0.02)) < 1e-7);
  assert.ok(Math.abs(table[(2 * 2 + 1) * 2 + 1] - Math.sin(0.02)) < 1e-7);
  assert.throws(() => ropeTable(3, 5, 10000), /even/);
});
