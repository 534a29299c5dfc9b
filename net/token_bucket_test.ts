import assert from "node:assert/strict";
import { TokenBucket } from "./token_bucket.ts";

Deno.test("a token bucket covers its burst, then makes the caller wait for the refill", () => {
  const bucket = new TokenBucket({ ratePerSecond: 4, burst: 3 }, 1000);
  assert.equal(bucket.take(1, 1000), 0);
  assert.equal(bucket.take(2, 1000), 0);
  assert.equal(bucket.take(1, 1000), 250, "one token at 4 per second");
  assert.equal(bucket.available(1000), -1);
  assert.equal(bucket.available(1250), 0, "the debt is repaid after the wait");
  assert.equal(bucket.take(1, 1500), 0);
});

Deno.test("a token bucket refills up to its burst, never beyond", () => {
  const bucket = new TokenBucket({ ratePerSecond: 1000, burst: 10 }, 0);
  bucket.take(10, 0);
  assert.equal(bucket.available(5), 5);
  assert.equal(bucket.available(60_000), 10);
  assert.equal(bucket.take(12, 60_000), 2, "a cost over the burst leaves a debt");
});

Deno.test("a token bucket ignores a clock that steps back", () => {
  const bucket = new TokenBucket({ ratePerSecond: 10, burst: 1 }, 1000);
  bucket.take(1, 1000);
  assert.equal(bucket.available(500), 0);
  assert.equal(bucket.available(1100), 1);
});

Deno.test("a token bucket refuses a rate or burst that is not positive", () => {
  assert.throws(
    () => new TokenBucket({ ratePerSecond: 0, burst: 1 }, 0),
    /ratePerSecond must be a finite number > 0, found 0/,
  );
  assert.throws(
    () => new TokenBucket({ ratePerSecond: 1, burst: NaN }, 0),
    /burst must be a finite number > 0, found NaN/,
  );
});
