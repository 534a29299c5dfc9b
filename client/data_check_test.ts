import assert from "node:assert/strict";
import { closing, writeFixtureDataset } from "../data/testing/fixtures.ts";
import { checkDataVocabulary, checkTokens, DataVocabularyError } from "./data_check.ts";
import { DataError, type DataProvider, LocalDataProvider, type TokenBatch } from "../data/mod.ts";

/** A provider of fixed rows (as a TCP data server would send them, unchecked). */
function rowsProvider(rows: number[][], fail?: Error): DataProvider {
  const seqLen = rows[0].length;
  return {
    seqLen,
    numSequences: rows.length,
    getSamples(batch): Promise<TokenBatch> {
      if (fail !== undefined) return Promise.reject(fail);
      const picked = rows.slice(batch.start, batch.end + 1);
      return Promise.resolve({
        count: picked.length,
        seqLen,
        tokens: Uint32Array.from(picked.flat()),
      });
    },
    close: () => Promise.resolve(),
  };
}

Deno.test("tokens below the vocabulary pass; the first one at or above it is named", async () => {
  await checkDataVocabulary(rowsProvider([[0, 511], [5, 6]]), 512);
  await assert.rejects(
    checkDataVocabulary(rowsProvider([[0, 1], [2, 512]]), 512, { model: "m" }),
    (e) =>
      e instanceof DataVocabularyError &&
      e.message ===
        "The model's vocabulary (vocab_size 512 (m)) cannot read the run's data: sequence 1 " +
          "holds token id 512 at position 1",
  );
});

Deno.test("only the first sequences are read", async () => {
  const rows = Array.from({ length: 20 }, (_, i) => [i === 19 ? 9999 : 1, 2]);
  await checkDataVocabulary(rowsProvider(rows), 512, { sequences: 16 });
  await assert.rejects(checkDataVocabulary(rowsProvider(rows), 512, { sequences: 20 }));
});

Deno.test("a provider's own vocab_size refusal becomes the same error; other failures pass through", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes", vocabSize: 100 }),
  );
  await assert.rejects(
    checkDataVocabulary(local, 100),
    (e) =>
      e instanceof DataVocabularyError && e.cause instanceof DataError &&
      /token id >= vocab size 100 \(\d+\) at byte offset \d+$/.test(e.message),
  );
  const timeout = new DataError("timed out", { retryable: true });
  await assert.rejects(
    checkDataVocabulary(rowsProvider([[1]], timeout), 512),
    (e) => e === timeout,
  );
});

Deno.test("a server that serves only the round's batch is left to the first batch's check", async () => {
  // The coordinator-hosted data server refuses sequences outside the round (key `batch`).
  const outOfRound = new DataError("rejected batch 0..15: NotInThisRound", { key: "batch" });
  await checkDataVocabulary(rowsProvider([[1, 2]], outOfRound), 512);
  // The trainer checks every batch it reads with checkTokens.
  checkTokens(Uint32Array.of(0, 511, 3, 4), 2, 512);
  assert.throws(
    () => checkTokens(Uint32Array.of(0, 1, 3, 512), 2, 512, "m"),
    (e) =>
      e instanceof DataVocabularyError &&
      /vocab_size 512 \(m\).*sequence 1 holds token id 512 at position 1$/.test(e.message),
  );
});
