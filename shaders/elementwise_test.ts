import assert from "node:assert/strict";
import { Elementwise } from "./elementwise.ts";
import { GpuRuntime } from "./gpu.ts";
import { addRef, axpyRef } from "./reference/elementwise.ts";
import { assertClose, F32_EPS, randomF32 } from "./testing/kernels.ts";

Deno.test("elementwise ops match the reference on odd lengths", async () => {
  using rt = await GpuRuntime.create();
  // items: elements per invocation (1 on GPUs, 16 on CPUs); 7 leaves ragged tails.
  for (const [n, items] of [[1, 1], [7, 16], [64, 7], [1000, 1], [4099, 7], [4099, 16]]) {
    const ew = new Elementwise(rt, 64, items);
    const a = randomF32(n, n + 5), b = randomF32(n + 1, n + 5);
    const ga = rt.buffer("a", a), gb = rt.buffer("b", b), out = rt.buffer("out", (n + 5) * 4);
    const y = rt.buffer("y", b),
      s = rt.buffer("s", a),
      f = rt.buffer("f", a),
      c = rt.buffer("c", b);
    const step = rt.beginStep("elementwise");
    ew.add(step.pass, { a: ga, b: gb, out, n });
    ew.axpy(step.pass, { x: ga, y, n, alpha: -0.75 });
    ew.scale(step.pass, { x: s, n, alpha: 3 });
    ew.fill(step.pass, { out: f, n, value: 2.5 });
    ew.copy(step.pass, { src: ga, dst: c, n });
    await step.submit();
    // add: one rounding, half an ulp of the result. axpy: WGSL lets fma be a multiply and an
    // add, so two roundings: u·(|alpha·x| + |result|).
    const ulp = (v: ArrayLike<number>) => (i: number) => Math.abs(v[i]) * F32_EPS * 1.01;
    const sum = addRef(a.subarray(0, n), b.subarray(0, n));
    assertClose(await rt.read(out), sum, ulp(sum), `add n=${n}`);
    const ax = axpyRef(a.subarray(0, n), b.subarray(0, n), -0.75);
    const axTol = (i: number) => (Math.abs(0.75 * a[i]) + Math.abs(ax[i])) * F32_EPS * 1.01;
    assertClose(await rt.read(y), ax, axTol, `axpy n=${n}`);
    const sc = a.subarray(0, n).map((v) => v * 3);
    assertClose(await rt.read(s), sc, 0, `scale n=${n}`);
    const filled = await rt.read(f);
    assert.ok(filled.subarray(0, n).every((v) => v === 2.5), `fill n=${n}`);
    assert.equal(filled[n], a[n], "fill stops at n");
    const copied = await rt.read(c);
    assert.deepEqual([...copied.subarray(0, n)], [...a.subarray(0, n)]);
    assert.equal(copied[n], b[n], "copy stops at n");
  }
});

Deno.test("elementwise covers lengths past one grid row (2-D dispatch)", async () => {
  using rt = await GpuRuntime.create();
  const ew = new Elementwise(rt, 64);
  const n = 65535 * 64 + 77;
  const out = rt.buffer("big", n * 4);
  const step = rt.beginStep("big fill");
  ew.fill(step.pass, { out, n, value: 1 });
  await step.submit();
  const got = await rt.read(out);
  assert.equal(got.subarray(0, n).indexOf(0), -1);
  assert.equal(got.length, n + 3, "the buffer's padding past n is untouched");
  assert.equal(got[n], 0);
});

Deno.test("elementwise rejects short views", async () => {
  using rt = await GpuRuntime.create();
  const ew = new Elementwise(rt);
  const step = rt.beginStep("bad");
  assert.throws(
    () =>
      ew.add(step.pass, {
        a: rt.buffer("a", 64),
        b: rt.buffer("b", 16),
        out: rt.buffer("o", 64),
        n: 16,
      }),
    /add: binding "b" holds 4 elements, needs n = 16/,
  );
  await step.submit();
});
