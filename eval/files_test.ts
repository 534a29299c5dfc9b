import assert from "node:assert/strict";
import { join } from "node:path";
import { EvalDataError } from "./errors.ts";
import { inSplit, readRows, readSplit, splitFiles, taskFolder } from "./files.ts";
import { TASKS } from "./tasks.ts";
import { arcRows, writeTaskFiles } from "./testing/task_files.ts";

const task = (name: string) => TASKS.get(name)!;

async function withTemp(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "eval_files_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("split files: by name prefix or by folder, parquet and JSON lines only", () => {
  assert.ok(inSplit("test-00000-of-00001.parquet", "test"));
  assert.ok(inSplit("validation.jsonl", "validation"));
  assert.ok(inSplit("default/validation/0000.parquet", "validation"));
  assert.ok(!inSplit("testing-00000.parquet", "test"));
  assert.ok(!inSplit("train-00000-of-00001.parquet", "test"));
  assert.ok(!inSplit("test.csv", "test"));
});

Deno.test("task files are found in a mirror, a task folder or the HF cache, and read exactly", async () => {
  await withTemp(async (dir) => {
    await writeTaskFiles(join(dir, "evals"), 5);
    const arc = task("arc_easy");
    const folder = await taskFolder(arc, {
      tasksDir: join(dir, "evals"),
      hfCache: join(dir, "none"),
    });
    assert.equal(folder, join(dir, "evals/allenai/ai2_arc"));
    const docs = await readSplit(arc, folder, "test");
    const rows = arcRows(5);
    assert.equal(docs.length, 5);
    assert.equal(docs[2].context, `Question: ${rows[2].question}\nAnswer:`);
    assert.deepEqual(docs[2].choices, (rows[2].choices as { text: string[] }).text);
    assert.equal((await readSplit(arc, folder, "train")).length, 5);
    // The parquet struct column comes back as {text, label}.
    const raw = await readRows(join(folder, "ARC-Easy/test-00000-of-00001.parquet"));
    assert.deepEqual(raw[0].choices, rows[0].choices);

    const hs = task("hellaswag");
    const hsFolder = await taskFolder(hs, { tasksDir: join(dir, "evals") });
    assert.equal((await readSplit(hs, hsFolder, "validation"))[1].choices.length, 4);

    // The HF cache layout: datasets--owner--name/snapshots/<refs/main>.
    const snap = join(dir, "cache/datasets--google--boolq/snapshots/abc");
    await Deno.mkdir(join(dir, "cache/datasets--google--boolq/refs"), { recursive: true });
    await Deno.writeTextFile(join(dir, "cache/datasets--google--boolq/refs/main"), "abc\n");
    await Deno.mkdir(snap, { recursive: true });
    await Deno.rename(join(dir, "evals/google/boolq/data"), join(snap, "data"));
    await Deno.remove(join(dir, "evals/google"), { recursive: true });
    const bq = await taskFolder(task("boolq"), {
      tasksDir: join(dir, "evals"),
      hfCache: join(dir, "cache"),
    });
    assert.equal(bq, snap);
    assert.equal((await splitFiles(task("boolq"), bq, "validation")).length, 1);
  });
});

Deno.test("missing and malformed task files are named in the error", async () => {
  await withTemp(async (dir) => {
    await assert.rejects(
      taskFolder(task("piqa"), { tasksDir: dir, hfCache: join(dir, "cache") }),
      (e: Error) =>
        e instanceof EvalDataError && e.message.includes(`"${join(dir, "piqa")}"`) &&
        e.message.includes("datasets--ybisk--piqa") &&
        e.message.includes("huggingface-cli download"),
    );
    await Deno.mkdir(join(dir, "piqa"));
    await assert.rejects(
      splitFiles(task("piqa"), join(dir, "piqa"), "validation"),
      /no "validation" files for task "piqa"/,
    );
    await Deno.writeTextFile(
      join(dir, "piqa/validation.jsonl"),
      `{"goal":"g","sol1":"a","sol2":"b","label":0}\n{"goal":"g","sol1":"a","label":1}\n`,
    );
    await assert.rejects(
      readSplit(task("piqa"), join(dir, "piqa"), "validation"),
      /validation.jsonl" row 2: the row has no "sol2" field/,
    );
    await Deno.writeTextFile(join(dir, "piqa/validation.jsonl"), `{"goal":"g"}\nnot json\n`);
    await assert.rejects(readRows(join(dir, "piqa/validation.jsonl")), /line 2 is not JSON/);
    await Deno.writeTextFile(join(dir, "piqa/validation-0.parquet"), "not a parquet file");
    await assert.rejects(
      readRows(join(dir, "piqa/validation-0.parquet")),
      /cannot read ".*validation-0.parquet"/,
    );
  });
});
