import assert from "node:assert/strict";
import { parquetMetadata } from "hyparquet";
import { DataError } from "./errors.ts";
import {
  decodeInputs,
  decodeLabels,
  decodeSequenceLengths,
  preprocessedColumns,
} from "./parquet_columns.ts";
import { parquetBytes, preprocessedParquet } from "./testing/parquet.ts";

const source = { file: "a.parquet", firstRow: 10 };
const limits = { seqLen: 3, vocabSize: 100 };

function fails(f: () => unknown, message: RegExp, key: string): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof DataError, String(e));
    assert.match(e.message, message);
    assert.equal(e.key, key);
    assert.equal(e.file, "a.parquet");
    return true;
  });
}

Deno.test("the known columns a file has are found in Psyche's order, other columns ignored", () => {
  const bytes = parquetBytes([
    { name: "sequence_lengths", rows: [[3n]] },
    { name: "extra", type: "BYTE_ARRAY", rows: ["x"] },
    { name: "inputs", element: "INT64", rows: [[1n, 2n, 3n]] },
  ]);
  const metadata = parquetMetadata(bytes.buffer as ArrayBuffer);
  assert.deepEqual(preprocessedColumns("a.parquet", metadata), ["inputs", "sequence_lengths"]);
  const full = parquetMetadata(
    preprocessedParquet({
      inputs: [[1, 2, 3]],
      labels: [[1, 2, 3]],
      position_ids: [[0, 1, 2]],
      sequence_lengths: [[3]],
    }).buffer as ArrayBuffer,
  );
  assert.deepEqual(preprocessedColumns("a.parquet", full), [
    "inputs",
    "labels",
    "position_ids",
    "sequence_lengths",
  ]);
});

Deno.test("inputs are copied row by row; rows numbered from the block's first row in errors", () => {
  const out = new Uint32Array(6);
  decodeInputs([[1, 2, 3], [4n, 5n, 99n]], out, source, limits);
  assert.deepEqual([...out], [1, 2, 3, 4, 5, 99]);
  fails(
    () => decodeInputs([[1, 2, 3], [4, 5]], out, source, limits),
    /^a\.parquet: row 11, column "inputs" has 2 values, but the run's max_seq_len is 3$/,
    "max_seq_len",
  );
  fails(
    () => decodeInputs([[1, 2, 100]], out, source, limits),
    /^a\.parquet: row 10, column "inputs", position 2: token id >= vocab size 100 \(100\)$/,
    "vocab_size",
  );
  fails(
    () => decodeInputs([[1, 2.5, 3]], out, source, limits),
    /position 1: not an integer \(2\.5\)$/,
    "inputs",
  );
  // Without a vocabulary, ids up to 2^32 - 1 pass.
  decodeInputs([[0, 2 ** 32 - 1, 7]], out, source, { seqLen: 3 });
  assert.equal(out[1], 2 ** 32 - 1);
});

Deno.test("labels may be -100; sequence lengths must fill the row", () => {
  const labels = new Int32Array(3);
  decodeLabels([[-100, 5, 99]], labels, source, limits);
  assert.deepEqual([...labels], [-100, 5, 99]);
  fails(() => decodeLabels([[-100, -2, 1]], labels, source, limits), /position 1: label/, "labels");
  assert.deepEqual(decodeSequenceLengths([[1n, 2n], [3n]], source, limits), [[1, 2], [3]]);
  fails(
    () => decodeSequenceLengths([[3n], []], source, limits),
    /row 11, column "sequence_lengths" is empty/,
    "sequence_lengths",
  );
  fails(
    () => decodeSequenceLengths([[1n, 1n]], source, limits),
    /row 10, column "sequence_lengths": the lengths add up to 2, but the run's max_seq_len is 3/,
    "sequence_lengths",
  );
});
