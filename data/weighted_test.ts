import assert from "node:assert/strict";
import { DataError } from "./errors.ts";
import { LocalDataProvider } from "./local.ts";
import type { DataProvider, TokenBatch } from "./provider.ts";
import { checkBatch } from "./sequence_index.ts";
import { closing, expectedSequences, rows, writeFixtureDataset } from "./testing/fixtures.ts";
import { WeightedDataProvider } from "./weighted.ts";
import type { BatchId } from "../common/mod.ts";

/** Sequence `s` of dataset `d` is `[d·1000 + s, d·1000 + s + 1, ...]`; counts its reads. */
class MemoryProvider implements DataProvider {
  readonly seqLen: number;
  readonly numSequences: number;
  readonly reads: BatchId[] = [];
  closed = false;
  constructor(readonly id: number, numSequences: number, seqLen = 3) {
    this.numSequences = numSequences;
    this.seqLen = seqLen;
  }
  getSamples(batch: BatchId): Promise<TokenBatch> {
    checkBatch(batch, this.numSequences);
    this.reads.push(batch);
    const count = batch.end - batch.start + 1;
    const tokens = new Uint32Array(count * this.seqLen);
    for (let r = 0; r < count; r++) {
      for (let t = 0; t < this.seqLen; t++) {
        tokens[r * this.seqLen + t] = this.id * 1000 + batch.start + r + t;
      }
    }
    return Promise.resolve({ count, seqLen: this.seqLen, tokens });
  }
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

const seed = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);

Deno.test("each sample is the sequence the table names, read from its dataset", async () => {
  const sources = [new MemoryProvider(1, 7), new MemoryProvider(2, 20), new MemoryProvider(3, 4)];
  await using mix = closing(
    await WeightedDataProvider.create(
      sources.map((provider, i) => ({ provider, weight: [0.5, 0.3, 0.2][i] })),
      { shuffle: { kind: "Seeded", seed } },
    ),
  );
  assert.equal(mix.numSequences, 31);
  assert.equal(mix.seqLen, 3);
  const batch = await mix.getSamples({ start: 0, end: 30 });
  for (let i = 0; i < 31; i++) {
    const id = mix.index.datasetOf[i] + 1;
    const s = mix.index.sequenceOf[i];
    assert.deepEqual(rows(batch)[i], [id * 1000 + s, id * 1000 + s + 1, id * 1000 + s + 2]);
  }
  // Dataset 3 (4 sequences, weighted 0.2 of 31 ≈ 6) was used up and repeated, never read past
  // its end (MemoryProvider would have thrown).
  assert.ok(sources[2].reads.every((r) => r.end < 4));
  assert.ok(Array.from(mix.index.datasetOf).filter((d) => d === 2).length > 4);
  // Any sub-batch agrees with the whole.
  for (const [start, end] of [[0, 0], [5, 12], [30, 30]]) {
    assert.deepEqual(rows(await mix.getSamples({ start, end })), rows(batch).slice(start, end + 1));
  }
  await assert.rejects(mix.getSamples({ start: 30, end: 31 }), /out of range/);
  await mix.close();
  assert.ok(sources.every((s) => s.closed));
});

Deno.test("two clients opening the same mix get the same samples", async () => {
  await using a = await writeFixtureDataset([200, 96]);
  await using b = await writeFixtureDataset([130]);
  const open = async () => {
    const options = { seqLen: 8, tokenSize: "TwoBytes" as const, vocabSize: 32000 };
    return closing(
      await WeightedDataProvider.create([
        { provider: await LocalDataProvider.open(a.dir, options), weight: 2 },
        { provider: await LocalDataProvider.open(b.dir, options), weight: 1 },
      ], { shuffle: { kind: "Seeded", seed } }),
    );
  };
  await using first = await open();
  await using second = await open();
  // 25 + 12 sequences of 8 tokens in a, 16 in b.
  assert.equal(first.numSequences, 53);
  const all = { start: 0, end: 52 };
  const [x, y] = await Promise.all([first.getSamples(all), second.getSamples(all)]);
  assert.deepEqual(x.tokens, y.tokens);
  // And the tokens are the datasets' own sequences, as the table says.
  const plain = [expectedSequences(a, 8), expectedSequences(b, 8)];
  rows(x).forEach((row, i) => {
    assert.deepEqual(row, plain[first.index.datasetOf[i]][first.index.sequenceOf[i]]);
  });
});

Deno.test("a mix without weights weighs each dataset by its size: every sequence once", async () => {
  const sources = [new MemoryProvider(1, 5), new MemoryProvider(2, 15)];
  await using mix = closing(
    await WeightedDataProvider.create(sources.map((provider) => ({
      provider,
    }))),
  );
  const firsts = rows(await mix.getSamples({ start: 0, end: 19 })).map((r) => r[0]).sort();
  const expected = [
    ...Array.from({ length: 5 }, (_, s) => 1000 + s),
    ...Array.from({ length: 15 }, (_, s) => 2000 + s),
  ].sort();
  assert.deepEqual(firsts, expected);
});

Deno.test("a mix refuses datasets of different lengths or half-given weights, closing them", async () => {
  const cases: Array<[MemoryProvider[], Array<number | undefined>, RegExp]> = [
    [
      [new MemoryProvider(1, 4, 3), new MemoryProvider(2, 4, 5)],
      [1, 1],
      /b has sequences of 5 tokens, but a has 3; every dataset of a mix must have the run's max_seq_len/,
    ],
    [[new MemoryProvider(1, 4), new MemoryProvider(2, 4)], [1, undefined], /1 of the mix's 2/],
    [[new MemoryProvider(1, 4), new MemoryProvider(2, 4)], [1, 0], /Weight of dataset 1/],
  ];
  for (const [sources, weights, message] of cases) {
    await assert.rejects(
      WeightedDataProvider.create(
        sources.map((provider, i) => ({ provider, weight: weights[i], name: "ab"[i] })),
      ),
      (e: unknown) => e instanceof DataError && message.test(e.message),
    );
    assert.ok(sources.every((s) => s.closed));
  }
});
