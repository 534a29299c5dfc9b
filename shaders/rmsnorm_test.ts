import { GpuRuntime } from "./gpu.ts";
import { rmsnormBackwardRef, rmsnormForwardRef } from "./reference/rmsnorm.ts";
import { RmsNorm } from "./rmsnorm.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

for (const rowReduction of ["invocation", "workgroup"] as const) {
  Deno.test(`rmsnorm forward and backward match the f64 reference (${rowReduction} dw)`, async () => {
    using rt = await GpuRuntime.create();
    const norm = new RmsNorm(rt, 64, rowReduction);
    const cases = [[1, 1, 1e-5], [9, 13, 1e-6], [33, 64, 1e-5], [5, 257, 1e-3], [300, 3, 1e-5]];
    for (const [n, c, eps] of cases) {
      const x = randomF32(n * 7 + c, n * c, -3, 3), w = randomF32(c, c, 0.5, 1.5);
      const dy = randomF32(n + c, n * c), dw0 = randomF32(c + 1, c);
      const gx = rt.buffer("x", x), gw = rt.buffer("w", w), gdy = rt.buffer("dy", dy);
      const out = rt.buffer("out", n * c * 4), rstd = rt.buffer("rstd", n * 4);
      const dx = rt.buffer("dx", n * c * 4), dw = rt.buffer("dw", dw0);
      const step = rt.beginStep("rmsnorm");
      norm.forward(step.pass, { x: gx, weight: gw, out, rstd, n, c, eps });
      norm.backward(step.pass, { x: gx, weight: gw, dOut: gdy, rstd, dx, dWeight: dw, n, c, eps });
      await step.submit();
      const ref = rmsnormForwardRef(x, w, n, c, eps);
      // Forward: the row's sum of squares carries ≤ c·u relative error, inverseSqrt 2 ulp, two
      // products 2u: relative error ≤ (c/2 + 8)·u; (c + 16)·u leaves a factor 2.
      assertClose(await rt.read(out), ref.y, (i) => (c + 16) * F32_EPS * Math.abs(ref.y[i]), "y");
      assertClose(await rt.read(rstd), ref.rstd, (i) => (c + 16) * F32_EPS * ref.rstd[i], "rstd");
      // Backward dx = r·w·dy − (r³/c)·x·dot has cancellation: bound by the magnitudes of its two
      // terms, each with ≤ (c + 16)·u relative error; dw sums n rows: ≤ (n + 4)·u·Σ|terms|.
      const { dx: wantDx, dw: wantDw } = rmsnormBackwardRef(x, w, dy, n, c, eps);
      const absDot = Array.from({ length: n }, (_, r) => {
        let s = 0;
        for (let j = 0; j < c; j++) s += Math.abs(dy[r * c + j] * w[j] * x[r * c + j]);
        return s;
      });
      const dxTol = (i: number) => {
        const r = Math.floor(i / c), j = i % c, rs = ref.rstd[r];
        const mag = Math.abs(rs * w[j] * dy[i]) + (rs ** 3 / c) * Math.abs(x[i]) * absDot[r];
        return (c + 16) * 2 * F32_EPS * mag;
      };
      assertClose(await rt.read(dx), wantDx, dxTol, `dx n=${n} c=${c}`);
      const dwWant = wantDw.map((v, j) => v + dw0[j]);
      const dwTol = (j: number) => {
        let s = Math.abs(dw0[j]);
        for (let r = 0; r < n; r++) s += Math.abs(dy[r * c + j] * x[r * c + j] * ref.rstd[r]);
        return (n + c + 20) * F32_EPS * s;
      };
      assertClose(await rt.read(dw), dwWant, dwTol, `dw n=${n} c=${c}`);
    }
  });
}
