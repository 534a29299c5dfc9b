import assert from "node:assert/strict";
import { GpuRuntime, resolveView } from "./gpu.ts";
import { CPU_PROFILE, GPU_PROFILE, isCpuAdapter, profileFor } from "./profile.ts";

Deno.test("runtime writes, reads back and caches uniforms", async () => {
  using rt = await GpuRuntime.create();
  assert.ok(rt.limits.maxStorageBufferBindingSize >= 128 * 2 ** 20);
  assert.match(rt.adapterName, /profile (cpu|gpu)/);
  const data = new Float32Array([1.5, -2, 3, 4, 5]);
  const buf = rt.buffer("roundtrip", data);
  assert.equal(buf.size, 32, "sizes round up to 16 bytes");
  assert.deepEqual([...await rt.read({ buffer: buf, size: 20 })], [...data]);
  rt.write({ buffer: buf, offset: 4 }, new Float32Array([9, 8]));
  assert.deepEqual([...await rt.read({ buffer: buf, offset: 0, size: 16 })], [1.5, 9, 8, 4]);
  const u = rt.buffer("u32", new Uint32Array([7, 4294967295]));
  assert.deepEqual([...await rt.readU32({ buffer: u, size: 8 })], [7, 4294967295]);
  assert.equal(rt.uniform([1, 2, 3]), rt.uniform([1, 2, 3]));
  assert.notEqual(rt.uniform([1, 2, 3]), rt.uniform([1, 2, 4]));
  assert.throws(() => resolveView({ buffer: buf, offset: 16, size: 32 }), /out of range/);
  assert.throws(
    () => rt.write(buf, new Float32Array(100)),
    /Cannot write 400 bytes into "roundtrip"/,
  );
  const ac = new AbortController();
  ac.abort(new Error("stop"));
  await assert.rejects(() => rt.read(buf, { signal: ac.signal }), /stop/);
});

Deno.test("withBytes hands a view's bytes to a consumer and returns what it returns", async () => {
  using rt = await GpuRuntime.create();
  const buf = rt.buffer("bytes", new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]));
  const sum = await rt.withBytes({ buffer: buf, offset: 4, size: 6 }, (bytes) => {
    assert.deepEqual([...bytes], [5, 6, 7, 8, 9, 10]);
    return bytes.reduce((a, b) => a + b, 0);
  });
  assert.equal(sum, 45);
  const kept = await rt.readBytes({ buffer: buf, offset: 4, size: 6 });
  assert.deepEqual([...new Uint8Array(kept)], [5, 6, 7, 8, 9, 10], "readBytes keeps its copy");
  const fails = () =>
    rt.withBytes(buf, () => {
      throw new Error("consumer failed");
    });
  await assert.rejects(fails, /consumer failed/);
});

Deno.test("a step is submitted once and reports validation errors by name", async () => {
  using rt = await GpuRuntime.create();
  const step = rt.beginStep("empty step");
  step.pass;
  step.encoder.clearBuffer(rt.buffer("z", 16));
  await step.submit();
  assert.throws(() => step.pass, /already submitted/);
  await assert.rejects(() => step.submit(), /already submitted/);
  const bad = rt.beginStep("bad step");
  const readOnly = rt.buffer("read only", 16, GPUBufferUsage.COPY_SRC);
  bad.encoder.clearBuffer(readOnly);
  await assert.rejects(() => bad.submit(), /validation error during step "bad step"/);
});

Deno.test("submit without waiting still validates, and reads see the queued work in order", async () => {
  using rt = await GpuRuntime.create();
  const buf = rt.buffer("queued", new Float32Array([1, 2, 3, 4]));
  const first = rt.beginStep("clear");
  first.encoder.clearBuffer(buf);
  await first.submit({ wait: false });
  rt.write({ buffer: buf, offset: 4 }, new Float32Array([7]));
  const second = rt.beginStep("copy");
  const copy = rt.buffer("copy", 16);
  second.encoder.copyBufferToBuffer(buf, 0, copy, 0, 16);
  await second.submit({ wait: false });
  assert.deepEqual([...await rt.read(copy)], [0, 7, 0, 0]);
  const bad = rt.beginStep("bad queued step");
  bad.encoder.clearBuffer(rt.buffer("read only", 16, GPUBufferUsage.COPY_SRC));
  await assert.rejects(
    () => bad.submit({ wait: false }),
    /validation error during step "bad queued step"/,
  );
});

