/**
 * The columns of Psyche's preprocessed (finetuning) parquet files and their checks. Pure:
 * parquet metadata and decoded values in, checked arrays or a {@linkcode DataError} out;
 * the provider (data/preprocessed.ts) does the reads.
 *
 * One row is one sequence of the run's `max_seq_len` tokens (Psyche's `preprocessed.rs`, and
 * the files its `scripts/preprocess-finetuning-data.py` writes):
 *
 * | column             | parquet type          | each row                                           |
 * | ------------------ | --------------------- | -------------------------------------------------- |
 * | `inputs`           | list of int32 (int64) | `max_seq_len` token ids, each `< vocab`            |
 * | `labels`           | optional, same        | `max_seq_len` ids, each `< vocab` or -100 (masked) |
 * | `position_ids`     | optional, same        | `max_seq_len` positions, each `< max_seq_len`      |
 * | `sequence_lengths` | optional, list int64  | lengths (> 0) of the packed documents, sum `max_seq_len` |
 *
 * Other columns are ignored. A list is any parquet LIST (3-level, as pyarrow writes
 * `list`/`large_list`) or a legacy repeated field, of INT32 or INT64 with no logical type or
 * an integer one.
 *
 * @module
 */
import { type FileMetaData, parquetSchema, type SchemaTree } from "hyparquet";
import { DataError } from "./errors.ts";

/** The columns Psyche reads, in order. */
export const PREPROCESSED_COLUMNS = [
  "inputs",
  "labels",
  "position_ids",
  "sequence_lengths",
] as const;

/** One of {@linkcode PREPROCESSED_COLUMNS}. */
export type PreprocessedColumn = typeof PREPROCESSED_COLUMNS[number];

/** Label of a position that takes no part in the loss (PyTorch's `ignore_index`). */
export const IGNORED_LABEL = -100;

/**
 * Which of {@linkcode PREPROCESSED_COLUMNS} the file has, in that order (always `inputs`
 * first). Throws {@linkcode DataError} (key: the column) naming the file when `inputs` is
 * missing or a known column is not a list of integers.
 */
export function preprocessedColumns(file: string, metadata: FileMetaData): PreprocessedColumn[] {
  let tree: SchemaTree;
  try {
    tree = parquetSchema(metadata);
  } catch (cause) {
    throw new DataError(`${file}: unreadable parquet schema: ${(cause as Error).message}`, {
      file,
    }, { cause });
  }
  const byName = new Map(tree.children.map((c) => [c.element.name, c]));
  if (!byName.has("inputs")) {
    const found = [...byName.keys()].map((n) => JSON.stringify(n)).join(", ") || "none";
    throw new DataError(
      `${file}: no "inputs" column (a preprocessed dataset needs one list of token ids per ` +
        `row); the file has the columns ${found}`,
      { file, key: "inputs" },
    );
  }
  const present: PreprocessedColumn[] = [];
  for (const name of PREPROCESSED_COLUMNS) {
    const node = byName.get(name);
    if (node === undefined) continue;
    const problem = integerListProblem(node);
    if (problem !== null) {
      throw new DataError(
        `${file}: column "${name}" must be a list of integers (int32 or int64), found ${problem}`,
        { file, key: name },
      );
    }
    present.push(name);
  }
  return present;
}

/** `null` when `node` is a list of integers, else what it is instead. */
function integerListProblem(node: SchemaTree): string | null {
  let repeated = 0;
  let at = node;
  for (;;) {
    if (at.element.repetition_type === "REPEATED") repeated++;
    if (at.children.length !== 1) break;
    at = at.children[0];
  }
  if (at.children.length > 1) return `a group of ${at.children.length} fields`;
  const type = describeLeaf(at);
  if (repeated === 0) return `${type} (not a list)`;
  if (repeated > 1) return `a list of lists (${type} at depth ${repeated})`;
  return isIntegerLeaf(at) ? null : `a list of ${type}`;
}

function describeLeaf(leaf: SchemaTree): string {
  const e = leaf.element;
  const annotation = e.logical_type?.type ?? e.converted_type;
  return annotation === undefined ? `${e.type}` : `${e.type} (${annotation})`;
}

const INTEGER_CONVERTED = new Set([
  "INT_8",
  "INT_16",
  "INT_32",
  "INT_64",
  "UINT_8",
  "UINT_16",
  "UINT_32",
  "UINT_64",
]);

function isIntegerLeaf(leaf: SchemaTree): boolean {
  const e = leaf.element;
  if (e.type !== "INT32" && e.type !== "INT64") return false;
  if (e.logical_type !== undefined) return e.logical_type.type === "INTEGER";
  return e.converted_type === undefined || INTEGER_CONVERTED.has(e.converted_type);
}

/** Where decoded rows came from, for error messages. */
export interface RowSource {
  /** File path. */
  file: string;
  /** Row (in the file) of `values[0]`. */
  firstRow: number;
}

/** The checks of one column, against the run. */
export interface ColumnLimits {
  /** Tokens per row (the run's `max_seq_len`). */
  seqLen: number;
  /** When given, token ids and labels must be below it. */
  vocabSize?: number;
}

/**
 * Copies the `inputs` of `values.length` rows into `out` (`[rows, seqLen]`), checking each
 * row has exactly `seqLen` token ids, each an integer in `[0, vocabSize)` (or below 2^32).
 * Throws {@linkcode DataError} naming the file, row and position of the first bad value.
 */
