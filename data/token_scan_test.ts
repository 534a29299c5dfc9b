import assert from "node:assert/strict";
import fc from "fast-check";
import { DataError } from "./errors.ts";
import { LocalDataProvider } from "./local.ts";
import { closing, writeFixtureDataset } from "./testing/fixtures.ts";
import type { TokenFileLayout } from "./token_file.ts";
import { largestToken, planScan, scanTokenFiles } from "./token_scan.ts";

const layout = (name: string, dataBytes: number, dataOffset = 0): TokenFileLayout => ({
  name,
  dataOffset,
  dataBytes,
  dtype: "u16",
});

Deno.test("planScan reads every token once when the data fits the budget", () => {
  const reads = planScan([layout("a", 10), layout("b", 6, 128)], {
    chunkBytes: 4,
    budgetBytes: 64,
  });
  assert.deepEqual(reads, [
    { file: 0, byteOffset: 0, byteLength: 4 },
    { file: 0, byteOffset: 4, byteLength: 4 },
    { file: 0, byteOffset: 8, byteLength: 2 },
    { file: 1, byteOffset: 128, byteLength: 4 },
    { file: 1, byteOffset: 132, byteLength: 2 },
  ]);
});

Deno.test("property: a plan stays inside files, aligned, in order, within budget", () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 6 }),
      fc.constantFrom(2, 4),
      fc.integer({ min: 2, max: 10 }),
      (tokenCounts, width, chunks) => {
        const files = tokenCounts.map((n, i): TokenFileLayout => ({
          name: `f${i}`,
          dataOffset: 16 * i,
          dataBytes: n * width,
          dtype: width === 2 ? "u16" : "u32",
        }));
        const chunk = 64;
        const budget = chunks * chunk;
        const reads = planScan(files, { chunkBytes: chunk, budgetBytes: budget });
        const total = files.reduce((s, f) => s + f.dataBytes, 0);
        const read = reads.reduce((s, r) => s + r.byteLength, 0);
        if (total <= budget) assert.equal(read, total);
        else assert.ok(read <= budget && reads.length === chunks);
        for (const r of reads) {
          const f = files[r.file];
          assert.ok(r.byteLength > 0 && r.byteLength % width === 0);
          assert.ok((r.byteOffset - f.dataOffset) % width === 0);
          assert.ok(r.byteOffset >= f.dataOffset);
          assert.ok(r.byteOffset + r.byteLength <= f.dataOffset + f.dataBytes);
        }
        // Reads come in data order, from the first token on.
        const first = files.findIndex((f) => f.dataBytes > 0);
        if (first >= 0) assert.equal(reads[0].byteOffset, files[first].dataOffset);
        for (let i = 1; i < reads.length; i++) {
          const [a, b] = [reads[i - 1], reads[i]];
          assert.ok(a.file < b.file || (a.file === b.file && a.byteOffset < b.byteOffset));
        }
      },
    ),
  );
});

Deno.test("largestToken finds the first maximum and refuses negative i32 tokens", () => {
  const u16 = new Uint8Array(new Uint16Array([3, 900, 7, 900]).buffer);
  assert.deepEqual(largestToken(u16, "u16", { file: "a", byteOffset: 0 }), {
    token: 900,
    index: 1,
  });
  const u32 = new Uint8Array(new Uint32Array([70000, 2 ** 32 - 1]).buffer);
  assert.deepEqual(largestToken(u32, "u32", { file: "a", byteOffset: 0 }), {
    token: 2 ** 32 - 1,
    index: 1,
  });
  assert.deepEqual(largestToken(new Uint8Array(0), "u16", { file: "a", byteOffset: 0 }), {
    token: -1,
    index: -1,
  });
  const i32 = new Uint8Array(new Int32Array([5, -2]).buffer);
  assert.throws(
    () => largestToken(i32, "i32", { file: "b.npy", byteOffset: 128 }),
    (e) =>
      e instanceof DataError && e.message === "b.npy: negative token id (-2) at byte offset 132",
  );
});

Deno.test("scanTokenFiles finds a dataset's largest token and where it is, whole or sampled", async () => {
  await using data = await writeFixtureDataset([300, 200], { npy: [1] });
  await using provider = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  const files = provider.index.files;
  const all = data.files.flatMap((f) => f.tokens);
  const max = Math.max(...all);
  const whole = await scanTokenFiles(files, { chunkBytes: 64 });
  assert.equal(whole.maxToken, max);
  assert.equal(whole.scannedBytes, whole.totalBytes);
  assert.equal(whole.totalBytes, 500 * 2);
  const holder = data.files.findIndex((f) => f.tokens.includes(max));
  assert.equal(whole.file, files[holder].name);
  const index = data.files[holder].tokens.indexOf(max);
  assert.equal(whole.byteOffset, files[holder].dataOffset + 2 * index);
  const sampled = await scanTokenFiles(files, { chunkBytes: 64, budgetBytes: 256 });
  assert.equal(sampled.scannedBytes, 256);
  assert.ok(sampled.maxToken <= max && sampled.maxToken > 0);
});
