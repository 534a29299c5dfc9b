import assert from "node:assert/strict";
import { formatSummary, lossTrend, SummaryCollector, summaryFields } from "./summary.ts";
import { runProblems } from "./verdict.ts";

/** The run's digest of the parameters of `step` (hex, as clients log it). */
const good = (step: number) => step.toString(16).padStart(64, "0");
/** Another digest for `step`: parameters that are not the run's. */
const bad = (step: number) => `f${good(step).slice(1)}`;

/** A synthetic event stream, as the testnet hands the collector its children's events. */
class Stream {
  readonly collector = new SummaryCollector();

  client(label: string, event: string, fields: Record<string, unknown> = {}): this {
    this.collector.add(label, "client", {
      time: new Date(0).toISOString(),
      level: "info",
      event,
      ...fields,
    });
    return this;
  }

  coordinator(event: string, fields: Record<string, unknown> = {}): this {
    this.collector.add("coordinator", "coordinator", {
      time: new Date(0).toISOString(),
      level: "info",
      event,
      ...fields,
    });
    return this;
  }

  start(label: string): this {
    return this.client(label, "start", {
      identity: "ab",
      run_id: "r",
      p2p_addresses: [],
      adapter: "cpu",
    });
  }

  /** `label` loads the parameters of `step`. */
  model(label: string, step: number, hash = good(step)): this {
    return this.client(label, "model", {
      folder: "p2p",
      weights: "p2p",
      params: 100,
      params_hash: hash,
      params_step: step,
    });
  }

  /** `label` applies the results of `step`: the parameters of `step + 2`. */
  apply(label: string, step: number, hash = good(step + 2), untrained = 0): this {
    return this.client(label, "apply", {
      epoch: 0,
      step,
      applied: 3,
      untrained_batches: untrained,
      untrained: [],
      lr: 1e-3,
      params_hash: hash,
      params_step: step + 2,
    });
  }

  diverged(label: string, step: number, reason = "the run recorded other parameters"): this {
    return this.client(label, "diverged", {
      step,
      params_hash: bad(step),
      consensus: good(step),
      reason,
    });
  }

  resynced(label: string, step: number): this {
    return this.client(label, "resynced", { step, params_hash: good(step), source: "p2p" });
  }

  /** Every label applies steps `from..to`; the coordinator records each step's parameters. */
  agree(labels: readonly string[], from: number, to: number): this {
    for (let step = from; step <= to; step++) {
      for (const label of labels) this.apply(label, step);
      this.coordinator("digest_recorded", { step: step + 2, digest: good(step + 2) });
    }
    return this;
  }
}

const FOUR = ["client-1", "client-2", "client-3", "client-4"];

Deno.test("the summary averages losses per step and counts what happened", () => {
  const s = new Stream();
  const train = (label: string, step: number, loss: number) =>
    s.client(label, "train", { step, loss });
  train("client-1", 1, 10);
  train("client-2", 1, 12);
  train("client-1", 2, 9);
  train("client-1", 3, 8);
  train("client-1", 4, 6);
  s.apply("client-1", 3, good(5), 1);
  s.apply("client-2", 2, good(4), 2);
  s.apply("client-2", 3, good(5), 1);
  s.client("client-2", "health_check_sent", { step: 3, clients: ["x"] });
  s.client("client-1", "checkpoint", { step: 5, dir: "/ck/step5" });
  s.coordinator("epoch_end", { success: true });
  s.coordinator("epoch_end", { success: false });
  const summary = s.collector.summary();
  assert.deepEqual([...summary.lossByStep], [[1, 11], [2, 9], [3, 8], [4, 6]]);
  assert.deepEqual(lossTrend(summary), { first: 10, last: 7, steps: 4 });
  assert.equal(summary.epochs, 1);
  assert.equal(s.collector.epochs, 1);
  assert.equal(summary.lastAppliedStep, 3);
  assert.equal(summary.appliedSteps, 2);
  assert.equal(summary.untrainedBatches, 3, "per step once, not once per client");
  assert.equal(summary.healthChecks, 1);
  assert.deepEqual(formatSummary(summary), [
    "loss 10.000 -> 7.000 (mean of first/last steps) over 4 trained steps",
    "1 epochs; 2 steps applied (last: step 3); 0 rounds (0 timed out); " +
    "0 of 0 batches untrained (clients counted 3); 1 health checks",
    "parameters identical at every step: 1 steps compared across 2 clients " +
    "(0 with the coordinator's record)",
    "checkpoint: /ck/step5",
  ]);
});

