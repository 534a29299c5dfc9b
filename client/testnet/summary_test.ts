import assert from "node:assert/strict";
import { formatSummary, lossTrend, SummaryCollector } from "./summary.ts";

Deno.test("the summary averages losses per step and counts what happened", () => {
  const c = new SummaryCollector();
  const train = (label: string, step: number, loss: number) =>
    c.add(label, "client", { event: "train", step, loss });
  train("client-1", 1, 10);
  train("client-2", 1, 12);
  train("client-1", 2, 9);
  train("client-1", 3, 8);
  train("client-1", 4, 6);
  c.add("client-1", "client", {
    event: "apply",
    step: 3,
    untrained_batches: 1,
    params_hash: "aa",
  });
  c.add("client-2", "client", {
    event: "apply",
    step: 2,
    untrained_batches: 2,
    params_hash: "a0",
  });
  c.add("client-2", "client", {
    event: "apply",
    step: 3,
    untrained_batches: 1,
    params_hash: "aa",
  });
  c.add("client-2", "client", { event: "health_check", step: 3, clients: ["x"] });
  c.add("client-1", "client", { event: "checkpoint", step: 5, dir: "/ck/step5" });
  c.add("coordinator", "coordinator", { event: "EpochEnd", success: true });
  c.add("coordinator", "coordinator", { event: "EpochEnd", success: false });
  const s = c.summary();
  assert.deepEqual([...s.lossByStep], [[1, 11], [2, 9], [3, 8], [4, 6]]);
  assert.deepEqual(lossTrend(s), { first: 10, last: 7, steps: 4 });
  assert.equal(s.epochs, 1);
  assert.equal(s.lastAppliedStep, 3);
  assert.equal(s.untrainedBatches, 3, "per step once, not once per client");
  assert.equal(s.healthChecks, 1);
  assert.deepEqual(formatSummary(s), [
    "loss 10.000 -> 7.000 (mean of first/last steps) over 4 trained steps",
    "1 epochs completed; last applied step 3; 3 untrained batches; 1 health checks",
    "parameters after step 3: 2 clients, identical (digest aa…)",
    "checkpoint: /ck/step5",
  ]);
});

Deno.test("differing parameters and an empty run are reported as such", () => {
  const c = new SummaryCollector();
  assert.equal(lossTrend(c.summary()), null);
  assert.equal(formatSummary(c.summary())[0], "no training step was logged");
  c.add("a", "client", { event: "apply", step: 2, untrained_batches: 0, params_hash: "aa" });
  c.add("b", "client", { event: "apply", step: 2, untrained_batches: 0, params_hash: "bb" });
  c.add("c", "client", { event: "apply", step: 1, untrained_batches: 0, params_hash: "cc" });
  assert.equal(formatSummary(c.summary())[2], "parameters after step 2: 2 clients, DIFFER");
});
