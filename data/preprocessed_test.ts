import assert from "node:assert/strict";
import { join } from "node:path";
import { parquetMetadata } from "hyparquet";
import { DataError } from "./errors.ts";
import { PreprocessedDataProvider, type PreprocessedOptions } from "./preprocessed.ts";
import { closing, rows } from "./testing/fixtures.ts";
import {
  type ListColumn,
  parquetBytes,
  preprocessedParquet,
  type PreprocessedRows,
  type ScalarColumn,
} from "./testing/parquet.ts";

const SEQ = 8;
const VOCAB = 32000;
const options: PreprocessedOptions = { seqLen: SEQ, vocabSize: VOCAB };

/** Row `r` of file `f`: 8 recognisable token ids. */
const row = (f: number, r: number) => Array.from({ length: SEQ }, (_, p) => f * 1000 + r * 10 + p);

/** A packed row: two documents of 5 and 3 tokens, the first's prompt masked. */
function packed(f: number, r: number): Required<PreprocessedRows> {
  const inputs = [row(f, r)];
  return {
    inputs,
    labels: [inputs[0].map((t, p) => p < 2 ? -100 : t)],
    position_ids: [[0, 1, 2, 3, 4, 0, 1, 2]],
    sequence_lengths: [[5, 3]],
  };
}

async function tempDir(name = "data"): Promise<{ dir: string } & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "psyche-parquet-" });
  const dir = join(root, name);
  await Deno.mkdir(dir);
  return { dir, [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }) };
}

/** Writes files of `counts[f]` rows (row groups of 3) named `train-0000f-of-...`. */
async function writeDataset(dir: string, counts: number[]): Promise<number[][]> {
  const expected: number[][] = [];
  for (let f = 0; f < counts.length; f++) {
    const inputs = Array.from({ length: counts[f] }, (_, r) => row(f, r));
    const name = `train-${String(f).padStart(5, "0")}-of-${String(counts.length).padStart(5, "0")}`;
    await Deno.writeFile(
      join(dir, `${name}.parquet`),
      preprocessedParquet({ inputs }, { rowGroupSize: 3 }),
    );
    expected.push(...inputs);
  }
  return expected;
}

async function rejectsWith(p: Promise<unknown>, message: RegExp, key?: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof DataError, String(e));
    assert.match(e.message, message);
    if (key !== undefined) assert.equal(e.key, key);
    return true;
  });
}

Deno.test("reads the exact tokens of every row of several files, in any batch", async () => {
  await using tmp = await tempDir();
  const expected = await writeDataset(tmp.dir, [7, 5, 4]);
  await using data = closing(await PreprocessedDataProvider.open(tmp.dir, options));
  assert.equal(data.numSequences, 16);
  assert.equal(data.seqLen, SEQ);
  assert.deepEqual(data.columns, ["inputs"]);
  for (const size of [1, 3, 16]) {
    for (let start = 0; start < 16; start += size) {
      const end = Math.min(start + size, 16) - 1;
      const batch = await data.getSamples({ start, end });
      assert.equal(batch.count, end - start + 1);
      assert.deepEqual(rows(batch), expected.slice(start, end + 1), `batch ${start}..${end}`);
    }
  }
  await rejectsWith(data.getSamples({ start: 15, end: 16 }), /out of range/, "batch");
});

Deno.test("rows are read by index in any order, a block at a time", async () => {
  await using tmp = await tempDir();
  const expected = await writeDataset(tmp.dir, [20, 9]);
  // Blocks of 2 rows and a cache of 2: most reads decode a block anew.
  await using data = closing(
    await PreprocessedDataProvider.open(tmp.dir, { ...options, blockRows: 2, cachedBlocks: 2 }),
  );
  for (const i of [28, 0, 13, 27, 5, 19, 20, 3, 3, 28]) {
    assert.deepEqual(rows(await data.getSamples({ start: i, end: i })), [expected[i]]);
  }
  const concurrent = await Promise.all(
    [4, 9, 4, 22].map((i) => data.getSamples({ start: i, end: i + 3 })),
  );
  concurrent.forEach((b, k) => {
    const i = [4, 9, 4, 22][k];
    assert.deepEqual(rows(b), expected.slice(i, i + 4));
  });
});