export function decodeInputs(
  values: ArrayLike<unknown>,
  out: Uint32Array,
  source: RowSource,
  limits: ColumnLimits,
): void {
  const limit = limits.vocabSize ?? 0x1_0000_0000;
  decodeRows("inputs", values, source, limits.seqLen, (v, at, where) => {
    if (v < 0) throw badValue(where, v, "negative token id", "inputs");
    if (v >= limit) {
      throw badValue(where, v, `token id >= vocab size ${limit}`, "vocab_size");
    }
    out[at] = v;
  });
}

/**
 * Copies `labels` into `out` (`[rows, seqLen]`): each an integer in `[0, vocabSize)` or
 * {@linkcode IGNORED_LABEL}.
 */
export function decodeLabels(
  values: ArrayLike<unknown>,
  out: Int32Array,
  source: RowSource,
  limits: ColumnLimits,
): void {
  const limit = limits.vocabSize ?? 0x8000_0000;
  decodeRows("labels", values, source, limits.seqLen, (v, at, where) => {
    if (v !== IGNORED_LABEL && (v < 0 || v >= limit)) {
      const bound = limits.vocabSize === undefined ? "2^31" : `vocab size ${limit}`;
      throw badValue(where, v, `label outside [0, ${bound}) and not ${IGNORED_LABEL}`, "labels");
    }
    out[at] = v;
  });
}

/** Copies `position_ids` into `out` (`[rows, seqLen]`): each an integer in `[0, seqLen)`. */
export function decodePositionIds(
  values: ArrayLike<unknown>,
  out: Int32Array,
  source: RowSource,
  limits: ColumnLimits,
): void {
  decodeRows("position_ids", values, source, limits.seqLen, (v, at, where) => {
    if (v < 0 || v >= limits.seqLen) {
      throw badValue(
        where,
        v,
        `position outside [0, max_seq_len ${limits.seqLen})`,
        "position_ids",
      );
    }
    out[at] = v;
  });
}

/**
 * The `sequence_lengths` of each row: positive integers that add up to `seqLen` (the packed
 * documents fill the sequence, padding counted as one).
 */
export function decodeSequenceLengths(
  values: ArrayLike<unknown>,
  source: RowSource,
  limits: ColumnLimits,
): number[][] {
  const out: number[][] = [];
  decodeRows("sequence_lengths", values, source, null, (v, _at, where) => {
    if (v <= 0) throw badValue(where, v, "a document length must be > 0", "sequence_lengths");
    if (where.position === 0) out.push([]);
    out[out.length - 1].push(v);
  }, (row, where) => {
    const lengths = out[row] ?? [];
    const sum = lengths.reduce((a, b) => a + b, 0);
    if (sum !== limits.seqLen) {
      throw new DataError(
        `${where.file}: row ${where.row}, column "sequence_lengths": the lengths add up to ` +
          `${sum}, but the run's max_seq_len is ${limits.seqLen}`,
        { file: where.file, key: "sequence_lengths" },
      );
    }
  });
  return out;
}

interface Where {
  file: string;
  column: PreprocessedColumn;
  row: number;
  position: number;
}

/**
 * Walks `values` (one list per row), checking each is a list of `seqLen` (when not `null`)
 * integers, and hands each integer to `take` with its flat index `row · seqLen + position`.
 */
function decodeRows(
  column: PreprocessedColumn,
  values: ArrayLike<unknown>,
  source: RowSource,
  seqLen: number | null,
  take: (value: number, at: number, where: Where) => void,
  endRow?: (row: number, where: Where) => void,
): void {
  for (let r = 0; r < values.length; r++) {
    const list = values[r];
    const where: Where = { file: source.file, column, row: source.firstRow + r, position: 0 };
    if (list === null || list === undefined) {
      throw new DataError(`${source.file}: row ${where.row}, column "${column}" is null`, {
        file: source.file,
        key: column,
      });
    }
    const items = list as ArrayLike<unknown>;
    if (seqLen !== null && items.length !== seqLen) {
      throw new DataError(
        `${source.file}: row ${where.row}, column "${column}" has ${items.length} values, ` +
          `but the run's max_seq_len is ${seqLen}`,
        { file: source.file, key: "max_seq_len" },
      );
    }
    if (seqLen === null && items.length === 0) {
      throw new DataError(`${source.file}: row ${where.row}, column "${column}" is empty`, {
        file: source.file,
        key: column,
      });
    }
    for (let p = 0; p < items.length; p++) {
      where.position = p;
      const raw = items[p];
      let v: number;
      if (typeof raw === "number" && Number.isInteger(raw)) v = raw;
      else if (typeof raw === "bigint" && raw >= -(2n ** 53n) && raw <= 2n ** 53n) v = Number(raw);
      else throw badValue(where, raw, "not an integer", column);
      take(v, (seqLen ?? 0) * r + p, where);
    }
    endRow?.(r, where);
  }
}

function badValue(where: Where, value: unknown, what: string, key: string): DataError {
  const shown = value === null ? "null" : String(value);
  return new DataError(
    `${where.file}: row ${where.row}, column "${where.column}", position ${where.position}: ` +
      `${what} (${shown})`,
    { file: where.file, key },
  );
}
