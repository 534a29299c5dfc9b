/**
 * `deno task testnet`'s summary and exit status on a real run (client/testnet/main.ts
 * `runTestnet`: a coordinator and three clients as processes on 127.0.0.1, the tiny Llama): every
 * client's digest at every step agrees with the others' and with the coordinator's records, the
 * coordinator's rounds are counted, and the run exits 0.
 *
 * @module
 */
import assert from "node:assert/strict";
import { tinyRunFolder } from "../client/testing/testnet.ts";
import { runTestnet } from "../client/testnet/mod.ts";

Deno.test({
  name: "a healthy testnet run: identical parameters at every step, rounds counted, exit 0",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const config = await tinyRunFolder({
    runId: "e2e-summary",
    initMinClients: 3,
    minClients: 1,
    witnessNodes: 0,
    globalBatchSize: 6,
    epochTime: 15,
  });
  const lines: string[] = [];
  try {
    const outcome = await runTestnet({
      numClients: 3,
      configPath: config,
      randomKillNum: 0,
      randomKillIntervalS: 120,
      logs: "console",
      stopAfterEpochs: 1,
      stopAfterSeconds: 240,
      checkpointDir: null,
      keepTemp: false,
      calibrate: false,
      dashboardPort: null,
    }, { write: (line) => lines.push(line), colour: false });
    const context = lines.slice(-60).join("\n");
    assert.equal(outcome.reason, "epochs", context);
    assert.deepEqual(outcome.problems, [], context);
    assert.equal(outcome.exitCode, 0);
    const { summary } = outcome;
    const a = summary.agreement;
    assert.ok(summary.appliedSteps >= 3, `${summary.appliedSteps} steps applied`);
    assert.equal(a.clients, 3);
    assert.deepEqual(a.disagreements, [], context);
    assert.deepEqual(a.divergences, [], context);
    // Each applied step labels the parameters of step + 2, and the epoch's first step is loaded.
    assert.ok(a.stepsCompared >= summary.appliedSteps, `${a.stepsCompared} steps compared`);
    assert.ok(a.stepsRecorded > 0, "the coordinator recorded digests");
    assert.ok(summary.rounds.ended >= summary.appliedSteps, JSON.stringify(summary.rounds));
    assert.ok(summary.rounds.batches > 0, JSON.stringify(summary.rounds));
    assert.equal(summary.rounds.untrainedBatches, summary.untrainedBatches);
    const text = lines.filter((l) => l.startsWith("--- ")).join("\n");
    assert.match(text, /--- parameters identical at every step: \d+ steps compared across 3/);
    assert.doesNotMatch(text, /FAILED/);
    console.log(text);
  } finally {
    await Deno.remove(config, { recursive: true });
  }
});
