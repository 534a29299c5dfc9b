import assert from "node:assert/strict";
import {
  decodeTokensPerSecond,
  generateTokens,
  type LogitsModel,
  tokensPerSecond,
} from "./generator.ts";
import { argmax, GREEDY } from "./sampling.ts";
import { TokenSampler } from "./sampler.ts";
import { LlamaDecoder } from "../model/inference/mod.ts";
import { llamaParamLayout, referenceLossAndGrad } from "../model/mod.ts";
import { seededTokens, smallLlamaConfig, spreadWeights } from "../model/testing/fixtures.ts";
import { GpuRuntime } from "../shaders/mod.ts";

/** A model whose next token is always `(last + 1) mod V`, recording what it was given. */
function countingModel(contextLength: number, V = 10) {
  const calls: number[][] = [];
  let seq: number[] = [];
  const model: LogitsModel = {
    contextLength,
    reset: () => {
      seq = [];
    },
    append: (tokens) => {
      calls.push(Array.from(tokens));
      seq.push(...Array.from(tokens));
      const logits = new Float32Array(V);
      logits[(seq[seq.length - 1] + 1) % V] = 1;
      return Promise.resolve(logits);
    },
  };
  return { model, calls };
}

const greedy = new TokenSampler(GREEDY, 0);

Deno.test("the loop prefills once, then feeds one token at a time", async () => {
  const { model, calls } = countingModel(32);
  const seen: number[] = [];
  let now = 0;
  const r = await generateTokens(model, [3, 4], {
    maxNewTokens: 4,
    sampler: greedy,
    onToken: (t) => seen.push(t.index),
    clock: () => (now += 10),
  });
  assert.deepEqual(r.tokens, [5, 6, 7, 8]);
  assert.equal(r.stop, "max_new_tokens");
  assert.deepEqual(calls, [[3, 4], [5], [6], [7]], "no pass after the last token");
  assert.deepEqual(seen, [0, 1, 2, 3]);
  // Clock reads: start 10, after the prefill 20, at the end 30.
  assert.equal(r.prefillMs, 10);
  assert.equal(r.decodeMs, 10);
  assert.equal(tokensPerSecond(r), 200);
  assert.equal(decodeTokensPerSecond(r), 300);
});

Deno.test("without the cache every token re-reads the whole sequence", async () => {
  const { model, calls } = countingModel(32);
  const r = await generateTokens(model, [3, 4], { maxNewTokens: 3, sampler: greedy, cache: false });
  assert.deepEqual(r.tokens, [5, 6, 7]);
  assert.deepEqual(calls, [[3, 4], [3, 4, 5], [3, 4, 5, 6]]);
});

Deno.test("a stop token, a full context or a stop request end the loop", async () => {
  const eos = await generateTokens(countingModel(32).model, [1], {
    maxNewTokens: 9,
    sampler: greedy,
    stopTokens: [4],
  });
  assert.deepEqual(eos.tokens, [2, 3, 4]);
  assert.equal(eos.stop, "stop_token");
  const full = await generateTokens(countingModel(5).model, [1, 2], {
    maxNewTokens: 9,
    sampler: greedy,
  });
  assert.deepEqual(full.tokens, [3, 4, 5], "prompt and tokens fill the 5 positions");
  assert.equal(full.stop, "context_full");
  const stop = new AbortController();
  const interrupted = await generateTokens(countingModel(32).model, [1], {
    maxNewTokens: 9,
    sampler: greedy,
    stop: stop.signal,
    onToken: (t) => t.index === 1 && stop.abort(),
  });
  assert.deepEqual(interrupted.tokens, [2, 3]);
  assert.equal(interrupted.stop, "interrupted");
  await assert.rejects(
    () => generateTokens(countingModel(4).model, [], { maxNewTokens: 1, sampler: greedy }),
    /no tokens/,
  );
  await assert.rejects(
    () =>
      generateTokens(countingModel(4).model, [1, 2, 3, 4], { maxNewTokens: 1, sampler: greedy }),
    /4 tokens leave no room in the model's context of 4 positions/,
  );
  await assert.rejects(
    () => generateTokens(countingModel(4).model, [1], { maxNewTokens: 0, sampler: greedy }),
    /maxNewTokens/,
  );
});

// ---- on the GPU model ----

const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);
const WEIGHTS = spreadWeights(LAYOUT, 21, 0.3);
const PROMPT = Array.from(seededTokens(4, 3, CONFIG.vocabSize));
const NEW = 12;

/**
 * Greedy generation with the f64 reference model (model/reference.ts): the whole sequence's
 * forward for every token, argmax of the last row; with the gap between the best two logits.
 */
function referenceGreedy(prompt: number[], n: number): { tokens: number[]; margins: number[] } {
  const V = CONFIG.vocabSize, seq = [...prompt], margins: number[] = [];
  for (let i = 0; i < n; i++) {
    const T = seq.length;
    const { logits } = referenceLossAndGrad(CONFIG, LAYOUT, WEIGHTS, {
      tokens: Uint32Array.from(seq),
      count: 1,
      seqLen: T,
    });
    const row = logits.subarray((T - 1) * V, T * V);
    const best = argmax(row);
    margins.push(row[best] - Math.max(...row.filter((_, j) => j !== best)));
    seq.push(best);
  }
  return { tokens: seq.slice(prompt.length), margins };
}

Deno.test("greedy generation with the KV cache equals greedy generation with the f64 reference", async () => {
  const ref = referenceGreedy(PROMPT, NEW);
  // The GPU's logits are within ~1e-5 of the reference's: a gap this wide cannot flip an argmax,
  // so equal tokens are a real check, not luck.
  assert.ok(Math.min(...ref.margins) > 1e-3, `margins ${ref.margins}`);
  assert.ok(new Set(ref.tokens).size > 3, `a varied sample: ${ref.tokens}`);
  using rt = await GpuRuntime.create();
  using decoder = new LlamaDecoder(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights: WEIGHTS,
    contextLength: PROMPT.length + NEW,
  });
  for (const cache of [true, false]) {
    const r = await generateTokens(decoder, PROMPT, { maxNewTokens: NEW, sampler: greedy, cache });
    assert.deepEqual(r.tokens, ref.tokens, `cache ${cache}`);
    assert.equal(r.stop, "max_new_tokens");
  }
});

Deno.test("sampling with a seed repeats, with or without the cache; another seed differs", async () => {
  using rt = await GpuRuntime.create();
  using decoder = new LlamaDecoder(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights: WEIGHTS,
    contextLength: PROMPT.length + 20,
  });
  const options = { temperature: 1.5, topK: 20, topP: 0.95 };
  const sample = async (seed: number, cache = true) =>
    (await generateTokens(decoder, PROMPT, {
      maxNewTokens: 20,
      sampler: new TokenSampler(options, seed),
      cache,
    })).tokens;
  const first = await sample(11);
  assert.deepEqual(await sample(11), first);
  assert.deepEqual(await sample(11, false), first);
  assert.notDeepEqual(await sample(12), first);
});
