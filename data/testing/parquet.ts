/**
 * Writes parquet files in Psyche's preprocessed format for tests and benchmarks, with npm
 * `hyparquet-writer` (MIT, by hyparquet's author): list columns in the 3-level layout pyarrow
 * writes (`optional group inputs (LIST) { repeated group list { optional int32 element } }`),
 * as in Psyche's own test file (`tests/resources/hermes3`, written by parquet-cpp-arrow).
 * Test-only; not exported from data/mod.ts.
 *
 * @module
 */
import { gzipSync } from "node:zlib";
import { parquetWriteBuffer } from "hyparquet-writer";

/** A column of lists: one list per row. */
export interface ListColumn {
  name: string;
  /** The rows; `null` for a null list. Use bigints with `INT64`. */
  rows: Array<Array<number | bigint | null> | null>;
  /** Physical type of the elements (default `INT32`; `sequence_lengths` defaults to `INT64`). */
  element?: "INT32" | "INT64" | "DOUBLE" | "BYTE_ARRAY";
}

/** A plain (not list) column. */
export interface ScalarColumn {
  name: string;
  rows: Array<number | string | null>;
  type: "INT32" | "BYTE_ARRAY";
}

/** Options of {@linkcode parquetBytes}. */
export interface ParquetWriteOptions {
  /** Rows per row group (default all rows in one). */
  rowGroupSize?: number;
  /** Compression (default `SNAPPY`, as pyarrow). */
  codec?: "SNAPPY" | "UNCOMPRESSED" | "GZIP";
}

/** The bytes of a parquet file with these columns. */
export function parquetBytes(
  columns: ReadonlyArray<ListColumn | ScalarColumn>,
  options: ParquetWriteOptions = {},
): Uint8Array {
  // deno-lint-ignore no-explicit-any
  const schema: any[] = [{
    name: "schema",
    num_children: columns.length,
    repetition_type: "REQUIRED",
  }];
  for (const c of columns) {
    if ("type" in c) {
      schema.push({
        name: c.name,
        type: c.type,
        repetition_type: "OPTIONAL",
        ...(c.type === "BYTE_ARRAY" ? { converted_type: "UTF8" } : {}),
      });
      continue;
    }
    const element = c.element ?? (c.name === "sequence_lengths" ? "INT64" : "INT32");
    schema.push(
      {
        name: c.name,
        num_children: 1,
        repetition_type: "OPTIONAL",
        converted_type: "LIST",
        logical_type: { type: "LIST" },
      },
      { name: "list", num_children: 1, repetition_type: "REPEATED" },
      {
        name: "element",
        type: element,
        repetition_type: "OPTIONAL",
        ...(element === "BYTE_ARRAY" ? { converted_type: "UTF8" } : {}),
      },
    );
  }
  const rows = columns[0]?.rows.length ?? 0;
  const buffer = parquetWriteBuffer({
    columnData: columns.map((c) => ({ name: c.name, data: c.rows })),
    schema,
    codec: options.codec ?? "SNAPPY",
    compressors: { GZIP: (input: Uint8Array) => new Uint8Array(gzipSync(input)) },
    rowGroupSize: options.rowGroupSize ?? Math.max(1, rows),
  });
  return new Uint8Array(buffer);
}

/** The rows of one Psyche-format file. */
export interface PreprocessedRows {
  inputs: number[][];
  labels?: number[][];
  position_ids?: number[][];
  sequence_lengths?: number[][];
}

/** The bytes of a Psyche-format file holding `rows` (`sequence_lengths` as INT64). */
export function preprocessedParquet(
  rows: PreprocessedRows,
  options: ParquetWriteOptions = {},
): Uint8Array {
  const columns: ListColumn[] = [{ name: "inputs", rows: rows.inputs }];
  if (rows.labels) columns.push({ name: "labels", rows: rows.labels });
  if (rows.position_ids) columns.push({ name: "position_ids", rows: rows.position_ids });
  if (rows.sequence_lengths) {
    columns.push({
      name: "sequence_lengths",
      rows: rows.sequence_lengths.map((r) => r.map(BigInt)),
    });
  }
  return parquetBytes(columns, options);
}
