import assert from "node:assert/strict";
import { GpuStageError } from "./errors.ts";
import { GpuRuntime } from "./gpu.ts";
import { ReadbackPool } from "./readback.ts";

/** Reads `size` bytes of `source` from `offset` through the pool. */
function readRange(
  pool: ReadbackPool,
  source: GPUBuffer,
  range: { offset: number; size: number },
  options: { awaitPromise?: boolean; signal?: AbortSignal } = {},
): Promise<Uint8Array> {
  const copySize = Math.ceil(range.size / 4) * 4;
  return pool.read(
    range.size,
    (encoder, staging) => {
      if (copySize > 0) encoder.copyBufferToBuffer(source, range.offset, staging, 0, copySize);
    },
    (bytes) => bytes.slice(),
    { ...options, label: "test" },
  );
}

Deno.test("reused staging buffers return the bytes of each read, early and awaited alike", async () => {
  using rt = await GpuRuntime.create();
  using pool = new ReadbackPool(rt.device);
  const host = new Uint8Array(4096).map((_, i) => (i * 151 + 7) & 255);
  const source = rt.buffer("source", host);
  const ranges = [{ offset: 0, size: 4 }, { offset: 256, size: 6 }, { offset: 512, size: 3000 }];
  for (let round = 0; round < 3; round++) {
    for (const range of ranges) {
      const want = host.subarray(range.offset, range.offset + range.size);
      assert.deepEqual(await readRange(pool, source, range), want, `round ${round}`);
      const awaited = await readRange(pool, source, range, { awaitPromise: true });
      assert.deepEqual(awaited, want, `round ${round}, awaiting the promise`);
    }
  }
  // Deno 2.9 maps inside mapAsync(): reused buffers are read without its 10 ms sleep. A Deno
  // that stops doing so falls back to awaiting (still correct); this says the fast path is gone.
  assert.ok(pool.earlyReads > 0, "no read took the early path");
});

Deno.test("a reused staging buffer never hands back an earlier read's bytes", async () => {
  using rt = await GpuRuntime.create();
  using pool = new ReadbackPool(rt.device);
  const source = rt.buffer("changing", new Float32Array([1, 2]));
  for (let v = 0; v < 8; v++) {
    rt.write(source, new Float32Array([v, -v]));
    const bytes = await readRange(pool, source, { offset: 0, size: 8 });
    assert.deepEqual([...new Float32Array(bytes.buffer)], [v, -v]);
  }
  assert.equal(pool.earlyReads, 7, "back-to-back reads reuse the one buffer, all but the first");
});

Deno.test("a copy from a destroyed buffer throws a validation error, then reads work again", async () => {
  using rt = await GpuRuntime.create();
  using pool = new ReadbackPool(rt.device);
  const good = rt.buffer("good", new Uint32Array([42]));
  await readRange(pool, good, { offset: 0, size: 4 }); // a pooled 4-byte buffer, mapped once
  const gone = rt.device.createBuffer({ size: 16, usage: GPUBufferUsage.COPY_SRC });
  gone.destroy();
  await assert.rejects(() => readRange(pool, gone, { offset: 0, size: 4 }), GpuStageError);
  assert.deepEqual([...await readRange(pool, good, { offset: 0, size: 4 })], [42, 0, 0, 0]);
  await rt.checkErrors(); // the read's own scope caught it: nothing left uncaptured
});

Deno.test("a destroyed device rejects a read as a map of a destroyed device does", async () => {
  using rt = await GpuRuntime.create();
  const pool = new ReadbackPool(rt.device);
  const source = rt.buffer("source", new Uint32Array([1]));
  await readRange(pool, source, { offset: 0, size: 4 });
  rt.device.destroy();
  await rt.device.lost;
  await assert.rejects(() => readRange(pool, source, { offset: 0, size: 4 }));
  pool[Symbol.dispose]();
});

Deno.test("an aborted read rejects with the reason; the fence waits for queued work", async () => {
  using rt = await GpuRuntime.create();
  using pool = new ReadbackPool(rt.device);
  const source = rt.buffer("source", new Uint32Array([5]));
  const ac = new AbortController();
  const pending = readRange(pool, source, { offset: 0, size: 4 }, { signal: ac.signal });
  ac.abort(new Error("cancelled"));
  await assert.rejects(() => pending, /cancelled/);
  rt.write(source, new Uint32Array([9]));
  await rt.untilIdle();
  assert.deepEqual([...await rt.readU32({ buffer: source, size: 4 })], [9]);
});
