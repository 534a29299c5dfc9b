import assert from "node:assert/strict";
import { AnswerTimeout, RELAY_PROBE_TIMES } from "./relay_probe.ts";

Deno.test("a relay not heard yet gets the longest wait; one answering fast, the shortest", () => {
  const wait = new AnswerTimeout(3_000, 10_000);
  assert.equal(wait.ms(), 10_000);
  wait.observe(4);
  assert.equal(wait.ms(), 3_000);
  for (let i = 0; i < 50; i++) wait.observe(4 + (i % 3));
  assert.equal(wait.ms(), 3_000);
});

Deno.test("the wait is the smoothed answer time plus four mean deviations (RFC 6298)", () => {
  const wait = new AnswerTimeout(1, 100_000);
  wait.observe(1_000); // first answer: smoothed 1000, deviation 500
  assert.equal(wait.ms(), 3_000);
  wait.observe(2_000); // deviation 0.75 x 500 + 0.25 x 1000, smoothed 0.875 x 1000 + 0.125 x 2000
  assert.equal(wait.ms(), 1_125 + 4 * 625);
});

Deno.test("a relay on a busy machine, whose answers wander, is given longer; never past the bound", () => {
  const wait = new AnswerTimeout(3_000, 10_000);
  for (let i = 0; i < 40; i++) wait.observe(i % 2 === 0 ? 50 : 1_500);
  const busy = wait.ms();
  assert.ok(busy > 3_000 && busy < 10_000, `a wandering relay's wait: ${busy} ms`);
  for (let i = 0; i < 10; i++) wait.observe(8_000);
  assert.equal(wait.ms(), 10_000);
});

Deno.test("the wait's bounds are checked", () => {
  assert.throws(() => new AnswerTimeout(0, 10), /0 < minMs <= maxMs/);
  assert.throws(() => new AnswerTimeout(20, 10), /0 < minMs <= maxMs/);
  assert.ok(RELAY_PROBE_TIMES.minTimeoutMs <= RELAY_PROBE_TIMES.maxTimeoutMs);
});
