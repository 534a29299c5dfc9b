import assert from "node:assert/strict";
import { EarlyBuffer } from "./early_buffer.ts";

Deno.test("EarlyBuffer: keeps by step up to its capacity, hands back in order, drops old", () => {
  const b = new EarlyBuffer<string>(3);
  assert.equal(b.keep(5, "a"), true);
  assert.equal(b.keep(6, "b"), true);
  assert.equal(b.keep(5, "c"), true);
  assert.equal(b.keep(7, "d"), false, "full");
  assert.deepEqual(b.take(5), ["a", "c"]);
  assert.deepEqual(b.take(5), []);
  assert.equal(b.size, 1);
  b.keep(4, "e");
  b.dropBefore(6);
  assert.deepEqual(b.take(4), []);
  assert.deepEqual(b.take(6), ["b"]);
  assert.equal(b.size, 0);
  assert.throws(() => new EarlyBuffer(0), RangeError);
});