Deno.test("profiles are chosen from the adapter description", () => {
  assert.ok(isCpuAdapter({ description: "llvmpipe (LLVM 15.0.6, 256 bits)" }));
  assert.ok(isCpuAdapter({ description: "SwiftShader Device (Subzero)" }));
  assert.ok(isCpuAdapter({ description: "anything", isFallbackAdapter: true }));
  assert.ok(!isCpuAdapter({ vendor: "nvidia", description: "NVIDIA H100 80GB HBM3" }));
  assert.equal(profileFor({ description: "NVIDIA H100 80GB HBM3" }), GPU_PROFILE);
  assert.equal(profileFor({ description: "lavapipe" }), CPU_PROFILE);
});

Deno.test("no adapter gives GpuUnavailableError naming the backend and the fix", async () => {
  const script = `import { GpuRuntime } from ${JSON.stringify(import.meta.resolve("./gpu.ts"))};
try { await GpuRuntime.create(); console.log("got a device"); }
catch (e) { console.log(e.name + ": " + e.message); }`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", script],
    env: { DENO_WEBGPU_BACKEND: "" },
    stdout: "piped",
    stderr: "null",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.match(text, /GpuUnavailableError: No WebGPU adapter found with DENO_WEBGPU_BACKEND=""/);
  assert.match(text, /mesa-vulkan-drivers/);
});

Deno.test("a lost device is reported as GpuDeviceLostError", async () => {
  const { GpuDeviceLostError } = await import("./errors.ts");
  using rt = await GpuRuntime.create();
  rt.device.destroy();
  await rt.device.lost;
  await assert.rejects(() => rt.checkErrors(), GpuDeviceLostError);
});

Deno.test("a binding over maxStorageBufferBindingSize is refused with the buffer named", async () => {
  const { bindTensors } = await import("./kernel.ts");
  using rt = await GpuRuntime.create();
  const limit = rt.limits.maxStorageBufferBindingSize;
  const pipeline = rt.pipeline("test/copy", () =>
    `@group(0) @binding(0) var<uniform> n: vec4<u32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(1) fn main() { x[0] = f32(n.x); }`);
  const huge = rt.buffer("huge", limit + 256);
  assert.throws(
    () => bindTensors(rt, pipeline, [1], [huge]),
    /binding 1 \("huge", offset 0\) is \d+ bytes, over the device's maxStorageBufferBindingSize/,
  );
  bindTensors(rt, pipeline, [1], [{ buffer: huge, offset: 256, size: 1024 }]);
  rt.destroyBuffer(huge);
  await rt.checkErrors();
});

Deno.test("bind groups are made once per pipeline and range, and a new buffer gets its own", async () => {
  const { bindTensors, dispatch } = await import("./kernel.ts");
  using rt = await GpuRuntime.create();
  const pipeline = rt.pipeline("test/add-n", () =>
    `@group(0) @binding(0) var<uniform> n: vec4<u32>;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(1) fn main() { x[0] = x[0] + f32(n.x); }`);
  const run = async (buffer: GPUBuffer, add: number) => {
    const step = rt.beginStep("add");
    const group = bindTensors(rt, pipeline, [add], [buffer]);
    dispatch(step.pass, pipeline, group, [1]);
    await step.submit();
    return group;
  };
  const a = rt.buffer("x", new Float32Array([1]));
  const first = await run(a, 2);
  assert.equal(await run(a, 2), first, "the same pipeline, uniform and range: the same group");
  assert.notEqual(await run(a, 3), first, "another uniform: another group");
  assert.deepEqual([...await rt.read({ buffer: a, size: 4 })], [1 + 2 + 2 + 3]);
  // A buffer made after one is destroyed (same label, same size) must not meet its group.
  rt.destroyBuffer(a);
  const b = rt.buffer("x", new Float32Array([10]));
  assert.notEqual(await run(b, 2), first);
  assert.deepEqual([...await rt.read({ buffer: b, size: 4 })], [12]);
  const c = rt.buffer("c", new Float32Array([0, 0]));
  const whole = bindTensors(rt, pipeline, [2], [c]);
  assert.notEqual(bindTensors(rt, pipeline, [2], [{ buffer: c, offset: 0, size: 4 }]), whole);
  assert.equal(rt.bindGroupCacheSize, 5);
  await rt.checkErrors();
});

