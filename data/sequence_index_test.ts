import assert from "node:assert/strict";
import { DataError } from "./errors.ts";
import { buildSequenceIndex, checkBatch, planReads } from "./sequence_index.ts";
import type { TokenFileLayout } from "./token_file.ts";

const file = (name: string, dataBytes: number, dataOffset = 0): TokenFileLayout => ({
  name,
  dataOffset,
  dataBytes,
  dtype: "u16",
});

Deno.test("files are cut into whole windows, numbered file by file", () => {
  // seqLen 4 => 8 bytes per sequence: 20 bytes -> 2 (tail dropped), 7 bytes -> 0, 16 -> 2.
  const index = buildSequenceIndex([file("a", 20), file("b", 6), file("c", 16, 128)], {
    seqLen: 4,
  });
  assert.equal(index.numSequences, 4);
  assert.deepEqual(Array.from(index.fileOf), [0, 0, 2, 2]);
  assert.deepEqual(Array.from(index.offsetOf), [0, 8, 128, 136]);
});

Deno.test("a seeded index holds the same sequences in a permuted order", () => {
  const files = [file("a", 800), file("b", 808)];
  const plain = buildSequenceIndex(files, { seqLen: 4 });
  const seed = new Uint8Array(32).fill(3);
  const shuffled = buildSequenceIndex(files, { seqLen: 4, shuffle: { kind: "Seeded", seed } });
  const key = (ix: typeof plain, i: number) => `${ix.fileOf[i]}:${ix.offsetOf[i]}`;
  const a = Array.from({ length: plain.numSequences }, (_, i) => key(plain, i));
  const b = Array.from({ length: shuffled.numSequences }, (_, i) => key(shuffled, i));
  assert.notDeepEqual(b, a);
  assert.deepEqual([...b].sort(), [...a].sort());
});

Deno.test("an empty dataset is an error naming the files and seq_len", () => {
  assert.throws(() => buildSequenceIndex([file("tiny.ds", 6)], { seqLen: 4 }), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.equal(e.key, "seq_len");
    assert.match(e.message, /Empty dataset: tiny\.ds hold no whole sequence of 4 tokens/);
    return true;
  });
  assert.throws(() => buildSequenceIndex([], { seqLen: 4 }), /no files/);
  assert.throws(() => buildSequenceIndex([file("a", 8)], { seqLen: 0 }), /seq_len must be/);
});

Deno.test("checkBatch rejects inverted, fractional and out-of-range batches", () => {
  checkBatch({ start: 0, end: 9 }, 10);
  assert.throws(
    () => checkBatch({ start: 5, end: 10 }, 10),
    /5\.\.10 is out of range: the dataset has 10 sequences/,
  );
  assert.throws(() => checkBatch({ start: 3, end: 2 }, 10), /not an inclusive range/);
  assert.throws(() => checkBatch({ start: -1, end: 2 }, 10), DataError);
  assert.throws(() => checkBatch({ start: 0.5, end: 2 }, 10), DataError);
});

Deno.test("planReads merges back-to-back sequences of one file into one run", () => {
  const index = buildSequenceIndex([file("a", 24), file("b", 16)], { seqLen: 4 });
  assert.deepEqual(planReads(index, { start: 1, end: 4 }), [
    { file: 0, byteOffset: 8, byteLength: 16, firstRow: 0, rows: 2 },
    { file: 1, byteOffset: 0, byteLength: 16, firstRow: 2, rows: 2 },
  ]);
  const seed = new Uint8Array(32).fill(9);
  const shuffled = buildSequenceIndex([file("a", 800)], {
    seqLen: 4,
    shuffle: { kind: "Seeded", seed },
  });
  const runs = planReads(shuffled, { start: 0, end: 99 });
  assert.equal(runs.reduce((n, r) => n + r.rows, 0), 100);
  runs.forEach((r, i) => {
    assert.equal(r.byteLength, r.rows * 8);
    assert.equal(r.firstRow, runs.slice(0, i).reduce((n, p) => n + p.rows, 0));
  });
});
