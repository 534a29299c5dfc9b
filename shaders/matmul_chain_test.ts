import assert from "node:assert/strict";
import { GpuRuntime } from "./gpu.ts";
import { Matmul, type MatmulLayout, type MatmulVariant } from "./matmul.ts";
import { CPU_PROFILE, GPU_PROFILE } from "./profile.ts";
import { randomF32 } from "./testing/kernels.ts";

/** Rows `[r0, r1)` of a row-major `[rows, cols]` matrix. */
function rowsOf(x: Float32Array, cols: number, r0: number, r1: number): Float32Array {
  return x.slice(r0 * cols, r1 * cols);
}

/** Columns `[c0, c1)` of a row-major `[rows, cols]` matrix, as a contiguous matrix. */
function colsOf(x: Float32Array, rows: number, cols: number, c0: number, c1: number) {
  const out = new Float32Array(rows * (c1 - c0));
  for (let r = 0; r < rows; r++) out.set(x.subarray(r * cols + c0, r * cols + c1), r * (c1 - c0));
  return out;
}

// Splitting K into consecutive chained calls must reproduce the single call bit for bit: the
// LM head's input gradient is summed over vocabulary blocks this way.
for (const [name, tiling] of [["cpu", CPU_PROFILE.matmul], ["gpu", GPU_PROFILE.matmul]] as const) {
  for (const layout of ["nn", "tn"] as MatmulLayout[]) {
    for (const n of [64, 13]) {
      Deno.test(`matmul chain over K blocks = one call (${name}, ${layout}, n = ${n})`, async () => {
        using rt = await GpuRuntime.create();
        using mm = new Matmul(rt, tiling);
        const m = 37, parts = [5, 11, 7], k = 23;
        const a = randomF32(1, m * k), b = randomF32(2, k * n);
        const whole = rt.buffer("c whole", m * n * 4), chained = rt.buffer("c chained", m * n * 4);
        // Old contents must not leak into a chain that starts with a plain write.
        rt.write(chained, randomF32(3, m * n));
        const step = rt.beginStep("chain");
        const wholeArgs = { m, n, k, layout, a: rt.buffer("a", a), b: rt.buffer("b", b) };
        mm.encode(step.pass, { ...wholeArgs, c: whole });
        const variant: MatmulVariant = mm.variant({ ...wholeArgs, c: whole });
        let k0 = 0;
        for (const [i, kp] of parts.entries()) {
          // nn: a [m, k] splits by columns; tn: a [k, m] by rows. b [k, n] splits by rows.
          const ap = layout === "nn" ? colsOf(a, m, k, k0, k0 + kp) : rowsOf(a, m, k0, k0 + kp);
          mm.encode(step.pass, {
            m,
            n,
            k: kp,
            layout,
            a: rt.buffer(`a ${i}`, ap),
            b: rt.buffer(`b ${i}`, rowsOf(b, n, k0, k0 + kp)),
            c: chained,
            accumulate: i === 0 ? false : "chain",
            variant,
          });
          k0 += kp;
        }
        await step.submit();
        const want = await rt.read(whole), got = await rt.read(chained);
        assert.deepEqual(new Uint32Array(got.buffer), new Uint32Array(want.buffer));
      });
    }
  }
}

Deno.test("matmul refuses a chain on the dot variant, alpha ≠ 1, and unusable variants", async () => {
  using rt = await GpuRuntime.create();
  using mm = new Matmul(rt, CPU_PROFILE.matmul);
  const a = rt.buffer("a", 16 * 4), b = rt.buffer("b", 12 * 4), c = rt.buffer("c", 12 * 4);
  const nt = { a, b, c, m: 4, n: 3, k: 4, layout: "nt" as const };
  using step = rt.beginStep("refusals");
  assert.equal(mm.variant(nt), "dot");
  assert.throws(
    () => mm.encode(step.pass, { ...nt, accumulate: "chain" }),
    /"chain" cannot run on the "dot" variant/,
  );
  assert.throws(
    () => mm.encode(step.pass, { ...nt, layout: "nn", accumulate: "chain", alpha: 2 }),
    /"chain" needs alpha 1/,
  );
  assert.throws(
    () => mm.encode(step.pass, { ...nt, variant: "transposed" }),
    /variant "transposed" cannot run this shape.*usable: dot, scalar/,
  );
});
