import assert from "node:assert/strict";
import type { RoundAnnouncement } from "./announcement.ts";
import { RebroadcastQueue } from "./rebroadcast.ts";

const finished = (step: number, tag: number): RoundAnnouncement => ({
  kind: "Finished",
  step,
  proof: { committee: "Trainer", position: 0, index: 0 },
  merkleRoot: new Uint8Array(32).fill(tag),
  warmup: false,
});

Deno.test("an empty queue has nothing to resend", () => {
  assert.equal(new RebroadcastQueue().next(5), undefined);
});

Deno.test("resends cycle round-robin through the eligible announcements", () => {
  const queue = new RebroadcastQueue();
  const a = finished(4, 1), b = finished(5, 2), c = finished(5, 3);
  queue.record(a);
  queue.record(b);
  queue.record(c);
  assert.deepEqual([1, 2, 3, 4].map(() => queue.next(5)), [a, b, c, a]);
});

Deno.test("announcements older than the last two steps are forgotten", () => {
  const queue = new RebroadcastQueue();
  const old = finished(3, 1), recent = finished(5, 2);
  queue.record(old);
  queue.record(recent);
  assert.equal(queue.next(4), old);
  assert.equal(queue.next(6), recent); // step 3 is now too old; step 5 is current-1
  assert.equal(queue.size, 1);
  assert.equal(queue.next(7), undefined); // step 5 too old at step 7
  assert.equal(queue.size, 0);
});

Deno.test("the round-robin position survives pruning", () => {
  const queue = new RebroadcastQueue(1);
  const a = finished(1, 1), b = finished(2, 2), c = finished(2, 3);
  for (const m of [a, b, c]) queue.record(m);
  assert.equal(queue.next(1), a);
  assert.equal(queue.next(1), b); // cursor now on c
  assert.equal(queue.next(2), c); // a pruned; c is still next
  assert.equal(queue.next(2), b);
});

Deno.test("keepSteps must be positive", () => {
  assert.throws(() => new RebroadcastQueue(0), /keepSteps must be a positive integer, found 0/);
});
