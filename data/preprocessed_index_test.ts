import assert from "node:assert/strict";
import { DataError } from "./errors.ts";
import {
  blockOf,
  buildPreprocessedIndex,
  locateSample,
  selectPreprocessedFiles,
} from "./preprocessed_index.ts";

Deno.test("a folder named train reads all its parquet files; others only train* files", () => {
  const names = ["b.parquet", "train-1.parquet", "x.json", "A.PARQUET", "train-0.parquet"];
  assert.deepEqual(selectPreprocessedFiles("train", names), [
    "A.PARQUET",
    "b.parquet",
    "train-0.parquet",
    "train-1.parquet",
  ]);
  assert.deepEqual(selectPreprocessedFiles("Train-00000-of-00002", names).length, 4);
  assert.deepEqual(selectPreprocessedFiles("data", names), ["train-0.parquet", "train-1.parquet"]);
  assert.deepEqual(selectPreprocessedFiles("trains", ["a.parquet"]), []);
  // Sorted by the name without ".parquet" (Psyche sorts by file stem): "a" before "a-b".
  assert.deepEqual(selectPreprocessedFiles("train", ["a-b.parquet", "a.parquet"]), [
    "a.parquet",
    "a-b.parquet",
  ]);
});

Deno.test("samples are numbered file by file, row by row, or through the shuffle", () => {
  const files = [
    { name: "a", rowGroups: [3, 2] },
    { name: "b", rowGroups: [] },
    { name: "c", rowGroups: [4] },
  ];
  const index = buildPreprocessedIndex(files);
  assert.equal(index.numSequences, 9);
  const at = (i: number) => Object.values(locateSample(index, i)).join(":");
  assert.deepEqual(Array.from({ length: 9 }, (_, i) => at(i)), [
    "0:0",
    "0:1",
    "0:2",
    "0:3",
    "0:4",
    "2:0",
    "2:1",
    "2:2",
    "2:3",
  ]);
  const seed = new Uint8Array(32).fill(5);
  const shuffled = buildPreprocessedIndex(files, { shuffle: { kind: "Seeded", seed } });
  const seen = Array.from(
    { length: 9 },
    (_, i) => Object.values(locateSample(shuffled, i)).join(":"),
  );
  assert.deepEqual([...seen].sort(), Array.from({ length: 9 }, (_, i) => at(i)).sort());
  assert.throws(() => buildPreprocessedIndex([{ name: "e.parquet", rowGroups: [0] }]), (e) => {
    assert.ok(e instanceof DataError);
    assert.match(e.message, /Empty dataset: e\.parquet hold no rows/);
    return true;
  });
});

Deno.test("a block is a run of rows inside one row group", () => {
  const file = { name: "a", rowGroups: [5, 3] };
  const block = (row: number, size: number) => {
    const b = blockOf(file, 0, row, size);
    return `${b.start}..${b.end}`;
  };
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].map((r) => block(r, 2)), [
    "0..2",
    "0..2",
    "2..4",
    "2..4",
    "4..5",
    "5..7",
    "5..7",
    "7..8",
  ]);
  assert.equal(block(6, 100), "5..8");
  assert.throws(() => blockOf(file, 0, 8, 2), /row 8 is past its 8 rows/);
});
