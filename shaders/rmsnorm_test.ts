import assert from "node:assert/strict";
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

for (const rowReduction of ["invocation", "workgroup"] as const) {
  Deno.test(`rmsnorm with a fused residual add matches the f64 reference and the bits of a separate add (${rowReduction} rows)`, async () => {
    using rt = await GpuRuntime.create();
    const norm = new RmsNorm(rt, 64, rowReduction);
    for (const [n, c] of [[9, 13], [33, 64], [5, 257]]) {
      const eps = 1e-5;
      const x = randomF32(n + 3 * c, n * c, -3, 3), add = randomF32(2 * n + c, n * c, -1, 1);
      const w = randomF32(c, c, 0.5, 1.5), dy = randomF32(n * c, n * c), dx0 = randomF32(c, n * c);
      const sum = x.map((v, i) => v + add[i]); // one f32 add each, as the kernel makes
      const gx = rt.buffer("x", x), gadd = rt.buffer("add", add), gsum = rt.buffer("x + add", sum);
      const gw = rt.buffer("w", w), gdy = rt.buffer("dy", dy), dw = rt.buffer("dw", c * 4);
      const out = rt.buffer("out", n * c * 4), rstd = rt.buffer("rstd", n * 4);
      const outSep = rt.buffer("out, separate", n * c * 4), rstdSep = rt.buffer("rstd 2", n * 4);
      const dx = rt.buffer("dx", dx0), dxSep = rt.buffer("dx, separate", n * c * 4);
      const step = rt.beginStep("rmsnorm fused");
      norm.forward(step.pass, { x: gx, add: gadd, weight: gw, out, rstd, n, c, eps });
      norm.forward(step.pass, { x: gsum, weight: gw, out: outSep, rstd: rstdSep, n, c, eps });
      const back = { x: gsum, weight: gw, dOut: gdy, rstd, dWeight: dw, n, c, eps };
      norm.backward(step.pass, { ...back, dx, accumulate: true });
      norm.backward(step.pass, { ...back, dx: dxSep });
      await step.submit();
      const [xAfter, y, ySep, dxGot, dxPart] = await Promise.all(
        [gx, out, outSep, dx, dxSep].map(async (b) => (await rt.read(b)).subarray(0, n * c)),
      );
      const what = `n=${n} c=${c}`;
      // The bits of the unfused kernels: x written back as x + add, y as the norm of that, and dx
      // as the f32 sum of what it held and the overwriting kernel's dx.
      assert.deepEqual(xAfter, sum, `x ${what}`);
      assert.deepEqual(y, ySep, `y ${what}`);
      assert.deepEqual(dxGot, dxPart.map((v, i) => v + dx0[i]), `dx ${what}`);
      // And the maths, against the f64 reference of the summed input (tolerances as above).
      const ref = rmsnormForwardRef(sum, w, n, c, eps);
      assertClose(y, ref.y, (i) => (c + 16) * F32_EPS * Math.abs(ref.y[i]), `y ref ${what}`);
      const { dx: wantDx } = rmsnormBackwardRef(sum, w, dy, n, c, eps);
      const tol = (i: number) => {
        const r = Math.floor(i / c), rs = ref.rstd[r];
        let absDot = 0;
        for (let j = 0; j < c; j++) absDot += Math.abs(dy[r * c + j] * w[j] * sum[r * c + j]);
        const mag = Math.abs(rs * w[i % c] * dy[i]) + (rs ** 3 / c) * Math.abs(sum[i]) * absDot;
        return (c + 16) * 2 * F32_EPS * mag + F32_EPS * Math.abs(dx0[i] + wantDx[i]);
      };
      assertClose(dxGot, wantDx.map((v, i) => v + dx0[i]), tol, `dx ref ${what}`);
    }
  });
}
