import assert from "node:assert/strict";
import { forEachLimited } from "./concurrency.ts";

Deno.test("forEachLimited runs every task with at most `lanes` in flight", async () => {
  let inFlight = 0;
  let peak = 0;
  const done: number[] = [];
  await forEachLimited(10, 3, async (i) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    await new Promise((r) => setTimeout(r, 1));
    inFlight--;
    done.push(i);
  });
  assert.equal(peak, 3);
  assert.deepEqual(done.sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

Deno.test("forEachLimited stops the others and waits for them after a failure", async () => {
  const settled: number[] = [];
  await assert.rejects(
    forEachLimited(10, 3, async (i, signal) => {
      try {
        if (i === 1) throw new Error("task 1 broke");
        await new Promise((resolve, reject) => {
          const t = setTimeout(resolve, 1000);
          signal.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)));
        });
      } finally {
        settled.push(i);
      }
    }),
    /task 1 broke/,
  );
  assert.deepEqual(settled.sort(), [0, 1, 2]);
});