Deno.test("the uniform cache is recycled without breaking work already encoded", async () => {
  const { Elementwise } = await import("./elementwise.ts");
  using rt = await GpuRuntime.create({ uniformCacheLimit: 4 });
  const ew = new Elementwise(rt);
  const x = rt.buffer("x", new Float32Array([1, 1, 1]));
  const step = rt.beginStep("many scalars");
  const alphas = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29];
  for (const alpha of alphas) ew.scale(step.pass, { x, n: 3, alpha });
  assert.ok(rt.uniformCacheSize <= 4);
  assert.ok(rt.retiredUniformCount > 0, "overflowing buffers wait for the open step");
  await step.submit();
  assert.equal(rt.retiredUniformCount, 0, "destroyed once no step is open");
  const product = alphas.reduce((a, b) => Math.fround(a * b), 1); // rounded as the GPU does
  assert.deepEqual([...await rt.read({ buffer: x, size: 12 })], [product, product, product]);
});

Deno.test("an abandoned step releases its uniforms and error scope", async () => {
  const { Elementwise } = await import("./elementwise.ts");
  using rt = await GpuRuntime.create({ uniformCacheLimit: 1 });
  const ew = new Elementwise(rt);
  const x = rt.buffer("x", new Float32Array([1]));
  {
    using step = rt.beginStep("abandoned");
    ew.scale(step.pass, { x, n: 1, alpha: 2 });
    ew.scale(step.pass, { x, n: 1, alpha: 3 });
    assert.equal(rt.retiredUniformCount, 1);
  }
  assert.equal(rt.retiredUniformCount, 0);
  const step = rt.beginStep("next");
  ew.scale(step.pass, { x, n: 1, alpha: 5 });
  await step.submit();
  assert.equal((await rt.read(x))[0], 5, "the abandoned step's work never ran");
});

Deno.test("a readback aborted while mapping rejects with the reason and leaks nothing", async () => {
  using rt = await GpuRuntime.create();
  const buf = rt.buffer("big", 1 << 20);
  const ac = new AbortController();
  const pending = rt.read(buf, { signal: ac.signal });
  ac.abort(new Error("cancelled"));
  await assert.rejects(() => pending, /cancelled/);
  assert.equal((await rt.read({ buffer: buf, size: 4 }))[0], 0, "the runtime still works");
});

Deno.test("timed sections report GPU time per section", async () => {
  const { Elementwise } = await import("./elementwise.ts");
  using rt = await GpuRuntime.create();
  const ew = new Elementwise(rt);
  const x = rt.buffer("x", 1 << 22);
  const step = rt.beginStep("profiled");
  ew.fill(step.timed("fill"), { out: x, n: 1 << 20, value: 1 });
  ew.scale(step.timed("scale"), { x, n: 1 << 20, alpha: 3 });
  ew.scale(step.pass, { x, n: 1 << 20, alpha: 2 }); // same pass: part of "scale"
  step.encoder.clearBuffer(rt.buffer("other", 16));
  ew.axpy(step.pass, { x, y: rt.buffer("y", 1 << 22), n: 1 << 20 }); // untimed pass
  await step.submit();
  assert.equal((await rt.read({ buffer: x, size: 4 }))[0], 6);
  if (!rt.hasTimestamps) {
    assert.deepEqual(step.timings, []);
    return;
  }
  assert.deepEqual(step.timings.map((t) => t.name), ["fill", "scale"]);
  for (const t of step.timings) assert.ok(t.ms >= 0 && t.ms < 60_000, `${t.name}: ${t.ms} ms`);
});