Deno.test("a row group is read without the others: a broken one fails only its own rows", async () => {
  await using tmp = await tempDir();
  const inputs = Array.from({ length: 9 }, (_, r) => row(0, r));
  const bytes = preprocessedParquet({ inputs }, { rowGroupSize: 3 });
  // Overwrite the first data page header of row group 1 (rows 3..5).
  const group = parquetMetadata(bytes.buffer as ArrayBuffer).row_groups[1];
  const at = Number(group.columns[0].meta_data!.data_page_offset);
  bytes.fill(0xff, at, at + 16);
  const path = join(tmp.dir, "train.parquet");
  await Deno.writeFile(path, bytes);
  await using data = closing(await PreprocessedDataProvider.openFiles([path], options));
  assert.deepEqual(rows(await data.getSamples({ start: 6, end: 8 })), inputs.slice(6, 9));
  assert.deepEqual(rows(await data.getSamples({ start: 0, end: 2 })), inputs.slice(0, 3));
  await rejectsWith(
    data.getSamples({ start: 4, end: 4 }),
    /train\.parquet: cannot read rows 3\.\.5: /,
  );
});

Deno.test("labels, position ids and sequence lengths are read with the inputs", async () => {
  await using tmp = await tempDir();
  const path = join(tmp.dir, "train.parquet");
  const a = packed(0, 0);
  const b = packed(0, 1);
  await Deno.writeFile(
    path,
    preprocessedParquet({
      inputs: [...a.inputs, ...b.inputs],
      labels: [...a.labels, ...b.labels],
      position_ids: [...a.position_ids, ...b.position_ids],
      sequence_lengths: [[5, 3], [8]],
    }),
  );
  await using data = closing(await PreprocessedDataProvider.openFiles([path], options));
  assert.deepEqual(data.columns, ["inputs", "labels", "position_ids", "sequence_lengths"]);
  const batch = await data.getPreprocessedSamples({ start: 0, end: 1 });
  assert.deepEqual(rows(batch), [row(0, 0), row(0, 1)]);
  assert.deepEqual([...batch.labels!], [...a.labels[0], ...b.labels[0]]);
  assert.deepEqual([...batch.positionIds!], [...a.position_ids[0], ...b.position_ids[0]]);
  assert.deepEqual(batch.sequenceLengths, [[5, 3], [8]]);
  // getSamples serves them too (the trainer trains with them).
  const served = await data.getSamples({ start: 1, end: 1 });
  assert.deepEqual(Object.keys(served), [
    "count",
    "seqLen",
    "tokens",
    "labels",
    "positionIds",
    "sequenceLengths",
  ]);
  assert.deepEqual([...served.labels!], b.labels[0]);
  assert.deepEqual(served.sequenceLengths, [[8]]);
});

Deno.test("a seeded shuffle serves the same rows permuted, the same on every open", async () => {
  await using tmp = await tempDir();
  const expected = await writeDataset(tmp.dir, [6, 6]);
  const seed = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
  const open = () =>
    PreprocessedDataProvider.open(tmp.dir, { ...options, shuffle: { kind: "Seeded", seed } });
  await using a = closing(await open());
  await using b = closing(await open());
  const x = rows(await a.getSamples({ start: 0, end: 11 }));
  assert.deepEqual(x, rows(await b.getSamples({ start: 0, end: 11 })));
  assert.notDeepEqual(x, expected);
  assert.deepEqual([...x].sort(), [...expected].sort());
});

Deno.test("gzip-compressed and uncompressed files read too", async () => {
  await using tmp = await tempDir("train");
  const inputs = [row(1, 0), row(1, 1)];
  // A folder named "train" reads every .parquet file in it, whatever its name.
  await Deno.writeFile(
    join(tmp.dir, "a.parquet"),
    preprocessedParquet({ inputs }, { codec: "GZIP" }),
  );
  await Deno.writeFile(
    join(tmp.dir, "b.parquet"),
    preprocessedParquet({ inputs }, { codec: "UNCOMPRESSED" }),
  );
  await using data = closing(await PreprocessedDataProvider.open(tmp.dir, options));
  assert.deepEqual(rows(await data.getSamples({ start: 0, end: 3 })), [...inputs, ...inputs]);
});

