import assert from "node:assert/strict";
import { SequenceRateLimiter } from "./rate_limit.ts";

Deno.test("a client may take its burst at once, then the refill rate", () => {
  const limiter = new SequenceRateLimiter({ sequencesPerSecond: 6, burstSequences: 12 });
  assert.deepEqual(limiter.take("a", 6, 0), { ok: true });
  assert.deepEqual(limiter.take("a", 6, 0), { ok: true });
  assert.deepEqual(limiter.take("a", 6, 0), { ok: false, available: 0, retryInMs: 1000 });
  assert.deepEqual(limiter.take("a", 6, 500), { ok: false, available: 3, retryInMs: 500 });
  assert.deepEqual(limiter.take("a", 6, 1000), { ok: true });
  assert.deepEqual(limiter.take("b", 12, 1000), { ok: true }, "clients have separate buckets");
  // A quiet client refills to its burst, no further.
  assert.deepEqual(limiter.take("a", 13, 60_000), {
    ok: false,
    available: 12,
    retryInMs: Infinity,
  });
  assert.deepEqual(limiter.take("a", 12, 60_000), { ok: true });
});

Deno.test("a refused request takes nothing", () => {
  const limiter = new SequenceRateLimiter({ sequencesPerSecond: 1, burstSequences: 4 });
  assert.ok(!limiter.take("a", 5, 0).ok);
  assert.ok(limiter.take("a", 4, 0).ok);
});

Deno.test("kept buckets are bounded: full ones go first, then the least recently used", () => {
  const limiter = new SequenceRateLimiter(
    { sequencesPerSecond: 1, burstSequences: 10 },
    { maxClients: 2 },
  );
  limiter.take("a", 10, 0);
  limiter.take("b", 10, 0);
  limiter.take("c", 10, 0);
  assert.equal(limiter.clients, 2);
  // "a" was dropped (least recently used): it starts full again.
  assert.ok(limiter.take("a", 10, 0).ok);
  // Kept: "c" and "a", both empty. By t = 10 s they are full again: a third client's request
  // drops both (as good as absent) and keeps only its own.
  assert.ok(limiter.take("d", 1, 10_000).ok);
  assert.equal(limiter.clients, 1);
  assert.ok(!limiter.take("d", 10, 10_000).ok, "the client in use kept its bucket");
});

Deno.test("bad limits are refused by name", () => {
  assert.throws(
    () => new SequenceRateLimiter({ sequencesPerSecond: 0, burstSequences: 1 }),
    /sequencesPerSecond must be > 0, found 0/,
  );
  assert.throws(
    () => new SequenceRateLimiter({ sequencesPerSecond: 1, burstSequences: 0.5 }),
    /burstSequences must be a positive integer, found 0.5/,
  );
});
