import assert from "node:assert/strict";
import { join } from "node:path";
import { keepLastCheckpoint } from "./demo.ts";

Deno.test("the demo keeps only its last checkpoint", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const name of ["run-step9", "run-step14", "run-step100", "notes"]) {
      await Deno.mkdir(join(dir, name));
    }
    await Deno.writeTextFile(join(dir, "run-step7"), "a file, not a checkpoint");
    await keepLastCheckpoint(dir);
    const left = [];
    for await (const e of Deno.readDir(dir)) left.push(e.name);
    assert.deepEqual(left.sort(), ["notes", "run-step100", "run-step7"]);
    await keepLastCheckpoint(join(dir, "missing"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