Deno.test("only the train files of a folder are read", async () => {
  await using tmp = await tempDir("data");
  const one = preprocessedParquet({ inputs: [row(0, 0)] });
  const two = preprocessedParquet({ inputs: [row(2, 0), row(2, 1)] });
  await Deno.writeFile(join(tmp.dir, "test-00000.parquet"), one);
  await Deno.writeFile(join(tmp.dir, "train-00001.parquet"), two);
  await Deno.writeFile(join(tmp.dir, "train-00000.parquet"), one);
  await Deno.writeFile(join(tmp.dir, "train.json"), new Uint8Array(3));
  await using data = closing(await PreprocessedDataProvider.open(tmp.dir, options));
  assert.deepEqual(data.index.files.map((f) => f.name.split("/").pop()), [
    "train-00000.parquet",
    "train-00001.parquet",
  ]);
  assert.deepEqual(rows(await data.getSamples({ start: 0, end: 2 })), [
    row(0, 0),
    row(2, 0),
    row(2, 1),
  ]);
  await Deno.remove(join(tmp.dir, "train-00000.parquet"));
  await Deno.remove(join(tmp.dir, "train-00001.parquet"));
  await rejectsWith(
    PreprocessedDataProvider.open(tmp.dir, options),
    /has no training parquet files: .* found 1 \.parquet file of other names/,
  );
  await rejectsWith(
    PreprocessedDataProvider.open(join(tmp.dir, "missing"), options),
    /Cannot read data folder ".*missing"/,
  );
});

/** Writes one file of these columns and opens it; returns the provider or its error. */
async function openOne(
  dir: string,
  columns: ReadonlyArray<ListColumn | ScalarColumn>,
): Promise<PreprocessedDataProvider> {
  const path = join(dir, "train-bad.parquet");
  await Deno.writeFile(path, parquetBytes(columns));
  return await PreprocessedDataProvider.openFiles([path], options);
}

Deno.test("a file of the wrong schema is refused at open, naming the file and column", async () => {
  await using tmp = await tempDir();
  const cases: Array<[Array<ListColumn | ScalarColumn>, RegExp, string]> = [
    [
      [{ name: "text", type: "BYTE_ARRAY", rows: ["hello"] }, { name: "ids", rows: [row(0, 0)] }],
      /train-bad\.parquet: no "inputs" column .*; the file has the columns "text", "ids"/,
      "inputs",
    ],
    [
      [{ name: "inputs", element: "DOUBLE", rows: [[1.5, 2]] }],
      /train-bad\.parquet: column "inputs" must be a list of integers \(int32 or int64\), found a list of DOUBLE/,
      "inputs",
    ],
    [
      [{ name: "inputs", element: "BYTE_ARRAY", rows: [null] }],
      /column "inputs" must be a list of integers .*found a list of BYTE_ARRAY \(UTF8\)/,
      "inputs",
    ],
    [
      [{ name: "inputs", type: "INT32", rows: [5] }],
      /column "inputs" must be a list of integers .*found INT32 \(not a list\)/,
      "inputs",
    ],
    [
      [{ name: "inputs", rows: [row(0, 0)] }, { name: "labels", element: "DOUBLE", rows: [[1]] }],
      /column "labels" must be a list of integers .*found a list of DOUBLE/,
      "labels",
    ],
  ];
  for (const [columns, message, key] of cases) {
    await rejectsWith(openOne(tmp.dir, columns), message, key);
  }
});

Deno.test("files that differ in columns, are not parquet, or are truncated are refused", async () => {
  await using tmp = await tempDir();
  const a = join(tmp.dir, "train-0.parquet");
  const b = join(tmp.dir, "train-1.parquet");
  await Deno.writeFile(a, preprocessedParquet({ inputs: [row(0, 0)] }));
  await Deno.writeFile(b, preprocessedParquet(packed(0, 0)));
  await rejectsWith(
    PreprocessedDataProvider.openFiles([a, b], options),
    /train-1\.parquet has the columns inputs, labels, position_ids, sequence_lengths, but .*train-0\.parquet has inputs; every file/,
  );
  await Deno.writeFile(b, new TextEncoder().encode("inputs,labels\n1,2\n"));
  await rejectsWith(
    PreprocessedDataProvider.openFiles([a, b], options),
    /train-1\.parquet: not a readable parquet file: /,
  );
  const whole = preprocessedParquet({ inputs: [row(0, 0)] });
  await Deno.writeFile(b, whole.subarray(0, whole.length - 30));
  await rejectsWith(
    PreprocessedDataProvider.openFiles([a, b], options),
    /train-1\.parquet: not a readable parquet file: /,
  );
  // A file cut inside its data still has its footer's byte offsets: the read runs short.
  await Deno.writeFile(b, whole);
  const data = await PreprocessedDataProvider.openFiles([b], options);
  await Deno.truncate(b, 20);
  await rejectsWith(
    data.getSamples({ start: 0, end: 0 }),
    /train-1\.parquet: short read at byte offset \d+: expected \d+ bytes, got \d+; the file looks truncated/,
  );
  await data.close();
});

