import assert from "node:assert/strict";
import fc from "fast-check";
import { DataError } from "./errors.ts";
import { LocalDataProvider } from "./local.ts";
import { shufflePermutation } from "./shuffle.ts";
import {
  closing,
  expectedSequences,
  npyBytes,
  rows,
  tokenBytes,
  writeFixtureDataset,
} from "./testing/fixtures.ts";

Deno.test("local provider returns the windows of every file in sorted order", async () => {
  await using data = await writeFixtureDataset([70, 33, 64], { npy: [1] });
  await using provider = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 16, tokenSize: "TwoBytes" }),
  );
  const expected = expectedSequences(data, 16);
  assert.equal(provider.numSequences, 4 + 2 + 4);
  assert.equal(provider.seqLen, 16);
  const batch = await provider.getSamples({ start: 0, end: expected.length - 1 });
  assert.deepEqual(rows(batch), expected);
  assert.deepEqual(rows(await provider.getSamples({ start: 3, end: 3 })), [expected[3]]);
});

Deno.test("a seeded local provider serves sequence perm[i] as sample i", async () => {
  await using data = await writeFixtureDataset([100, 100], { width: 4 });
  const seed = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
  await using provider = closing(
    await LocalDataProvider.open(data.dir, {
      seqLen: 10,
      tokenSize: "FourBytes",
      shuffle: { kind: "Seeded", seed },
    }),
  );
  const expected = expectedSequences(data, 10);
  const perm = shufflePermutation(expected.length, seed);
  const batch = await provider.getSamples({ start: 0, end: 19 });
  assert.deepEqual(rows(batch), Array.from(perm, (p) => expected[p]));
});

Deno.test("concurrent batches from one provider do not mix up reads", async () => {
  await using data = await writeFixtureDataset([4000]);
  await using provider = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  const expected = expectedSequences(data, 8);
  const batches = await Promise.all(
    Array.from({ length: 20 }, (_, i) => provider.getSamples({ start: i * 20, end: i * 20 + 19 })),
  );
  batches.forEach((b, i) => assert.deepEqual(rows(b), expected.slice(i * 20, i * 20 + 20)));
});

Deno.test("local provider errors name the folder, file, offset or key", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const opts = { seqLen: 4, tokenSize: "TwoBytes" as const };
    await t.step("missing folder", async () => {
      await assert.rejects(LocalDataProvider.open(`${dir}/nope`, opts), (e: unknown) => {
        assert.ok(e instanceof DataError);
        assert.match(e.message, /Cannot read data folder ".*\/nope"/);
        return true;
      });
    });
    await t.step("folder without token files", async () => {
      await Deno.writeTextFile(`${dir}/readme.txt`, "hi");
      await assert.rejects(LocalDataProvider.open(dir, opts), /has no \.ds, \.bin or \.npy files/);
    });
    await t.step("empty dataset", async () => {
      await Deno.writeFile(`${dir}/a.ds`, tokenBytes([1, 2, 3], 2));
      await assert.rejects(LocalDataProvider.open(dir, opts), /Empty dataset: .*a\.ds/);
    });
    await t.step("truncated file", async () => {
      await Deno.writeFile(`${dir}/b.ds`, new Uint8Array(17));
      await assert.rejects(LocalDataProvider.open(dir, opts), (e: unknown) => {
        assert.ok(e instanceof DataError);
        assert.match(e.file!, /b\.ds$/);
        assert.equal(e.offset, 16);
        return true;
      });
      await Deno.remove(`${dir}/b.ds`);
    });
    await t.step("npy dtype mismatch", async () => {
      await Deno.writeFile(`${dir}/c.npy`, npyBytes([1, 2, 3, 4], "<u4"));
      await assert.rejects(LocalDataProvider.open(dir, opts), /c\.npy: .npy dtype u32 .*TwoBytes/);
      await Deno.remove(`${dir}/c.npy`);
    });
    await t.step("token outside the vocabulary, and batch out of range", async () => {
      await Deno.writeFile(`${dir}/a.ds`, tokenBytes([1, 2, 3, 4, 5, 6, 700, 8], 2));
      await using p = closing(await LocalDataProvider.open(dir, { ...opts, vocabSize: 512 }));
      assert.deepEqual(rows(await p.getSamples({ start: 0, end: 0 })), [[1, 2, 3, 4]]);
      await assert.rejects(p.getSamples({ start: 1, end: 1 }), (e: unknown) => {
        assert.ok(e instanceof DataError);
        assert.match(e.message, /a\.ds: token id >= vocab size 512 \(700\) at byte offset 12/);
        return true;
      });
      await assert.rejects(p.getSamples({ start: 1, end: 2 }), /out of range: the dataset has 2/);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a file that shrinks after opening gives a short-read error, not a short batch", async () => {
  await using data = await writeFixtureDataset([64]);
  await using p = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  await Deno.truncate(`${data.dir}/000.ds`, 100);
  assert.equal((await p.getSamples({ start: 0, end: 5 })).count, 6);
  await assert.rejects(p.getSamples({ start: 5, end: 7 }), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.match(e.message, /000\.ds: short read at byte offset 80: expected 48 bytes, got 20/);
    assert.equal(e.offset, 100);
    return true;
  });
});

Deno.test("any file sizes, seq_len and batch give the independently cut sequences", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 4 }),
      fc.integer({ min: 1, max: 17 }),
      fc.nat(),
      fc.nat(),
      async (counts, seqLen, a, b) => {
        await using data = await writeFixtureDataset(counts);
        const expected = expectedSequences(data, seqLen);
        if (expected.length === 0) {
          await assert.rejects(
            LocalDataProvider.open(data.dir, { seqLen, tokenSize: "TwoBytes" }),
            DataError,
          );
          return;
        }
        await using p = closing(
          await LocalDataProvider.open(data.dir, { seqLen, tokenSize: "TwoBytes" }),
        );
        const start = Math.min(a, b) % expected.length;
        const end = start + (Math.max(a, b) % (expected.length - start));
        assert.deepEqual(rows(await p.getSamples({ start, end })), expected.slice(start, end + 1));
      },
    ),
    { numRuns: 40 },
  );
});
