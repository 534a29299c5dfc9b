import assert from "node:assert/strict";
import { argmax, choiceLength, scoreDocument, summarize } from "./scoring.ts";

Deno.test("argmax takes the first of equal values", () => {
  assert.equal(argmax([1, 3, 3, 2]), 1);
  assert.equal(argmax([-5]), 0);
});

Deno.test("acc picks the likeliest choice, acc_norm the likeliest per character", () => {
  // "a" at -2 (per char -2) against "long answer" at -1.5 (per char ~ -0.136).
  const s = scoreDocument([-2, -1.5 * 1], ["a", "long answer"], 0);
  assert.deepEqual(s, { acc: 0, accNorm: 0 });
  const t = scoreDocument([-1, -8], ["a", "long answer"], 1);
  assert.deepEqual(t, { acc: 0, accNorm: 1 }, "-8/11 beats -1/1");
  assert.equal(choiceLength("héé"), 3, "code points, not bytes");
  assert.throws(() => scoreDocument([-1], ["a", "b"], 0), /1 scores for 2 choices/);
});

Deno.test("summaries: the mean and its standard error", () => {
  const s = summarize([1, 0, 1, 1]);
  assert.equal(s.value, 0.75);
  // Sample variance 0.25 over 4: stderr sqrt(0.25 / 4) = 0.25.
  assert.ok(Math.abs(s.stderr - 0.25) < 1e-12);
  assert.deepEqual(summarize([1]), { value: 1, stderr: 0 });
  assert.throws(() => summarize([]), /no documents/);
});