Deno.test("a bad row is an error naming the file, row, column and value", async () => {
  await using tmp = await tempDir();
  const good = (r: number) => row(0, r);
  const cases: Array<[PreprocessedRows | ListColumn[], number, RegExp, string]> = [
    [
      { inputs: [good(0), good(1).slice(0, 5)] },
      1,
      /train-bad\.parquet: row 1, column "inputs" has 5 values, but the run's max_seq_len is 8/,
      "max_seq_len",
    ],
    [
      { inputs: [good(0), [...good(1).slice(0, 7), 32000]] },
      1,
      /row 1, column "inputs", position 7: token id >= vocab size 32000 \(32000\)/,
      "vocab_size",
    ],
    [
      { inputs: [[-3, ...good(0).slice(1)]] },
      0,
      /row 0, column "inputs", position 0: negative token id \(-3\)/,
      "inputs",
    ],
    [[{ name: "inputs", rows: [good(0), null] }], 1, /row 1, column "inputs" is null/, "inputs"],
    [
      [{ name: "inputs", rows: [[1, 2, null, 4, 5, 6, 7, 8]] }],
      0,
      /row 0, column "inputs", position 2: not an integer \(null\)/,
      "inputs",
    ],
    [
      [{
        name: "inputs",
        element: "INT64",
        rows: [good(0).map((t, p) => p === 3 ? 2n ** 40n : BigInt(t))],
      }],
      0,
      /row 0, column "inputs", position 3: token id >= vocab size 32000 \(1099511627776\)/,
      "vocab_size",
    ],
  ];
  for (const [content, bad, message, key] of cases) {
    const columns = Array.isArray(content) ? content : [{ name: "inputs", rows: content.inputs }];
    await using data = closing(await openOne(tmp.dir, columns));
    await rejectsWith(data.getSamples({ start: bad, end: bad }), message, key);
  }
});

Deno.test("bad labels, position ids and sequence lengths are errors when read", async () => {
  await using tmp = await tempDir();
  const cases: Array<[Partial<PreprocessedRows>, RegExp, string]> = [
    [
      { labels: [[...packed(0, 0).labels[0].slice(0, 7), 32000]] },
      /row 0, column "labels", position 7: label outside \[0, vocab size 32000\) and not -100 \(32000\)/,
      "labels",
    ],
    [
      { labels: [[-1, ...row(0, 0).slice(1)]] },
      /column "labels", position 0: label outside/,
      "labels",
    ],
    [
      { position_ids: [[0, 1, 2, 3, 4, 5, 6, 8]] },
      /column "position_ids", position 7: position outside \[0, max_seq_len 8\) \(8\)/,
      "position_ids",
    ],
    [
      { sequence_lengths: [[5, 2]] },
      /row 0, column "sequence_lengths": the lengths add up to 7, but the run's max_seq_len is 8/,
      "sequence_lengths",
    ],
    [
      { sequence_lengths: [[8, 0]] },
      /column "sequence_lengths", position 1: a document length must be > 0 \(0\)/,
      "sequence_lengths",
    ],
  ];
  for (const [change, message, key] of cases) {
    const path = join(tmp.dir, "train-extras.parquet");
    await Deno.writeFile(path, preprocessedParquet({ ...packed(0, 0), ...change }));
    await using data = closing(await PreprocessedDataProvider.openFiles([path], options));
    // The trainer trains with these columns, so serving the inputs alone fails too.
    await rejectsWith(data.getSamples({ start: 0, end: 0 }), message, key);
    await rejectsWith(data.getPreprocessedSamples({ start: 0, end: 0 }), message, key);
  }
});
