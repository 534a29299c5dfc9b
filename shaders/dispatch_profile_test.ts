import assert from "node:assert/strict";
import { summarizeTimings } from "./dispatch_profile.ts";
import { Elementwise } from "./elementwise.ts";
import { GpuRuntime } from "./gpu.ts";

Deno.test("summarizeTimings totals each name, largest first, with shares of the whole", () => {
  const rows = summarizeTimings([
    { name: "matmul/a", ms: 3 },
    { name: "rope/1", ms: 1 },
    { name: "matmul/b", ms: 4 },
  ], (name) => name.split("/")[0]);
  assert.deepEqual(rows, [
    { name: "matmul", dispatches: 2, ms: 7, share: 7 / 8 },
    { name: "rope", dispatches: 1, ms: 1, share: 1 / 8 },
  ]);
  assert.deepEqual(summarizeTimings([]), []);
});

/** fill, then `dispatches` alternating axpy/scale kernels: the result and the runtime's timings. */
async function chain(profileDispatches: boolean, dispatches: number) {
  using rt = await GpuRuntime.create({ profileDispatches });
  const ew = new Elementwise(rt);
  const n = 1000;
  const x = rt.buffer("x", n * 4), y = rt.buffer("y", n * 4);
  const step = rt.beginStep("chain");
  ew.fill(step.pass, { out: x, n, value: 0.5 });
  ew.fill(step.pass, { out: y, n, value: 1 });
  for (let i = 0; i < dispatches; i++) {
    if (i % 2 === 0) ew.axpy(step.pass, { x, y, n, alpha: 0.25 });
    else ew.scale(step.pass, { x: y, n, alpha: 0.75 });
  }
  // A copy between dispatches ends the open pass: profiling must survive it.
  step.encoder.copyBufferToBuffer(y, 0, x, 0, 16);
  ew.scale(step.pass, { x, n, alpha: 2 });
  await step.submit();
  return { x: await rt.read(x), timings: rt.dispatchTimings ? [...rt.dispatchTimings] : undefined };
}

Deno.test("a profiled runtime times every dispatch by pipeline and computes the same bits", async () => {
  const plain = await chain(false, 6);
  const profiled = await chain(true, 6);
  assert.equal(plain.timings, undefined);
  assert.deepEqual(profiled.x, plain.x);
  const names = profiled.timings!.map((t) => t.name.split("/")[1]);
  assert.deepEqual(names, [
    "fill",
    "fill",
    "axpy",
    "scale",
    "axpy",
    "scale",
    "axpy",
    "scale",
    "scale",
  ]);
  for (const t of profiled.timings!) {
    assert.ok(Number.isFinite(t.ms) && t.ms >= 0, `${t.name} ${t.ms}`);
  }
});

Deno.test("a profiled step holds more dispatches than one query set (2048 sections)", async () => {
  const plain = await chain(false, 2100);
  const profiled = await chain(true, 2100);
  assert.deepEqual(profiled.x, plain.x);
  assert.equal(profiled.timings!.length, 2103);
  // Every pass did GPU work, so every section measured some time: a section of the second query
  // set resolved to the wrong place would read 0 (or garbage).
  const bad = profiled.timings!.findIndex((t) => !(Number.isFinite(t.ms) && t.ms > 0));
  assert.equal(bad, -1, `section ${bad}: ${profiled.timings![bad]?.ms} ms`);
});
