import assert from "node:assert/strict";
import { dctMatrix, encode } from "./dct.ts";
import { chunkLayout } from "./layout.ts";
import {
  FAST_DCT_MAX,
  fastDctCost,
  fastDctErrorBound,
  fastDctPlan,
  fastEncodeErrorBound,
  fastIdctPlan,
  hasFastDct,
  runFastDct,
} from "./fast_dct.ts";
import { randomF32 } from "../shaders/testing/kernels.ts";

const SIZES = [1, 2, 4, 8, 16, 32, 64, 128];

function dense(n: number, x: ArrayLike<number>): Float64Array {
  const c = dctMatrix(n);
  const out = new Float64Array(n);
  for (let u = 0; u < n; u++) {
    for (let i = 0; i < n; i++) out[u] += c[u * n + i] * x[i];
  }
  return out;
}

Deno.test("fast DCT plan equals the dense orthonormal DCT-II in f64", () => {
  for (const n of SIZES) {
    const plan = fastDctPlan(n);
    // Every unit vector: the plan's matrix is C itself.
    for (let i = 0; i < n; i++) {
      const e = new Float64Array(n);
      e[i] = 1;
      const got = runFastDct(plan, e);
      const c = dctMatrix(n);
      for (let u = 0; u < n; u++) {
        assert.ok(
          Math.abs(got[u] - c[u * n + i]) < 1e-13,
          `n=${n}: C[${u}][${i}] = ${c[u * n + i]}, plan gives ${got[u]}`,
        );
      }
    }
  }
});

Deno.test("fast inverse plan equals the transposed DCT matrix and inverts the forward plan", () => {
  for (const n of SIZES) {
    const inverse = fastIdctPlan(n);
    const c = dctMatrix(n);
    for (let u = 0; u < n; u++) {
      const e = new Float64Array(n);
      e[u] = 1;
      const got = runFastDct(inverse, e);
      for (let i = 0; i < n; i++) {
        assert.ok(
          Math.abs(got[i] - c[u * n + i]) < 1e-13,
          `n=${n}: Cᵀ[${i}][${u}] = ${c[u * n + i]}, plan gives ${got[i]}`,
        );
      }
    }
    const x = randomF32(7 * n, n, -1, 1);
    const back = runFastDct(inverse, runFastDct(fastDctPlan(n), x));
    for (let i = 0; i < n; i++) assert.ok(Math.abs(back[i] - x[i]) < 1e-12, `n=${n} i=${i}`);
    // f32 evaluation within the same running bound the forward plan has.
    const z = randomF32(9 * n, n, -1, 1);
    const got = runFastDct(inverse, z, Math.fround);
    const bound = fastDctErrorBound(inverse, z);
    const want = runFastDct(inverse, z);
    for (let i = 0; i < n; i++) {
      assert.ok(Math.abs(got[i] - want[i]) <= bound[i], `n=${n} i=${i}: outside the bound`);
    }
    // About the forward plan's cost (the transpose of a linear program has as many operations,
    // plus the accumulations where a forward variable fans out).
    const f = fastDctCost(fastDctPlan(n)), b = fastDctCost(inverse);
    assert.ok(b.mul + b.add <= 1.1 * (f.mul + f.add) + 1, `n=${n}: ${JSON.stringify(b)}`);
  }
});

Deno.test("fast DCT needs about 12 operations per value at n = 64 (dense: 64 multiply-adds)", () => {
  const { mul, add } = fastDctCost(fastDctPlan(64));
  assert.equal(mul, 32 * 6 + 64); // (n/2)·log₂n butterflies and n scales
  assert.ok(add <= 1.5 * 64 * 6, `${add} additions`);
  assert.ok((mul + add) / 64 < 13, `${(mul + add) / 64} operations per value`);
});

Deno.test("f32 evaluation stays within the running rounding bound, which is tight", () => {
  for (const n of SIZES) {
    const plan = fastDctPlan(n);
    let worst = 0, widest = 0;
    for (let trial = 0; trial < 20; trial++) {
      const x = randomF32(100 * n + trial, n, -1, 1);
      const want = dense(n, x);
      const got = runFastDct(plan, x, Math.fround);
      const bound = fastDctErrorBound(plan, x);
      for (let u = 0; u < n; u++) {
        const e = Math.abs(got[u] - want[u]);
        assert.ok(e <= bound[u], `n=${n} u=${u}: error ${e} above the bound ${bound[u]}`);
        worst = Math.max(worst, e);
        widest = Math.max(widest, bound[u]);
      }
    }
    // Useful as a test tolerance: within 40x of the observed error (n > 2), and small.
    if (n > 2) assert.ok(widest < 40 * worst, `n=${n}: bound ${widest}, observed ${worst}`);
    assert.ok(widest < 64 * 2 ** -24 * Math.sqrt(n) * Math.log2(2 * n), `n=${n}: ${widest}`);
  }
});

Deno.test("blocked bound: each 2-D coefficient's error is within fastEncodeErrorBound", () => {
  const layout = chunkLayout("w", [16, 24], { chunk: 8, topk: 2 });
  const x = randomF32(7, layout.size, -1, 1);
  const bound = fastEncodeErrorBound(layout, x);
  const want = encode(layout, x);
  const p = fastDctPlan(8);
  // The same two passes in f32 in TypeScript.
  const cols = 24;
  for (let c = 0; c < layout.chunks; c++) {
    const r0 = Math.floor(c / layout.colChunks) * 8, q0 = (c % layout.colChunks) * 8;
    const t = new Float64Array(64);
    for (let j = 0; j < 8; j++) {
      const col = Array.from({ length: 8 }, (_, i) => x[(r0 + i) * cols + q0 + j]);
      runFastDct(p, col, Math.fround).forEach((v, u) => t[u * 8 + j] = v);
    }
    for (let u = 0; u < 8; u++) {
      const got = runFastDct(p, t.subarray(u * 8, u * 8 + 8), Math.fround);
      for (let v = 0; v < 8; v++) {
        const e = c * 64 + u * 8 + v;
        // The reference is rounded to f32: allow its half-ulp too.
        const tol = bound[e] + 2 ** -24 * Math.abs(want[e]);
        assert.ok(Math.abs(got[v] - want[e]) <= tol, `coefficient ${e}`);
      }
    }
  }
});

Deno.test("only powers of two up to FAST_DCT_MAX have a plan", () => {
  for (const n of [0, 3, 6, 12, 96, 2 * FAST_DCT_MAX, 1.5]) {
    assert.equal(hasFastDct(n), false, `${n}`);
    assert.throws(() => fastDctPlan(n), RangeError);
  }
  for (const n of SIZES) assert.ok(hasFastDct(n));
  assert.throws(() => runFastDct(fastDctPlan(8), [1, 2]), /expected 8 inputs, found 2/);
});
