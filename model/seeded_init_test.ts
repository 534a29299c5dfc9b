/**
 * The seeded init made on worker threads: the chunk plan as pure logic, the bits of `initParams`
 * whatever the chunk size and worker count, and workers that end with the generator (finished,
 * broken off, aborted or failed; Deno's test sanitizers catch a worker left running).
 */
import assert from "node:assert/strict";
import { initParams, llamaParamLayout, type ParamLayout } from "./params.ts";
import {
  defaultSeededWorkers,
  initParamsParallel,
  PARALLEL_MIN_FLOATS,
  seededChunks,
  seededSlices,
} from "./seeded_init.ts";
import { smallLlamaConfig } from "./testing/fixtures.ts";

const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);
const SEED = 99;

function bits(a: Float32Array): Uint32Array {
  return new Uint32Array(a.buffer, a.byteOffset, a.length);
}

Deno.test("seeded slices cut each tensor every chunk, in layout order, covering it once", () => {
  const slices = seededSlices(LAYOUT, 100);
  for (const entry of LAYOUT.entries) {
    const own = slices.filter((s) => s.entry === entry);
    assert.deepEqual(own.map((s) => s.start), own.map((_, i) => 100 * i));
    assert.equal(own.reduce((n, s) => n + s.length, 0), entry.size, entry.name);
    assert.ok(own.every((s) => s.length <= 100 && s.length > 0));
  }
  assert.deepEqual(
    [...new Set(slices.map((s) => s.entry.name))],
    LAYOUT.entries.map((e) => e.name),
    "layout order",
  );
  assert.throws(() => seededSlices(LAYOUT, 0), /chunkFloats must be a positive integer, got 0/);
  assert.throws(() => seededSlices(LAYOUT, 1.5), /got 1\.5/);
});

Deno.test("a parallel init reports its bytes after every chunk, ending at the total", async () => {
  for (const workers of [0, 2]) {
    const reports: [number, number][] = [];
    await initParamsParallel(LAYOUT, {
      config: CONFIG,
      seed: SEED,
      chunkFloats: 100,
      workers,
      onProgress: (done, total) => reports.push([done, total]),
    });
    assert.equal(reports.length, seededSlices(LAYOUT, 100).length, `${workers} workers`);
    assert.ok(reports.every(([d], i) => i === 0 || d > reports[i - 1][0]), "increasing");
    assert.deepEqual(reports.at(-1), [4 * LAYOUT.paramCount, 4 * LAYOUT.paramCount]);
  }
});

Deno.test("default workers: one per core, at most 16, none on one core", () => {
  assert.deepEqual([1, 2, 3, 8, 17, 64].map(defaultSeededWorkers), [0, 2, 3, 8, 16, 16]);
});

Deno.test("chunks made here or on 1-4 workers have the bits of initParams", async () => {
  const expected = bits(initParams(LAYOUT, CONFIG, SEED));
  for (const [chunkFloats, workers] of [[100, 0], [100, 1], [77, 3], [4096, 4]]) {
    const flat = await initParamsParallel(LAYOUT, {
      config: CONFIG,
      seed: SEED,
      chunkFloats,
      workers,
    });
    const first = bits(flat).findIndex((b, i) => b !== expected[i]);
    assert.equal(
      first,
      -1,
      `chunk ${chunkFloats}, ${workers} workers: first difference at ${first}`,
    );
  }
});

Deno.test("a small model is made on this thread by default", () => {
  const seeded = LAYOUT.entries.reduce((n, e) => n + (e.init === "normal" ? e.size : 0), 0);
  assert.ok(seeded < PARALLEL_MIN_FLOATS, "the small model stays under the threshold");
});

Deno.test("workers end when the caller breaks off, aborts, or a request fails", async () => {
  const options = { config: CONFIG, seed: SEED, chunkFloats: 64, workers: 2 };
  // Broken off after two chunks: the generator's return ends the workers.
  let seen = 0;
  for await (const _ of seededChunks(LAYOUT, options)) if (++seen === 2) break;
  assert.equal(seen, 2);
  // Aborted after the first chunk.
  const controller = new AbortController();
  await assert.rejects(
    (async () => {
      for await (const _ of seededChunks(LAYOUT, { ...options, signal: controller.signal })) {
        controller.abort(new Error("stop the init"));
      }
    })(),
    /stop the init/,
  );
  // A request that cannot be sent (an entry that does not clone) fails the init by name.
  const broken: ParamLayout = {
    ...LAYOUT,
    entries: [{ ...LAYOUT.entries[0], shape: [() => 0] as unknown as number[] }],
  };
  await assert.rejects(initParamsParallel(broken, options), /could not be cloned|DataCloneError/i);
});
