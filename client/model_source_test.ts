import assert from "node:assert/strict";
import { loadModel, modelFolder, ModelSourceError, runInitSeed } from "./model_source.ts";

const ROOT = new URL("..", import.meta.url).pathname;

Deno.test("modelFolder: override first, else the checkpoint repo as a path; Gcs refused", () => {
  const hub = {
    kind: "Hub" as const,
    repo: { repoId: "config/models/llama-tiny", revision: null },
  };
  assert.equal(modelFolder(hub, { baseDir: "/r" }), "/r/config/models/llama-tiny");
  assert.equal(modelFolder(hub, { baseDir: "/r", override: "/m" }), "/m");
  assert.equal(
    modelFolder({ ...hub, kind: "P2P" }, { baseDir: "/r" }),
    "/r/config/models/llama-tiny",
  );
  assert.throws(
    () => modelFolder({ kind: "Gcs", repo: { bucket: "b", prefix: null } }),
    ModelSourceError,
  );
});

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
