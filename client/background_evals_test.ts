import assert from "node:assert/strict";
import { join } from "node:path";
import { GpuRuntime } from "../shaders/mod.ts";
import { promptTokenizer } from "../data/mod.ts";
import {
  LogLikelihoodScorer,
  prepareTask,
  scoreDocuments,
  TASKS,
  TaskTally,
  windowFor,
} from "../eval/mod.ts";
import { CONFIG, LAYOUT, WEIGHTS } from "../eval/testing/reference.ts";
import { writeTaskFiles } from "../eval/testing/task_files.ts";
import { BackgroundEvals } from "./background_evals.ts";
import type { ClientEventName, ClientEvents, ClientLogger } from "./log.ts";

function recorder() {
  const events: { event: ClientEventName; fields: unknown }[] = [];
  const logger: ClientLogger = {
    log<K extends ClientEventName>(event: K, fields: ClientEvents[K]) {
      events.push({ event, fields });
    },
  };
  return { events, logger };
}

Deno.test("background evals: chunk by chunk, the same scores as one whole pass", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bg_evals_" });
  try {
    await writeTaskFiles(dir, 6);
    using rt = await GpuRuntime.create();
    const { events, logger } = recorder();
    const tasks = [TASKS.get("boolq")!, TASKS.get("arc_easy")!];
    using evals = new BackgroundEvals(
      { tasks, fewshot: 0, seed: 42, tasksDir: dir, microBatch: 4 },
      logger,
    );
    let reads = 0;
    const source = {
      rt,
      config: CONFIG,
      layout: LAYOUT,
      step: 7,
      readParams: () => {
        reads++;
        return Promise.resolve(WEIGHTS);
      },
    };
    let chunks = 0;
    while (events.filter((e) => e.event === "eval").length < 2) {
      await evals.runChunk(source);
      assert.ok(++chunks < 40, "a pass ends");
    }
    assert.equal(reads, 1, "one parameter read per pass");
    // boolq has 2 choices per document: 4 requests a chunk is 2 documents, so 3 chunks.
    const boolq = events.find((e) => e.event === "eval")!.fields as ClientEvents["eval"];
    assert.deepEqual([boolq.task, boolq.step, boolq.docs, boolq.chunks], ["boolq", 7, 6, 3]);
    assert.equal(boolq.acc_norm, null);

    // The same documents scored in one go.
    const settings = { fewshot: 0, seed: 42, window: CONFIG.maxPositionEmbeddings };
    const prepared = await Promise.all(
      tasks.map((t) => prepareTask(t, promptTokenizer("bytes"), settings, { tasksDir: dir })),
    );
    using scorer = new LogLikelihoodScorer(rt, {
      config: CONFIG,
      layout: LAYOUT,
      weights: WEIGHTS,
      seqLen: windowFor(prepared, CONFIG.maxPositionEmbeddings),
    });
    for (const p of prepared) {
      const tally = new TaskTally(p.task);
      await scoreDocuments(scorer, p, tally, { from: 0, to: p.docs.length });
      const logged = events.find((e) =>
        e.event === "eval" && (e.fields as { task: string }).task === p.task.name
      )!
        .fields as ClientEvents["eval"];
      assert.equal(logged.acc, tally.summary().acc.value, p.task.name);
      assert.equal(logged.acc_norm, tally.summary().accNorm?.value ?? null, p.task.name);
    }
    assert.deepEqual(evals.metrics().map((m) => m.name), ["boolq_acc", "arc_easy_acc_norm"]);

    // The next chunk starts a new pass on fresh parameters.
    await evals.runChunk({ ...source, step: 8 });
    assert.equal(reads, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("background evals: unreadable task files turn evals off with one warning", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bg_evals_bad_" });
  try {
    await Deno.mkdir(join(dir, "piqa"));
    await Deno.writeTextFile(join(dir, "piqa", "validation.jsonl"), `{"goal": "g"}\n`);
    using rt = await GpuRuntime.create();
    const { events, logger } = recorder();
    using evals = new BackgroundEvals(
      { tasks: [TASKS.get("piqa")!], fewshot: 0, seed: 42, tasksDir: dir },
      logger,
    );
    const source = {
      rt,
      config: CONFIG,
      layout: LAYOUT,
      step: 1,
      readParams: () => Promise.resolve(WEIGHTS),
    };
    await evals.runChunk(source);
    await evals.runChunk(source);
    assert.equal(evals.enabled, false);
    assert.deepEqual(events.map((e) => e.event), ["eval_disabled"]);
    assert.match(
      (events[0].fields as { error: string }).error,
      /validation.jsonl" row 1: the row has no "sol1" field/,
    );
    assert.deepEqual(evals.metrics(), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
