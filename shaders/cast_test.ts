import assert from "node:assert/strict";
import { CastF16 } from "./cast.ts";
import { GpuRuntime } from "./gpu.ts";
import { randomF32 } from "./testing/kernels.ts";

/** Spacing of f16 values around |x| (subnormal spacing 2⁻²⁴ below 2⁻¹⁴). */
function f16Ulp(x: number): number {
  const a = Math.abs(x);
  return a < 2 ** -14 ? 2 ** -24 : 2 ** (Math.floor(Math.log2(a)) - 10);
}

Deno.test("f32 to f16 conversion rounds to a neighbouring half, odd lengths included", async () => {
  using rt = await GpuRuntime.create();
  for (const [n, items] of [[1, 1], [7, 16], [1001, 16], [4096, 1]]) {
    const cast = new CastF16(rt, 64, items);
    const x = randomF32(n, n, -70, 70);
    x[0] = 1 + 2 ** -11; // a tie: either neighbour is allowed
    if (n > 3) x[3] = 3e-6; // subnormal in f16
    const gx = rt.buffer("x", x), out = rt.buffer("out", CastF16.bytes(n));
    const step = rt.beginStep("cast");
    cast.encode(step.pass, { x: gx, out, n });
    await step.submit();
    const got = new Float16Array(await rt.readBytes(out)).subarray(0, n);
    for (let i = 0; i < n; i++) {
      const err = Math.abs(got[i] - x[i]);
      assert.ok(err <= f16Ulp(x[i]), `n=${n} element ${i}: ${x[i]} became ${got[i]}`);
      if (err > f16Ulp(x[i]) / 2) assert.equal(i, 0, `only the tie may round away at ${i}`);
    }
  }
});

Deno.test("f16 conversion refuses a short output", async () => {
  using rt = await GpuRuntime.create();
  const cast = new CastF16(rt);
  using step = rt.beginStep("bad");
  assert.throws(
    () => cast.encode(step.pass, { x: rt.buffer("x", 40), out: rt.buffer("o", 16), n: 10 }),
    /cast to f16: binding "out" \(f16\) holds 8 elements, needs \[n\] = 10/,
  );
});
