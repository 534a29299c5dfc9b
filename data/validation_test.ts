import assert from "node:assert/strict";
import { openBundledCorpus } from "./corpus.ts";
import { LLAMA2_VOCAB_SIZE } from "./llama_tokenizer.ts";
import { LocalDataProvider } from "./local.ts";
import type { TokenBatch } from "./provider.ts";
import { closing, writeFixtureDataset } from "./testing/fixtures.ts";
import { evaluateLoss } from "./validation.ts";

Deno.test("evaluateLoss walks the provider in order and weights by sequences", async () => {
  await using data = await writeFixtureDataset([80]);
  await using provider = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  const seen: number[] = [];
  // A stand-in "loss": the batch's first token, so the weighting is checkable by hand.
  const lossOf = (b: TokenBatch) => {
    seen.push(b.count);
    return Promise.resolve(b.tokens[0]);
  };
  const report = await evaluateLoss(provider, lossOf, { batchSize: 4 });
  assert.deepEqual(seen, [4, 4, 2]);
  const first = (s: number) => data.files[0].tokens[s * 8];
  const expected = (4 * first(0) + 4 * first(4) + 2 * first(8)) / 10;
  assert.deepEqual(report, { meanLoss: expected, sequences: 10, batches: 3 });
  const capped = await evaluateLoss(provider, lossOf, { batchSize: 3, maxBatches: 2 });
  assert.equal(capped.sequences, 6);
});

Deno.test("evaluateLoss rejects a non-finite loss and a bad batch size", async () => {
  await using data = await writeFixtureDataset([40]);
  await using provider = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  await assert.rejects(
    evaluateLoss(provider, () => Promise.resolve(NaN), { batchSize: 2 }),
    /lossOf returned NaN for validation batch 0\.\.1/,
  );
  await assert.rejects(
    evaluateLoss(provider, () => Promise.resolve(1), { batchSize: 0 }),
    RangeError,
  );
});

Deno.test("a unigram model of the train split beats uniform on the validation split", async () => {
  // A real lossOf without the transformer: next-token cross-entropy of add-one-smoothed
  // train-split unigram frequencies. Uniform guessing scores ln(32000) = 10.37 nats.
  await using train = closing(await openBundledCorpus("train", { seqLen: 1024 }));
  const all = await train.getSamples({ start: 0, end: train.numSequences - 1 });
  const counts = new Float64Array(LLAMA2_VOCAB_SIZE).fill(1);
  for (const t of all.tokens) counts[t]++;
  const total = all.tokens.length + LLAMA2_VOCAB_SIZE;
  const lossOf = (b: TokenBatch) => {
    let sum = 0;
    let predictions = 0;
    for (let r = 0; r < b.count; r++) {
      for (let t = 1; t < b.seqLen; t++) {
        sum -= Math.log(counts[b.tokens[r * b.seqLen + t]] / total);
        predictions++;
      }
    }
    return Promise.resolve(sum / predictions);
  };
  await using val = closing(await openBundledCorpus("validation", { seqLen: 128 }));
  const report = await evaluateLoss(val, lossOf, { batchSize: 64 });
  assert.equal(report.sequences, val.numSequences);
  assert.ok(report.meanLoss > 5 && report.meanLoss < 9, `unigram loss ${report.meanLoss}`);
  assert.ok(report.meanLoss < Math.log(LLAMA2_VOCAB_SIZE) - 2);
});