Deno.test("flush hands work to the queue on profiles that ask, in order, errors thrown at submit", async () => {
  const { Elementwise } = await import("./elementwise.ts");
  for (const flushLayers of [true, false]) {
    using rt = await GpuRuntime.create({ profile: { ...GPU_PROFILE, flushLayers } });
    const ew = new Elementwise(rt);
    const x = rt.buffer("x", 1 << 12);
    const step = rt.beginStep("in parts");
    ew.fill(step.pass, { out: x, n: 1024, value: 1 });
    assert.equal(step.flush(), flushLayers);
    // Each part reads what the one before wrote: 1 · 3 (+ 0) · 2.
    ew.scale(step.pass, { x, n: 1024, alpha: 3 });
    assert.equal(step.flush(), flushLayers);
    ew.axpy(step.pass, { x, y: rt.buffer("y", 1 << 12), n: 1024 });
    step.encoder.clearBuffer(rt.buffer("other", 16));
    ew.scale(step.pass, { x, n: 1024, alpha: 2 });
    assert.equal(step.submissions, flushLayers ? 2 : 0);
    await step.submit();
    assert.equal(step.submissions, flushLayers ? 3 : 1);
    assert.deepEqual([...await rt.read({ buffer: x, offset: 4092, size: 4 })], [6]);
    // An error in a flushed part is the step's, thrown by submit.
    const bad = rt.beginStep("bad early part");
    bad.encoder.clearBuffer(rt.buffer("read only", 16, GPUBufferUsage.COPY_SRC));
    bad.flush();
    ew.fill(bad.pass, { out: x, n: 4, value: 0 });
    await assert.rejects(() => bad.submit(), /validation error during step "bad early part"/);
    // Timed steps stay one submission: their timestamps are resolved at its end.
    const timed = rt.beginStep("timed");
    ew.fill(timed.timed("fill"), { out: x, n: 4, value: 0 });
    assert.equal(timed.flush(), false);
    await timed.submit();
  }
  using cpu = await GpuRuntime.create({ profile: CPU_PROFILE });
  assert.equal(cpu.beginStep("cpu").flush(), false, "the CPU profile keeps one submission");
});

Deno.test("interleaved steps each report their own validation errors", async () => {
  using rt = await GpuRuntime.create();
  const good = rt.beginStep("good step");
  const bad = rt.beginStep("bad step");
  bad.encoder.clearBuffer(rt.buffer("read only", 16, GPUBufferUsage.COPY_SRC));
  good.encoder.clearBuffer(rt.buffer("writable", 16));
  await assert.rejects(() => bad.submit(), /validation error during step "bad step"/);
  await good.submit();
});

Deno.test("an aborted submit stops waiting with the signal's reason", async () => {
  using rt = await GpuRuntime.create();
  const step = rt.beginStep("aborted wait");
  step.encoder.clearBuffer(rt.buffer("z", 1 << 20));
  const ac = new AbortController();
  ac.abort(new Error("stop waiting"));
  await assert.rejects(() => step.submit({ signal: ac.signal }), /stop waiting/);
  assert.equal((await rt.read({ buffer: rt.buffer("w", 16), size: 4 }))[0], 0);
});

Deno.test("maxBufferBytes caps maxBufferSize; a larger buffer is refused; bad caps are named", async () => {
  using rt = await GpuRuntime.create({ maxBufferBytes: 4096 });
  assert.equal(rt.limits.maxBufferSize, 4096);
  rt.destroyBuffer(rt.buffer("fits", 4096));
  assert.throws(
    () => rt.buffer("too big", 4100),
    /"too big": 4100 bytes exceeds .* maxBufferSize 4096/,
  );
  await assert.rejects(() => GpuRuntime.create({ maxBufferBytes: 100 }), /maxBufferBytes must be/);
});
