import assert from "node:assert/strict";
import { GpuRuntime } from "./gpu.ts";
import { sumsqRef } from "./reference/elementwise.ts";
import { CHUNK_ITEMS, SumOfSquares } from "./sumsq.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

Deno.test("sum of squares over several buffers is exact to f32 summation error and repeatable", async () => {
  using rt = await GpuRuntime.create();
  for (const wg of [64, 256]) {
    const ss = new SumOfSquares(rt, wg);
    const lengths = [1, 1023, 70000, 17];
    const hosts = lengths.map((n, i) => randomF32(100 + i, n + 3, -2, 2));
    const inputs = hosts.map((h, i) => ({ x: rt.buffer(`g${i}`, h), length: lengths[i] }));
    const partials = rt.buffer("partials", ss.partialsLength(lengths) * 4);
    const out = rt.buffer("out", 16);
    const results: number[] = [];
    for (let rep = 0; rep < 2; rep++) {
      const step = rt.beginStep("sumsq");
      ss.encode(step.pass, { inputs, partials, out });
      await step.submit();
      results.push((await rt.read(out))[0]);
    }
    const want = sumsqRef(hosts.map((h, i) => h.subarray(0, lengths[i])));
    // All terms are non-negative, so the f32 summation error is at most (depth)·u·Σ, with depth
    // the longest chain of additions: items + log2(wg) per pass, two passes, plus the squaring.
    const n = lengths.reduce((a, b) => a + b);
    const depth = CHUNK_ITEMS + 2 * Math.log2(wg) + n / (CHUNK_ITEMS * wg) + 2;
    assertClose([results[0]], [want], depth * F32_EPS * want, `sumsq wg=${wg}`);
    assert.equal(results[0], results[1], "bit-identical on repeat");
  }
});

Deno.test("sum of squares rejects missing inputs and short scratch", async () => {
  using rt = await GpuRuntime.create();
  const ss = new SumOfSquares(rt, 64);
  const x = rt.buffer("x", 4 * 20000), out = rt.buffer("out", 16);
  const step = rt.beginStep("bad");
  assert.throws(() => ss.encode(step.pass, { inputs: [], partials: out, out }), /no inputs/);
  assert.throws(
    () =>
      ss.encode(step.pass, { inputs: [{ x, length: 20000 }], partials: rt.buffer("p", 4), out }),
    /binding "partials" holds 4 elements, needs Σ ceil\(length \/ chunk\) = 5/,
  );
  assert.throws(() => new SumOfSquares(rt, 48), /power of two/);
  await step.submit();
});
