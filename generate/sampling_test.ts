import assert from "node:assert/strict";
import {
  argmax,
  candidates,
  checkSampling,
  chooseToken,
  drawCandidate,
  GREEDY,
} from "./sampling.ts";
import { samplingSeedBytes, TokenSampler } from "./sampler.ts";

const close = (a: number, b: number, what: string) =>
  assert.ok(Math.abs(a - b) < 1e-12, `${what}: ${a} vs ${b}`);

Deno.test("argmax takes the first of equal logits and refuses NaN", () => {
  assert.equal(argmax(Float64Array.of(-3, 5, 5, 1)), 1);
  assert.equal(argmax([7]), 0);
  assert.throws(() => argmax([1, NaN]), /logit 1 is NaN/);
  assert.throws(() => argmax([]), /no logits/);
});

Deno.test("temperature scales the logits before the softmax", () => {
  const logits = Float32Array.of(1, 2, 3);
  for (const t of [0.5, 1, 2]) {
    const c = candidates(logits, { temperature: t, topK: 0, topP: 1 });
    assert.deepEqual([...c.ids], [2, 1, 0]);
    const e = [3, 2, 1].map((z) => Math.exp(z / t));
    const sum = e.reduce((a, b) => a + b);
    c.probs.forEach((p, j) => close(p, e[j] / sum, `T=${t} candidate ${j}`));
  }
  // A higher temperature flattens: the most likely token's share falls.
  const hot = candidates(logits, { temperature: 4, topK: 0, topP: 1 }).probs[0];
  const cold = candidates(logits, { temperature: 0.25, topK: 0, topP: 1 }).probs[0];
  assert.ok(cold > 0.98 && hot < 0.5, `${cold} ${hot}`);
});

Deno.test("top-k keeps the k most likely tokens, and ties with the k-th", () => {
  const logits = Float64Array.of(0, 4, 1, 3, 2);
  const c = candidates(logits, { temperature: 1, topK: 2, topP: 1 });
  assert.deepEqual([...c.ids], [1, 3]);
  const e = Math.exp(-1);
  close(c.probs[0], 1 / (1 + e), "renormalised");
  assert.deepEqual([...candidates([5, 1, 5, 5], { temperature: 1, topK: 2, topP: 1 }).ids], [
    0,
    2,
    3,
  ]);
  // k at or above the vocabulary keeps everything.
  assert.equal(candidates(logits, { temperature: 1, topK: 5, topP: 1 }).ids.length, 5);
  assert.equal(candidates(logits, { temperature: 1, topK: 9, topP: 1 }).ids.length, 5);
});

Deno.test("top-p keeps the smallest most-likely set reaching p", () => {
  // Probabilities 0.5, 0.25, 0.125, 0.125 (logits as logs).
  const logits = [0.5, 0.25, 0.125, 0.125].map(Math.log);
  const ids = (p: number) => [...candidates(logits, { temperature: 1, topK: 0, topP: p }).ids];
  assert.deepEqual(ids(0.5), [0]);
  assert.deepEqual(ids(0.6), [0, 1]);
  assert.deepEqual(ids(0.75), [0, 1]);
  assert.deepEqual(ids(0.8), [0, 1, 2]);
  assert.deepEqual(ids(1), [0, 1, 2, 3]);
  assert.deepEqual(ids(0.01), [0], "at least one token");
  const c = candidates(logits, { temperature: 1, topK: 0, topP: 0.6 });
  close(c.probs[0], 2 / 3, "renormalised");
  close(c.probs[1], 1 / 3, "renormalised");
  // Top-k applies first, then top-p to what it left, renormalised: of 0.4, 0.3, 0.2, 0.1 top-p
  // 0.72 keeps three, but after top-k 3 (0.44, 0.33, 0.22) two.
  const four = [0.4, 0.3, 0.2, 0.1].map(Math.log);
  assert.deepEqual([...candidates(four, { temperature: 1, topK: 0, topP: 0.72 }).ids], [0, 1, 2]);
  assert.deepEqual([...candidates(four, { temperature: 1, topK: 3, topP: 0.72 }).ids], [0, 1]);
});

Deno.test("a draw walks the cumulative probabilities", () => {
  const c = { ids: Uint32Array.of(7, 3, 9), probs: Float64Array.of(0.5, 0.3, 0.2) };
  assert.equal(drawCandidate(c, 0), 7);
  assert.equal(drawCandidate(c, 0.4999), 7);
  assert.equal(drawCandidate(c, 0.5), 3);
  assert.equal(drawCandidate(c, 0.79), 3);
  assert.equal(drawCandidate(c, 0.81), 9);
  assert.throws(() => drawCandidate(c, 1), /\[0, 1\)/);
  // Draws follow the distribution: 20,000 evenly spaced numbers.
  const counts = new Map<number, number>();
  for (let i = 0; i < 20000; i++) {
    const id = drawCandidate(c, (i + 0.5) / 20000);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  assert.deepEqual([...counts], [[7, 10000], [3, 6000], [9, 4000]]);
});

Deno.test("greedy ignores top-k and top-p and draws no number", () => {
  let calls = 0;
  const u = () => (calls++, 0.5);
  assert.equal(chooseToken([1, 9, 3], GREEDY, u), 1);
  assert.equal(chooseToken([1, 9, 3], { temperature: 0, topK: 1, topP: 0.1 }, u), 1);
  assert.equal(calls, 0);
});

Deno.test("sampling options out of range are refused by name", () => {
  assert.throws(() => checkSampling({ temperature: -1, topK: 0, topP: 1 }), /temperature/);
  assert.throws(() => checkSampling({ temperature: NaN, topK: 0, topP: 1 }), /temperature/);
  assert.throws(() => checkSampling({ temperature: 1, topK: 1.5, topP: 1 }), /top-k/);
  assert.throws(() => checkSampling({ temperature: 1, topK: 0, topP: 0 }), /top-p/);
  assert.throws(() => checkSampling({ temperature: 1, topK: 0, topP: 1.1 }), /top-p/);
});

Deno.test("a seeded sampler repeats its tokens; another seed draws others", () => {
  // 64 flat-ish logits: a draw is far from certain, so two seeds part quickly.
  const rows = Array.from(
    { length: 40 },
    (_, r) => Float32Array.from({ length: 64 }, (_, i) => Math.sin(r * 7 + i * 1.3)),
  );
  const options = { temperature: 1, topK: 0, topP: 1 };
  const run = (seed: number) => {
    const s = new TokenSampler(options, seed);
    return rows.map((row) => s.next(row));
  };
  assert.deepEqual(run(7), run(7));
  assert.notDeepEqual(run(7), run(8));
  // The draws are the stream's words: pinned, so the seed means the same on every machine.
  assert.deepEqual(run(7).slice(0, 8), [31, 5, 26, 7, 9, 32, 51, 23]);
  assert.deepEqual([...samplingSeedBytes(0x01020304).slice(28)], [1, 2, 3, 4]);
  assert.throws(() => samplingSeedBytes(-1), /seed/);
});