Deno.test("every client agreeing at every step: identical, exit 0", () => {
  const s = new Stream();
  for (const label of FOUR) s.start(label).model(label, 1);
  s.coordinator("digest_recorded", { step: 1, digest: good(1) });
  s.agree(FOUR, 1, 60);
  const summary = s.collector.summary();
  const a = summary.agreement;
  assert.equal(a.clients, 4);
  assert.equal(a.digests, 4 * 61);
  assert.equal(a.stepsCompared, 61, "step 1 (the model loaded) and 3..62");
  assert.equal(a.stepsRecorded, 61);
  assert.deepEqual(a.disagreements, []);
  assert.deepEqual(a.divergences, []);
  assert.equal(summary.appliedSteps, 60);
  assert.equal(summary.lastAppliedStep, 60);
  assert.equal(
    formatSummary(summary)[2],
    "parameters identical at every step: 61 steps compared across 4 clients " +
      "(61 with the coordinator's record)",
  );
  assert.deepEqual(runProblems("epochs", summary), []);
});

Deno.test("a client that diverged, said so and resynced is reported, exit 0", () => {
  const s = new Stream();
  s.agree(FOUR, 1, 9);
  // client-3 misses results of step 10: its parameters of steps 12..14 are not the run's; it
  // finds out when the coordinator records step 12, keeps its last apply, then resyncs at 20.
  for (let step = 10; step <= 12; step++) {
    for (const label of FOUR) {
      s.apply(label, step, label === "client-3" ? bad(step + 2) : good(step + 2));
    }
    if (step === 11) s.diverged("client-3", 12);
  }
  s.agree(["client-1", "client-2", "client-4"], 13, 20);
  s.model("client-3", 20).resynced("client-3", 20);
  s.agree(FOUR, 21, 25);
  const summary = s.collector.summary();
  const a = summary.agreement;
  assert.deepEqual(a.disagreements.map((d) => d.step), [12, 13, 14]);
  assert.deepEqual(a.disagreements[0], {
    step: 12,
    run: good(12),
    runSource: "majority",
    differing: [{ label: "client-3", hash: bad(12) }],
  });
  assert.deepEqual(a.divergences, [{
    label: "client-3",
    steps: [12, 13, 14],
    silentSteps: [],
    logged: { step: 12, reason: "the run recorded other parameters" },
    recoveredAt: 20,
  }]);
  const lines = formatSummary(summary);
  assert.deepEqual(lines.slice(2, 4), [
    "parameters DIFFER at 3 of 25 steps compared across 4 clients " +
    "(22 with the coordinator's record): steps 12-14",
    "  client-3 differs at steps 12-14; logged diverged at step 12 (the run recorded other " +
    "parameters); holds the run's parameters again at step 20",
  ]);
  assert.deepEqual(runProblems("epochs", summary), []);
});

Deno.test("a client that differs without saying so is a silent divergence: exit non-zero", () => {
  const s = new Stream();
  s.agree(FOUR, 1, 5);
  s.apply("client-1", 6).apply("client-2", 6).apply("client-3", 6);
  s.apply("client-4", 6, bad(8));
  s.apply("client-1", 7).apply("client-2", 7).apply("client-3", 7);
  s.apply("client-4", 7, bad(9));
  s.agree(FOUR, 8, 10); // it holds the run's parameters again: still a silent divergence
  const summary = s.collector.summary();
  assert.deepEqual(summary.agreement.divergences, [{
    label: "client-4",
    steps: [8, 9],
    silentSteps: [8, 9],
    logged: null,
    recoveredAt: 10,
  }]);
  assert.equal(
    formatSummary(summary)[3],
    "  client-4 differs SILENTLY at steps 8-9 (no diverged event); " +
      "holds the run's parameters again at step 10",
  );
  assert.deepEqual(runProblems("epochs", summary), [
    "client-4's parameters were not the run's at steps 8-9 and it never logged diverged " +
    "(silent divergence)",
  ]);
});

Deno.test("a restarted process that differs is silent, whatever the killed one logged", () => {
  const s = new Stream();
  s.agree(FOUR, 1, 5);
  s.diverged("client-2", 7); // the process that says so is killed; the next one says nothing
  s.start("client-2").model("client-2", 7, bad(7));
  s.agree(["client-1", "client-3", "client-4"], 5, 6);
  const summary = s.collector.summary();
  assert.deepEqual(summary.agreement.divergences, [{
    label: "client-2",
    steps: [7],
    silentSteps: [7],
    logged: { step: 7, reason: "the run recorded other parameters" },
    recoveredAt: null,
  }]);
  assert.equal(
    formatSummary(summary)[3],
    "  client-2 differs SILENTLY at step 7 (no diverged event from that process); " +
      "logged diverged at step 7 (the run recorded other parameters); NOT resynced",
  );
  assert.deepEqual(runProblems("time", summary), [
    "client-2's parameters were not the run's at step 7 and it never logged diverged " +
    "(silent divergence)",
    "client-2 diverged at step 7 and did not resync",
  ]);
});

