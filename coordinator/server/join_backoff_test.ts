import assert from "node:assert/strict";
import { backoffReason, DEFAULT_JOIN_BACKOFF_EPOCHS, JoinBackoff } from "./join_backoff.ts";

Deno.test("a key backed off in epoch e may not join until epoch e + k", () => {
  const backoff = new JoinBackoff(3);
  const entry = backoff.record("aa", 4, "HealthCheck");
  assert.deepEqual(entry, { epoch: 4, until: 7, cause: "HealthCheck" });
  for (const epoch of [4, 5, 6]) assert.deepEqual(backoff.check("aa", epoch), entry);
  assert.equal(backoff.check("bb", 4), null, "other keys are not affected");
  assert.equal(backoff.check("aa", 7), null);
  assert.equal(backoff.size, 0, "an expired back-off is forgotten");
});

Deno.test("the default back-off makes a dropped key sit out one whole epoch", () => {
  assert.equal(DEFAULT_JOIN_BACKOFF_EPOCHS, 2);
  const backoff = new JoinBackoff();
  backoff.record("aa", 0, "SilentWitness");
  assert.notEqual(backoff.check("aa", 1), null);
  assert.equal(backoff.check("aa", 2), null);
});

Deno.test("a later back-off of the same key wins; prune forgets expired ones", () => {
  const backoff = new JoinBackoff(2);
  backoff.record("aa", 1, "SilentWitness");
  backoff.record("aa", 2, "HealthCheck");
  assert.deepEqual(backoff.check("aa", 3), { epoch: 2, until: 4, cause: "HealthCheck" });
  backoff.record("bb", 5, "HealthCheck");
  backoff.prune(4);
  assert.equal(backoff.size, 1);
  assert.notEqual(backoff.check("bb", 6), null);
});

Deno.test("a back-off of 0 epochs records nothing; a negative one is refused", () => {
  const off = new JoinBackoff(0);
  assert.equal(off.record("aa", 1, "HealthCheck"), null);
  assert.equal(off.check("aa", 1), null);
  assert.throws(() => new JoinBackoff(-1), /whole number of epochs >= 0, found -1/);
  assert.throws(() => new JoinBackoff(1.5), /found 1.5/);
});

Deno.test("the refusal names the cause, the epoch and when the key may join again", () => {
  assert.equal(
    backoffReason({ epoch: 3, until: 5, cause: "HealthCheck" }),
    "this key was dropped by a health check in epoch 3; it may join again from epoch 5",
  );
  assert.match(
    backoffReason({ epoch: 0, until: 2, cause: "SilentWitness" }),
    /elected witness and did not report .* in epoch 0; it may join again from epoch 2/,
  );
});

Deno.test("holds asks about a later epoch without forgetting the back-off; untils lists the ends", () => {
  const backoff = new JoinBackoff(2);
  backoff.record("aa", 1, "HealthCheck");
  backoff.record("bb", 2, "SilentWitness");
  // A run waiting for members asks whether epoch 3 would take "aa": it would, but "aa" is still
  // backed off from epoch 1's point of view.
  assert.equal(backoff.holds("aa", 3), null);
  assert.deepEqual(backoff.holds("aa", 1), { epoch: 1, until: 3, cause: "HealthCheck" });
  assert.equal(backoff.size, 2);
  assert.deepEqual(backoff.untils().sort(), [3, 4]);
});
