import assert from "node:assert/strict";
import { PullLedger } from "./pull_ledger.ts";

Deno.test("PullLedger: one pull at a time per peer and step, spaced, a few in all", () => {
  const ledger = new PullLedger({ maxAttempts: 2, spacingMs: 1000 });
  assert.equal(ledger.begin("p", 5, 0), true);
  assert.equal(ledger.begin("p", 5, 5000), false, "the first is still in flight");
  assert.equal(ledger.begin("q", 5, 0), true, "another peer is another pull");
  assert.equal(ledger.begin("p", 6, 0), true, "another step is another pull");
  ledger.end("p", 5);
  assert.equal(ledger.begin("p", 5, 999), false, "too soon after the first");
  assert.equal(ledger.begin("p", 5, 1000), true);
  ledger.end("p", 5);
  assert.equal(ledger.begin("p", 5, 9000), false, "two attempts were allowed");
});

Deno.test("PullLedger: forgotten steps may be pulled again", () => {
  const ledger = new PullLedger({ maxAttempts: 1 });
  assert.equal(ledger.begin("p", 5, 0), true);
  ledger.end("p", 5);
  assert.equal(ledger.begin("p", 5, 10_000), false);
  ledger.forgetBefore(6);
  assert.equal(ledger.begin("p", 5, 10_000), true);
});

Deno.test("PullLedger: a failed pull stays pending, and says when to retry, while attempts are left", () => {
  const ledger = new PullLedger({ maxAttempts: 2, spacingMs: 1000 });
  assert.equal(ledger.pending("p", 5), false, "never pulled");
  assert.equal(ledger.begin("p", 5, 100), true);
  assert.equal(ledger.pending("p", 5), true, "under way");
  assert.equal(ledger.retryAt("p", 5), null, "under way: nothing to retry");
  ledger.end("p", 5, true);
  assert.equal(ledger.pending("p", 5), true, "failed, one attempt left");
  assert.equal(ledger.retryAt("p", 5), 1100);
  assert.equal(ledger.begin("p", 5, 1100), true);
  ledger.end("p", 5, true);
  assert.equal(ledger.pending("p", 5), false, "failed, no attempt left");
  assert.equal(ledger.retryAt("p", 5), null);
  assert.equal(ledger.begin("q", 5, 0), true);
  ledger.end("q", 5);
  assert.equal(ledger.pending("q", 5), false, "answered: over");
  assert.equal(ledger.retryAt("q", 5), null);
});