Deno.test("a client that diverged and never resynced: exit non-zero", () => {
  const s = new Stream();
  s.agree(FOUR, 1, 5);
  // It lacked results a quorum saw, said so and stopped applying: no digest of its differs.
  s.diverged("client-1", 8, "an apply lacks results a quorum of witnesses saw");
  s.agree(["client-2", "client-3", "client-4"], 6, 9);
  const summary = s.collector.summary();
  assert.deepEqual(summary.agreement.disagreements, []);
  const lines = formatSummary(summary);
  assert.match(lines[2], /^parameters identical at every step/);
  assert.equal(
    lines[3],
    "  client-1 logged diverged at step 8 (an apply lacks results a quorum of witnesses saw); " +
      "NOT resynced",
  );
  assert.deepEqual(runProblems("epochs", summary), [
    "client-1 diverged at step 8 and did not resync",
  ]);
});

Deno.test("a run that applied no step: exit non-zero", () => {
  const s = new Stream();
  for (const label of FOUR) s.start(label).model(label, 1);
  s.client("client-1", "train", { step: 1, loss: 10.4 });
  const summary = s.collector.summary();
  assert.equal(summary.appliedSteps, 0);
  assert.equal(summary.lastAppliedStep, 0);
  assert.match(formatSummary(summary)[1], /; NO step applied;/);
  assert.deepEqual(runProblems("time", summary), ["no client applied a step"]);
});

Deno.test("rounds, timed-out rounds and the coordinator's untrained batches are summed", () => {
  const s = new Stream();
  const roundEnd = (height: number, trainTimedOut: boolean, batches: number, untrained: number) =>
    s.coordinator("round_end", {
      round: height,
      step: height + 1,
      witnesses: 3,
      quorum: 2,
      train_timed_out: trainTimedOut,
      batches,
      untrained_batches: untrained,
    });
  roundEnd(0, false, 0, 0);
  roundEnd(1, true, 6, 2);
  roundEnd(2, true, 6, 1);
  roundEnd(3, false, 6, 0);
  s.apply("client-1", 1, good(3), 2).apply("client-1", 2, good(4), 1);
  const summary = s.collector.summary();
  assert.deepEqual(summary.rounds, { ended: 4, timedOut: 2, batches: 18, untrainedBatches: 3 });
  assert.equal(
    formatSummary(summary)[1],
    "0 epochs; 2 steps applied (last: step 2); 4 rounds (2 timed out); " +
      "3 of 18 batches untrained; 0 health checks",
  );
});

Deno.test("an epoch no witness attested is counted and named in the summary", () => {
  const s = new Stream();
  s.coordinator("epoch_end", { success: true, cause: "epoch_time" });
  s.coordinator("epoch_end", { success: true, cause: "no_witnesses" });
  s.coordinator("epoch_end", { success: false, cause: "warmup" });
  s.apply("client-1", 1, good(3));
  const summary = s.collector.summary();
  assert.equal(summary.epochs, 2);
  assert.equal(summary.unattestedEpochs, 1);
  assert.match(
    formatSummary(summary)[1],
    /^2 epochs \(1 unattested: no witness reported in their last round\); /,
  );
  assert.equal(summaryFields(summary).unattested_epochs, 1);
});

Deno.test("the coordinator's record is the run's digest, over the clients' majority", () => {
  const s = new Stream();
  s.apply("client-1", 3, bad(5)).apply("client-2", 3, bad(5)).apply("client-3", 3);
  s.coordinator("digest_recorded", { step: 5, digest: good(5).toUpperCase() });
  s.coordinator("digest_recorded", { step: 5, digest: bad(5) }); // the first record is final
  const a = s.collector.summary().agreement;
  assert.deepEqual(a.disagreements, [{
    step: 5,
    run: good(5),
    runSource: "coordinator",
    differing: [{ label: "client-1", hash: bad(5) }, { label: "client-2", hash: bad(5) }],
  }]);
  assert.deepEqual(a.divergences.map((d) => d.label), ["client-1", "client-2"]);
});

Deno.test("malformed events are ignored, not counted", () => {
  const s = new Stream();
  s.client("client-1", "apply", { step: "x", params_hash: good(3), params_step: 3 });
  s.client("client-1", "model", { params_hash: 7, params_step: 1 });
  s.coordinator("digest_recorded", { step: -1, digest: good(1) });
  s.coordinator("round_end", { batches: -4, untrained_batches: "2" });
  const summary = s.collector.summary();
  assert.equal(summary.appliedSteps, 0);
  assert.equal(summary.agreement.digests, 0);
  assert.deepEqual(summary.rounds, { ended: 1, timedOut: 0, batches: 0, untrainedBatches: 0 });
});
