import assert from "node:assert/strict";
import { join } from "node:path";
import { deleteOldSteps, stepFolders, stepsToDelete } from "./retention.ts";

Deno.test("step folders: only {run}-step{N} of this run, N a whole number", () => {
  const names = [
    "run-step1",
    "run-step20",
    "run-step007",
    "run-step",
    "run-step3.previous",
    ".run-step4.tmp-x",
    "run-interrupted",
    "run-x-step5",
    "other-step2",
  ];
  assert.deepEqual(stepFolders(names, "run"), [
    { name: "run-step1", step: 1 },
    { name: "run-step20", step: 20 },
  ]);
  // A run id with regex characters is a plain prefix.
  assert.deepEqual(stepFolders(["a.b-step2", "axb-step3"], "a.b"), [{
    name: "a.b-step2",
    step: 2,
  }]);
});

Deno.test("stepsToDelete keeps the newest N and every protected step", () => {
  const names = ["r-step2", "r-step10", "r-step4", "r-step8", "r-step6"];
  const pick = (keep: number, protect: number[] = []) =>
    stepsToDelete(names, "r", { keep, protect: new Set(protect) }).map((f) => f.step);
  assert.deepEqual(pick(3), [2, 4], "oldest first");
  assert.deepEqual(pick(1), [2, 4, 6, 8]);
  assert.deepEqual(pick(1, [4, 10]), [2, 6, 8], "a step being uploaded stays");
  assert.deepEqual(pick(0, [10]), [2, 4, 6, 8], "the one just written stays even at 0");
  assert.deepEqual(pick(9), []);
  assert.throws(() => pick(-1), RangeError);
});

Deno.test("deleteOldSteps deletes on disk and leaves everything else", async () => {
  const dir = await Deno.makeTempDir({ prefix: "keep_steps_" });
  try {
    for (const name of ["r-step1", "r-step2", "r-step3", "r-interrupted", "s-step1"]) {
      await Deno.mkdir(join(dir, name));
      await Deno.writeTextFile(join(dir, name, "config.json"), "{}");
    }
    await Deno.writeTextFile(join(dir, "r-step0"), "a file, not a folder");
    const deleted = await deleteOldSteps(dir, "r", { keep: 1, protect: new Set([2]) });
    assert.deepEqual(deleted, [{ path: join(dir, "r-step1"), step: 1 }]);
    const left = [];
    for await (const e of Deno.readDir(dir)) left.push(e.name);
    assert.deepEqual(left.sort(), ["r-interrupted", "r-step0", "r-step2", "r-step3", "s-step1"]);
    const errors: string[] = [];
    assert.deepEqual(
      await deleteOldSteps(
        join(dir, "missing"),
        "r",
        { keep: 1, protect: new Set() },
        (p) => errors.push(p),
      ),
      [],
    );
    assert.deepEqual(errors, [join(dir, "missing")]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
