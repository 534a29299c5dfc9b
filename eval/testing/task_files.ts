/**
 * Small task datasets in the real published formats, for tests: ARC-Easy as the Hub's parquet
 * (`ARC-Easy/test-00000-of-00001.parquet`, a struct of choice lists), BoolQ as the Hub's parquet
 * (`data/validation-00000-of-00001.parquet`) and HellaSwag as JSON lines. The rows are made up,
 * seeded, so every test run writes the same files.
 *
 * @module
 */
import { join } from "node:path";
import { parquetWriteBuffer } from "hyparquet-writer";

const WORDS = ["rain", "stone", "river", "light", "bread", "wind", "salt", "glass", "seed", "iron"];

function word(i: number): string {
  return WORDS[((i * 7) + 3) % WORDS.length];
}

async function writeParquet(
  path: string,
  columns: { name: string; data: unknown[]; type?: string }[],
) {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  // deno-lint-ignore no-explicit-any
  await Deno.writeFile(path, new Uint8Array(parquetWriteBuffer({ columnData: columns as any })));
}

/** ARC-Easy rows: `count` questions with 3-4 labelled choices. */
export function arcRows(count: number, offset = 0): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, k) => {
    const i = k + offset;
    const n = 3 + (i % 2);
    const labels = ["A", "B", "C", "D"].slice(0, n);
    return {
      id: `q${i}`,
      question: `Which ${word(i)} is ${word(i + 1)}?`,
      choices: {
        text: labels.map((_, c) => `${word(i + c + 2)} ${word(i * c + 1)}`),
        label: labels,
      },
      answerKey: labels[i % n],
    };
  });
}

/** Writes a dataset folder under `dir` for arc_easy (parquet), boolq (parquet), hellaswag (jsonl). */
export async function writeTaskFiles(dir: string, count = 6): Promise<void> {
  for (const [split, offset] of [["test", 0], ["train", 100]] as const) {
    const rows = arcRows(count, offset);
    await writeParquet(join(dir, "allenai/ai2_arc/ARC-Easy", `${split}-00000-of-00001.parquet`), [
      { name: "id", data: rows.map((r) => r.id) },
      { name: "question", data: rows.map((r) => r.question) },
      { name: "choices", data: rows.map((r) => r.choices) },
      { name: "answerKey", data: rows.map((r) => r.answerKey) },
    ]);
  }
  for (const [split, offset] of [["validation", 0], ["train", 100]] as const) {
    const boolq = Array.from({ length: count }, (_, k) => {
      const i = k + offset;
      return {
        question: `is ${word(i)} ${word(i + 4)}`,
        answer: i % 3 === 0,
        passage: `The ${word(i)} was ${word(i + 4)} and ${word(i + 5)}.`,
      };
    });
    await writeParquet(join(dir, `google/boolq/data/${split}-00000-of-00001.parquet`), [
      { name: "question", data: boolq.map((r) => r.question) },
      { name: "answer", data: boolq.map((r) => r.answer) },
      { name: "passage", data: boolq.map((r) => r.passage) },
    ]);
    const hellaswag = Array.from({ length: count }, (_, k) => {
      const i = k + offset;
      return JSON.stringify({
        ind: i,
        activity_label: `Making ${word(i)}`,
        ctx_a: `A person holds ${word(i + 1)}.`,
        ctx_b: `they ${word(i + 2)}`,
        endings: [0, 1, 2, 3].map((e) => `${word(i + e)} the [title] ${word(i * e)}.`),
        label: String(i % 4),
      });
    });
    await Deno.mkdir(join(dir, "hellaswag"), { recursive: true });
    await Deno.writeTextFile(join(dir, "hellaswag", `${split}.jsonl`), hellaswag.join("\n") + "\n");
  }
}
