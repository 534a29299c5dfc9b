/**
 * The compliance checks every DataProvider must pass (local, HTTP, TCP): the same
 * sequences as an independent computation from the raw tokens, exact batch shapes,
 * and a clear DataError for out-of-range batches. Test-only.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DataError } from "../errors.ts";
import type { DataProvider } from "../provider.ts";
import { shufflePermutation } from "../shuffle.ts";
import { expectedSequences, type FixtureDataset, rows } from "./fixtures.ts";
import type { Shuffle } from "../../common/mod.ts";

/**
 * Checks `provider` serves `data` cut into `seqLen` windows, shuffled by `shuffle`.
 * Every sequence is compared, in batches of several sizes.
 */
export async function checkProviderCompliance(
  provider: DataProvider,
  data: FixtureDataset,
  seqLen: number,
  shuffle: Shuffle = { kind: "DontShuffle" },
): Promise<void> {
  const plain = expectedSequences(data, seqLen);
  const expected = shuffle.kind === "Seeded"
    ? Array.from(shufflePermutation(plain.length, shuffle.seed), (p) => plain[p])
    : plain;
  assert.equal(provider.seqLen, seqLen);
  assert.equal(provider.numSequences, expected.length);
  for (const size of [1, 3, expected.length]) {
    for (let start = 0; start < expected.length; start += size) {
      const end = Math.min(start + size, expected.length) - 1;
      const batch = await provider.getSamples({ start, end });
      assert.equal(batch.count, end - start + 1);
      assert.equal(batch.seqLen, seqLen);
      assert.equal(batch.tokens.length, batch.count * seqLen);
      assert.deepEqual(rows(batch), expected.slice(start, end + 1), `batch ${start}..${end}`);
    }
  }
  await assert.rejects(
    provider.getSamples({ start: expected.length - 1, end: expected.length }),
    (e: unknown) => e instanceof DataError && /out ?of ?range/i.test(e.message),
  );
}
