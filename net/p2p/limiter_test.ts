import assert from "node:assert/strict";
import { Limiter } from "./limiter.ts";

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => open = r);
  return { open, opened };
}

Deno.test("no more than capacity tasks run at once, in arrival order", async () => {
  const limiter = new Limiter(2);
  const gates = [gate(), gate(), gate(), gate()];
  const started: number[] = [];
  const runs = gates.map((g, i) =>
    limiter.run(async () => {
      started.push(i);
      await g.opened;
      return i;
    })
  );
  await Promise.resolve();
  assert.deepEqual(started, [0, 1]);
  gates[1].open();
  await runs[1];
  await Promise.resolve();
  assert.deepEqual(started, [0, 1, 2]);
  for (const g of gates) g.open();
  assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3]);
  assert.equal(limiter.peak, 2);
  assert.equal(limiter.active, 0);
});

Deno.test("a waiter that aborts leaves the queue and a failing task frees its slot", async () => {
  const limiter = new Limiter(1);
  const g = gate();
  const first = limiter.run(() => g.opened);
  const controller = new AbortController();
  const waiting = limiter.run(() => Promise.resolve("never"), controller.signal);
  controller.abort(new Error("gave up"));
  await assert.rejects(waiting, /gave up/);
  g.open();
  await first;
  await assert.rejects(limiter.run(() => Promise.reject(new Error("boom"))), /boom/);
  assert.equal(await limiter.run(() => Promise.resolve(7)), 7);
  assert.throws(() => new Limiter(0), /capacity must be a positive integer/);
});
