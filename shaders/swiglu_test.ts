import { GpuRuntime } from "./gpu.ts";
import { swigluBackwardRef, swigluForwardRef } from "./reference/swiglu.ts";
import { SwiGlu } from "./swiglu.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

Deno.test("swiglu forward and backward match the f64 reference", async () => {
  using rt = await GpuRuntime.create();
  const act = new SwiGlu(rt);
  for (const n of [1, 31, 1000]) {
    const gate = randomF32(n, n, -6, 6), up = randomF32(n + 1, n), dOut = randomF32(n + 2, n);
    const gg = rt.buffer("gate", gate), gu = rt.buffer("up", up), gd = rt.buffer("dOut", dOut);
    const out = rt.buffer("out", n * 4), dGate = rt.buffer("dGate", n * 4);
    const dUp = rt.buffer("dUp", n * 4);
    const step = rt.beginStep("swiglu");
    act.forward(step.pass, { gate: gg, up: gu, out, n });
    act.backward(step.pass, { gate: gg, up: gu, dOut: gd, dGate, dUp, n });
    await step.submit();
    // WGSL's exp is accurate to 3 + 2|g| ulp, so σ(g) carries ≤ (8 + 2|g|)·u absolute error;
    // the outputs' errors are that times their sensitivity to σ, plus a few roundings. A factor 2
    // covers the roundings.
    const eσ = (i: number) => (8 + 2 * Math.abs(gate[i])) * F32_EPS;
    const fwdTol = (i: number) => 2 * eσ(i) * Math.abs(gate[i] * up[i]) + 1e-30;
    assertClose(await rt.read(out), swigluForwardRef(gate, up), fwdTol, `out n=${n}`);
    const want = swigluBackwardRef(gate, up, dOut);
    const gTol = (i: number) =>
      2 * (eσ(i) * (1 + 2 * Math.abs(gate[i])) + 8 * F32_EPS) * Math.abs(dOut[i] * up[i]) + 1e-30;
    assertClose(await rt.read(dGate), want.dGate, gTol, `dGate n=${n}`);
    const uTol = (i: number) => 2 * eσ(i) * Math.abs(dOut[i] * gate[i]) + 1e-30;
    assertClose(await rt.read(dUp), want.dUp, uTol, `dUp n=${n}`);
  }
});
