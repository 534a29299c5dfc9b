import assert from "node:assert/strict";
import { type RunSummary, SummaryCollector } from "./summary.ts";
import { runProblems } from "./verdict.ts";

/** A summary of a run whose two clients applied `steps` steps with the same parameters. */
function healthy(steps = 3): RunSummary {
  const c = new SummaryCollector();
  for (let step = 1; step <= steps; step++) {
    for (const label of ["client-1", "client-2"]) {
      c.add(label, "client", { event: "apply", step, params_step: step + 2, params_hash: "aa" });
    }
  }
  return c.summary();
}

Deno.test("a run stopped as asked, with steps applied and one model, has no problem", () => {
  for (const reason of ["signal", "epochs", "time"] as const) {
    assert.deepEqual(runProblems(reason, healthy()), [], reason);
  }
});

Deno.test("the coordinator or every client exiting by itself is a problem", () => {
  assert.deepEqual(runProblems("coordinator-exited", healthy()), [
    "the coordinator exited by itself",
  ]);
  assert.deepEqual(runProblems("clients-exited", healthy()), ["every client exited by itself"]);
});

Deno.test("problems add up, one line each", () => {
  const c = new SummaryCollector();
  c.add("client-1", "client", { event: "diverged", step: 4, reason: "x" });
  assert.deepEqual(runProblems("coordinator-exited", c.summary()), [
    "the coordinator exited by itself",
    "no client applied a step",
    "client-1 diverged at step 4 and did not resync",
  ]);
});
