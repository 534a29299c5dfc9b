import assert from "node:assert/strict";
import { DummyDataProvider } from "./dummy.ts";

Deno.test("dummy provider serves zeros and still checks batch ranges", async () => {
  const p = new DummyDataProvider(4);
  const b = await p.getSamples({ start: 0, end: 1 });
  assert.deepEqual({ count: b.count, seqLen: b.seqLen }, { count: 2, seqLen: 4 });
  assert.deepEqual(Array.from(b.tokens), new Array(8).fill(0));
  await assert.rejects(p.getSamples({ start: 2, end: 1 }), /not an inclusive range/);
  assert.throws(() => new DummyDataProvider(0), RangeError);
});
