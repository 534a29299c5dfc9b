import assert from "node:assert/strict";
import { GpuRuntime } from "../shaders/mod.ts";
import { documentRequests } from "./requests.ts";
import { LogLikelihoodScorer } from "./scorer.ts";
import { promptTokenizer } from "../data/mod.ts";
import { CONFIG, LAYOUT, referenceLogLikelihood, WEIGHTS } from "./testing/reference.ts";

Deno.test("GPU log-likelihoods match the f64 reference, across slots and padding", async () => {
  const encoder = promptTokenizer("bytes");
  const docs = [
    { context: "The river", choices: ["runs", "is a stone wall"], answer: 0 },
    { context: "Salt and", choices: ["bread", "wind", "x"], answer: 1 },
    { context: "A very long context that is cut", choices: ["at the end"], answer: 0 },
  ];
  const requests = docs.flatMap((d, i) => documentRequests(encoder, i, d, "", 20));
  assert.equal(requests.length, 6);
  using rt = await GpuRuntime.create();
  using scorer = new LogLikelihoodScorer(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights: WEIGHTS,
    seqLen: 20,
    microBatch: 2,
    slots: 2,
  });
  const seen: number[] = [];
  const got = await scorer.score(requests, (done) => seen.push(done));
  assert.deepEqual(seen, [4, 6], "two submissions of up to 2 × 2 requests");
  requests.forEach((r, i) => {
    const want = referenceLogLikelihood(r.tokens, r.start);
    assert.ok(
      Math.abs(got[i] - want) <= 1e-3 * Math.max(1, Math.abs(want)),
      `request ${i}: ${got[i]} against the reference's ${want}`,
    );
  });
  // Cut to 20 tokens: the third document's request lost its oldest context.
  assert.equal(requests[5].tokens.length, 20);
  await assert.rejects(
    scorer.score([{ doc: 9, choice: 0, tokens: new Array(21).fill(65), start: 3 }]),
    /document 9 choice 0 \(21 tokens, continuation at 3\) does not fit a window of 20/,
  );
});
