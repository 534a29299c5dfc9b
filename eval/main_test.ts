import assert from "node:assert/strict";
import { join } from "node:path";
import { writeModelDir } from "../model/mod.ts";
import { runEval } from "./main.ts";
import { prepareTask, type TaskScores } from "./run.ts";
import { scoreDocument, summarize } from "./scoring.ts";
import { TASKS } from "./tasks.ts";
import { promptTokenizer } from "../data/mod.ts";
import { CONFIG, LAYOUT, referenceLogLikelihood, WEIGHTS } from "./testing/reference.ts";
import { writeTaskFiles } from "./testing/task_files.ts";

async function withFixture(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "eval_main_" });
  try {
    await writeModelDir(join(dir, "model"), { config: CONFIG, layout: LAYOUT, weights: WEIGHTS });
    await writeTaskFiles(join(dir, "tasks"), 6);
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The scores the f64 reference gives the same requests. */
async function referenceScores(
  tasksDir: string,
  name: string,
  fewshot: number,
): Promise<{ acc: number; accNorm: number }> {
  const settings = { fewshot, seed: 42, window: CONFIG.maxPositionEmbeddings };
  const p = await prepareTask(TASKS.get(name)!, promptTokenizer("bytes"), settings, { tasksDir });
  const verdicts = p.docs.map((doc, d) => {
    const lls = doc.choices.map((_, c) => {
      const r = p.requests[p.firstRequest[d] + c];
      return referenceLogLikelihood(r.tokens, r.start);
    });
    return scoreDocument(lls, doc.choices, doc.answer);
  });
  return {
    acc: summarize(verdicts.map((v) => v.acc)).value,
    accNorm: summarize(verdicts.map((v) => v.accNorm)).value,
  };
}

Deno.test("deno task eval scores parquet and JSON-lines tasks as the f64 reference does", async () => {
  await withFixture(async (dir) => {
    const lines: string[] = [];
    let clock = 0;
    const results = await runEval(
      {
        model: join(dir, "model"),
        tasks: "arc_easy,boolq,hellaswag",
        tasksDir: join(dir, "tasks"),
        fewshot: 1,
        seed: 42,
        microBatch: 4,
        logs: "json",
      },
      { out: (l) => lines.push(l), now: () => (clock += 10) },
    );
    const byName = new Map<string, TaskScores>(results.map((r) => [r.task, r]));
    for (const name of ["arc_easy", "hellaswag"]) {
      const want = await referenceScores(join(dir, "tasks"), name, 1);
      assert.equal(byName.get(name)!.acc.value, want.acc, `${name} acc`);
      assert.equal(byName.get(name)!.accNorm!.value, want.accNorm, `${name} acc_norm`);
    }
    assert.equal(byName.get("boolq")!.accNorm, undefined, "boolq reports acc only");
    assert.equal(byName.get("boolq")!.docs, 6);
    const events = lines.map((l) => JSON.parse(l));
    assert.deepEqual(
      [...new Set(events.map((e) => e.event))],
      ["eval_start", "eval_progress", "eval_task", "eval_end"],
    );
    const start = events[0];
    assert.deepEqual(start.tasks, ["arc_easy", "boolq", "hellaswag"]);
    assert.equal(start.tokenizer, "bytes");
    const arc = events.find((e) => e.event === "eval_task" && e.task === "arc_easy");
    assert.equal(arc.acc, byName.get("arc_easy")!.acc.value);
    assert.ok(arc.docs_per_sec > 0);
  });
});

Deno.test("deno task eval: missing task files exit 1 naming them, bad flags exit 2", async () => {
  await withFixture(async (dir) => {
    const run = (...args: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "eval/main.ts", "--model", join(dir, "model"), ...args],
        stdout: "piped",
        stderr: "piped",
        env: { HF_HUB_CACHE: join(dir, "no-cache") },
      }).output();
    const missing = await run("--tasks", "piqa", "--tasks-dir", join(dir, "tasks"));
    assert.equal(missing.code, 1);
    assert.match(
      new TextDecoder().decode(missing.stderr),
      /task "piqa" needs the dataset ybisk\/piqa/,
    );
    const bad = await run("--tasks", "boolq", "--fewshot", "two");
    assert.equal(bad.code, 2);
    assert.match(
      new TextDecoder().decode(bad.stderr),
      /--fewshot must be a whole number of at least 0, got "two"/,
    );
    const ok = await run("--tasks", "boolq", "--tasks-dir", join(dir, "tasks"), "--limit", "3");
    assert.equal(ok.code, 0, new TextDecoder().decode(ok.stderr));
    assert.match(
      new TextDecoder().decode(ok.stdout),
      /boolq +acc \d+\.\d+% ± \d+\.\d+% +\(3 docs,/,
    );
  });
});

Deno.test("the deno task eval command of docs/using-the-model.md runs", async () => {
  const doc = await Deno.readTextFile(new URL("../docs/using-the-model.md", import.meta.url));
  const line = doc.split("\n").find((l) => l.startsWith("deno task eval "));
  assert.ok(line, "the page shows a deno task eval command");
  const args = line.split(/\s+/).slice(3);
  await withFixture(async (dir) => {
    // The page's checkpoint and task folder stand for a trained model and downloaded datasets.
    args[args.indexOf("--model") + 1] = join(dir, "model");
    args[args.indexOf("--tasks-dir") + 1] = join(dir, "tasks");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "eval/main.ts", ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const text = new TextDecoder().decode(out.stdout);
    for (const task of args[args.indexOf("--tasks") + 1].split(",")) {
      assert.match(text, new RegExp(`^${task} +acc `, "m"), text);
    }
  });
});
