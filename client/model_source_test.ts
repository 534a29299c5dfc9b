import assert from "node:assert/strict";
import { loadModel, runInitSeed } from "./model_source.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test("loadModel: a config-only folder gives the same seeded weights for the same run", async () => {
  const a = await loadModel(`${ROOT}config/models/llama-tiny`, "run-a");
  const b = await loadModel(`${ROOT}config/models/llama-tiny`, "run-a");
  const c = await loadModel(`${ROOT}config/models/llama-tiny`, "run-c");
  assert.equal(a.source, "seeded");
  assert.deepEqual(a.weights, b.weights);
  assert.notDeepEqual(a.weights, c.weights);
  assert.notEqual(runInitSeed("run-a"), runInitSeed("run-c"));
  await assert.rejects(loadModel("/nonexistent/model", "r"), /nonexistent\/model/);
});
