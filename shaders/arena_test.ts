import assert from "node:assert/strict";
import { BufferArena } from "./arena.ts";
import { GpuRuntime } from "./gpu.ts";

Deno.test("arena reuses buffers of the same size across steps", async () => {
  using rt = await GpuRuntime.create();
  using arena = new BufferArena(rt);
  const first = [arena.acquire("x", 100), arena.acquire("y", 100), arena.acquire("z", 64)];
  assert.equal(arena.created, 3);
  assert.ok(first[0].size >= 100);
  arena.releaseAll();
  const second = [arena.acquire("y", 100), arena.acquire("x", 100), arena.acquire("w", 64)];
  assert.equal(arena.created, 3);
  assert.equal(second[0], first[1], "same label gets the same buffer back");
  assert.equal(second[1], first[0]);
  assert.equal(second[2], first[2], "another label reuses a free buffer of the same size");
  arena.release(second[2]);
  assert.notEqual(arena.acquire("big", 1 << 12), first[2]);
  assert.equal(arena.created, 4);
  assert.throws(() => arena.release(rt.buffer("foreign", 16)), /not acquired from this arena/);
});
