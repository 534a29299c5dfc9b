/**
 * The latency of a small GPU readback, the old way and the new, in one run, alternating:
 * `deno run -A bench/readback.ts [--reads N] [--bytes B]`.
 *
 * - old read: a fresh staging buffer, `mapAsync` awaited (what `GpuRuntime.withBytes` did);
 * - new read: `ReadbackPool.read`, reused staging buffers read as soon as wgpu maps them;
 * - old wait: `queue.onSubmittedWorkDone` after an empty submission;
 * - new wait: `GpuRuntime.untilIdle`, a fence read.
 *
 * Deno 2.9 resolves every map and completion promise after a fixed 10 ms sleep
 * (shaders/readback.ts), so on any adapter the old patterns cost about 10 ms however little the
 * GPU does. Prints min and median per pattern and each new pattern's speed-up over its old one,
 * with the adapter, the CPU and the load average, so a figure carries its environment.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { GpuRuntime, ReadbackPool } from "../shaders/mod.ts";
import { median } from "../common/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { reads: { type: "string", default: "40" }, bytes: { type: "string", default: "4" } },
});
const reads = Number(values.reads);
const bytes = Number(values.bytes);
if (!Number.isInteger(reads) || reads < 1) throw new Error(`--reads: not a count: ${values.reads}`);
if (!Number.isInteger(bytes) || bytes < 4 || bytes % 4 !== 0) {
  throw new Error(`--bytes: not a positive multiple of 4: ${values.bytes}`);
}

using rt = await GpuRuntime.create();
using pool = new ReadbackPool(rt.device);
const host = new Uint32Array(bytes / 4).map((_, i) => (i * 2654435761) >>> 0);
const source = rt.buffer("readback source", host);

/** The old withBytes: a fresh staging buffer per read, the map promise awaited. */
async function oldRead(): Promise<Uint32Array> {
  const staging = rt.device.createBuffer({
    size: bytes,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  try {
    const encoder = rt.device.createCommandEncoder();
    encoder.copyBufferToBuffer(source, 0, staging, 0, bytes);
    rt.device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    return new Uint32Array(staging.getMappedRange().slice(0));
  } finally {
    staging.destroy();
  }
}

function newRead(): Promise<Uint32Array> {
  return pool.read(bytes, (encoder, staging) => {
    encoder.copyBufferToBuffer(source, 0, staging, 0, bytes);
  }, (b) => new Uint32Array(b.slice().buffer));
}

async function oldWait(): Promise<void> {
  rt.device.queue.submit([]);
  await rt.device.queue.onSubmittedWorkDone();
}

const patterns: Record<string, () => Promise<unknown>> = {
  "old read": oldRead,
  "new read": newRead,
  "old wait": oldWait,
  "new wait": () => rt.untilIdle(),
};
const times: Record<string, number[]> = {};
for (const name of Object.keys(patterns)) times[name] = [];
await newRead(); // the pool's first buffer takes the slow path once
for (let i = 0; i < reads; i++) {
  for (const [name, run] of Object.entries(patterns)) {
    const t0 = performance.now();
    const got = await run();
    times[name].push(performance.now() - t0);
    if (got instanceof Uint32Array && !got.every((v, j) => v === host[j])) {
      throw new Error(`${name}: read back other bytes than were written`);
    }
  }
}

const cpu = (await Deno.readTextFile("/proc/cpuinfo").catch(() => "")).match(
  /model name\s*:\s*(.*)/,
)?.[1];
const load = (await Deno.readTextFile("/proc/loadavg").catch(() => "?")).trim();
console.log(`date ${new Date().toISOString()}, Deno ${Deno.version.deno}`);
console.log(`adapter ${rt.adapterName}`);
console.log(`cpu ${cpu ?? "?"}, ${navigator.hardwareConcurrency} threads, loadavg ${load}`);
console.log(`${reads} reads of ${bytes} bytes per pattern, alternating`);
const ms = (x: number) => `${x.toFixed(3)} ms`;
for (const [name, t] of Object.entries(times)) {
  console.log(`${name.padEnd(9)} min ${ms(Math.min(...t))}  median ${ms(median(t))}`);
}
for (const kind of ["read", "wait"]) {
  const ratio = median(times[`old ${kind}`]) / median(times[`new ${kind}`]);
  console.log(`${kind}: new is ${ratio.toFixed(1)}x faster (median old / median new)`);
}
console.log(`early reads ${pool.earlyReads} of ${reads + 1}`);
