/**
 * Finding and reading a task's published files on this machine: nothing is downloaded at run
 * time, so a task's dataset must already be in a folder, as one of
 *
 * 1. `<dir>/<task>/` (`evals/hellaswag/`), `<dir>` being `--tasks-dir`,
 * 2. `<dir>/<owner>/<name>/`, a plain mirror of the Hub dataset (`evals/Rowan/hellaswag/`),
 * 3. the Hugging Face cache as `huggingface-cli download --repo-type dataset` fills it:
 *    `<cache>/datasets--owner--name/snapshots/<refs/main>/`.
 *
 * Inside it, a task with a subset reads the subset's folder (`ARC-Easy/`), and a split's files
 * are the `.parquet`, `.jsonl` and `.json` (JSON lines) files whose name starts with the split
 * (`test-00000-of-00001.parquet`, `validation.jsonl`) or that sit in a folder named after it
 * (the Hub's converted `default/validation/0000.parquet`), read in path order.
 *
 * @module
 */
import { join, relative } from "node:path";
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from "hyparquet";
import { defaultHfCache } from "../model/mod.ts";
import { EvalDataError } from "./errors.ts";
import type { Row, Task } from "./tasks.ts";

/** Where task folders are looked for. */
export interface TaskFileOptions {
  /** The folder of task datasets (`--tasks-dir`). */
  readonly tasksDir?: string;
  /** The Hugging Face hub cache (default from `$HF_HUB_CACHE`, `$HF_HOME`, `$HOME`). */
  readonly hfCache?: string;
  /** Environment lookup (default `Deno.env.get`). */
  readonly env?: (name: string) => string | undefined;
}

const EXTENSIONS = [".parquet", ".jsonl", ".json"];

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return false;
    throw e;
  }
}

async function snapshotOf(cache: string, repo: string): Promise<string> {
  const root = join(cache, `datasets--${repo.split("/").join("--")}`);
  try {
    return join(root, "snapshots", (await Deno.readTextFile(join(root, "refs", "main"))).trim());
  } catch {
    return join(root, "snapshots", "<refs/main>");
  }
}

/** The folder of a task's dataset. Throws {@link EvalDataError} listing every place tried. */
export async function taskFolder(task: Task, options: TaskFileOptions = {}): Promise<string> {
  const env = options.env ?? ((name: string) => Deno.env.get(name));
  const candidates: string[] = [];
  const dir = options.tasksDir;
  if (dir) candidates.push(join(dir, task.name), join(dir, task.repo));
  const cache = options.hfCache ?? defaultHfCache(env);
  if (cache !== null) candidates.push(await snapshotOf(cache, task.repo));
  for (const folder of candidates) if (await isDirectory(folder)) return folder;
  throw new EvalDataError(
    `task "${task.name}" needs the dataset ${task.repo} on this machine; none of ` +
      `${candidates.map((c) => `"${c}"`).join(", ") || "(no folder: pass --tasks-dir)"} exists ` +
      `(download it once, e.g. huggingface-cli download --repo-type dataset ${task.repo})`,
  );
}

async function walk(dir: string, out: string[]): Promise<void> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) await walk(path, out);
    else if (entry.isFile || entry.isSymlink) out.push(path);
  }
}

/** Whether a file (its path under the dataset folder) belongs to `split`. */
export function inSplit(relativePath: string, split: string): boolean {
  const parts = relativePath.split(/[\\/]/);
  const name = parts[parts.length - 1];
  if (!EXTENSIONS.some((ext) => name.endsWith(ext))) return false;
  const stem = name.slice(0, name.lastIndexOf("."));
  const namesSplit = stem === split || stem.startsWith(`${split}-`) ||
    stem.startsWith(`${split}.`) ||
    stem.startsWith(`${split}_`);
  return namesSplit || parts.slice(0, -1).includes(split);
}

/**
 * The files of one split of a task's dataset, in path order. Throws {@link EvalDataError} when
 * there are none, naming the folder and the file names it looked for.
 */
export async function splitFiles(task: Task, folder: string, split: string): Promise<string[]> {
  let root = folder;
  if (task.subset !== undefined && await isDirectory(join(folder, task.subset))) {
    root = join(folder, task.subset);
  }
  const all: string[] = [];
  await walk(root, all);
  const files = all.filter((f) => inSplit(relative(root, f), split)).sort();
  if (files.length === 0) {
    throw new EvalDataError(
      `no "${split}" files for task "${task.name}" under "${root}" (looked for ` +
        `${split}*.parquet, ${split}*.jsonl or a "${split}/" folder)`,
    );
  }
  return files;
}

/** Every row of a parquet file, or of a JSON-lines file, as plain objects. */
export async function readRows(path: string): Promise<Row[]> {
  try {
    if (path.endsWith(".parquet")) {
      const file = await asyncBufferFromFile(path);
      await parquetMetadataAsync(file);
      return await parquetReadObjects({ file }) as Row[];
    }
    const lines = (await Deno.readTextFile(path)).split("\n");
    const rows: Row[] = [];
    lines.forEach((line, i) => {
      if (line.trim() === "") return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (e) {
        throw new EvalDataError(`"${path}" line ${i + 1} is not JSON: ${(e as Error).message}`);
      }
      if (value === null || typeof value !== "object" || Array.isArray(value)) {
        throw new EvalDataError(`"${path}" line ${i + 1} is not a JSON object`);
      }
      rows.push(value as Row);
    });
    return rows;
  } catch (e) {
    if (e instanceof EvalDataError) throw e;
    throw new EvalDataError(`cannot read "${path}": ${(e as Error).message}`, { cause: e });
  }
}

/** A split's documents: every row of every file, read by the task, errors naming file and row. */
export async function readSplit(
  task: Task,
  folder: string,
  split: string,
): Promise<ReturnType<Task["toDocument"]>[]> {
  const docs = [];
  for (const file of await splitFiles(task, folder, split)) {
    const rows = await readRows(file);
    for (let i = 0; i < rows.length; i++) {
      try {
        docs.push(task.toDocument(rows[i]));
      } catch (e) {
        if (!(e instanceof EvalDataError)) throw e;
        throw new EvalDataError(`"${file}" row ${i + 1}: ${e.message}`, { cause: e });
      }
    }
  }
  return docs;
}
