import assert from "node:assert/strict";
import { MIN_RATE_SAMPLE_BYTES, ProviderScores } from "./provider_scores.ts";

const MB = 1024 * 1024;

Deno.test("with nothing measured the ranking is the caller's order", () => {
  assert.deepEqual(new ProviderScores().rank(["c", "a", "b"], MB), ["c", "a", "b"]);
});

Deno.test("the faster provider for this size goes first: throughput for big, latency for small", () => {
  const scores = new ProviderScores();
  // a: near (5 ms) but slow (100 kB/s); b: far (80 ms) but fast (10 MB/s).
  scores.noteRoundTrip("a", 5);
  scores.noteTransfer("a", MB, MB / 100);
  scores.noteRoundTrip("b", 80);
  scores.noteTransfer("b", MB, MB / 10_000);
  assert.deepEqual(scores.rank(["a", "b"], 64 * MB), ["b", "a"]);
  assert.deepEqual(scores.rank(["a", "b"], 1024), ["a", "b"]);
});

Deno.test("direct goes before relayed, whatever the measurements", () => {
  const scores = new ProviderScores();
  scores.noteTransfer("relayed-fast", MB, 10);
  scores.noteRoute("relayed-fast", true);
  scores.noteTransfer("direct-slow", MB, 1000);
  scores.noteRoute("direct-slow", false);
  assert.deepEqual(scores.rank(["relayed-fast", "direct-slow"], MB), [
    "direct-slow",
    "relayed-fast",
  ]);
});

Deno.test("failing providers go last, fewest failures first; a success clears the count", () => {
  const scores = new ProviderScores();
  scores.noteFailure("a");
  scores.noteFailure("a");
  scores.noteFailure("b");
  assert.deepEqual(scores.rank(["a", "b", "c"], MB), ["c", "b", "a"]);
  scores.noteTransfer("a", 10, 1);
  assert.deepEqual(scores.rank(["a", "b", "c"], MB), ["a", "c", "b"]);
});

Deno.test("an unmeasured provider counts as the median, so it is tried before a slow one", () => {
  const scores = new ProviderScores();
  scores.noteTransfer("fast", MB, 10);
  scores.noteTransfer("mid", MB, 100);
  scores.noteTransfer("slow", MB, 1000);
  const ranked = scores.rank(["slow", "new", "mid", "fast"], MB);
  assert.deepEqual(ranked, ["fast", "new", "mid", "slow"]);
});

Deno.test("small transfers are not throughput samples; the average follows new samples", () => {
  const scores = new ProviderScores();
  scores.noteTransfer("a", MIN_RATE_SAMPLE_BYTES - 1, 0.001);
  assert.equal(scores.figures("a").bytesPerMs, undefined);
  scores.noteTransfer("a", 100_000, 100); // 1000 B/ms
  scores.noteTransfer("a", 100_000, 50); // 2000 B/ms
  assert.equal(scores.figures("a").bytesPerMs, 0.3 * 2000 + 0.7 * 1000);
  scores.noteRoundTrip("a", 20);
  scores.noteRoundTrip("a", 30);
  assert.equal(scores.roundTripMs("a"), 20);
});

Deno.test("weights are measured speeds, the median for the unmeasured, all 1 when none is", () => {
  const scores = new ProviderScores();
  assert.deepEqual(scores.weights(["a", "b"]), [1, 1]);
  scores.noteTransfer("a", MB, MB / 4000);
  scores.noteTransfer("b", MB, MB / 1000);
  assert.deepEqual(scores.weights(["a", "b", "c"]), [4000, 1000, 2500]);
});
