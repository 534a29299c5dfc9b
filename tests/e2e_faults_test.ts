/**
 * End-to-end faults on a real local testnet (coordinator + clients as processes on 127.0.0.1,
 * client/testnet), after Psyche's `disconnect_client` and
 * `test_when_all_clients_disconnect_checkpoint_is_hub`:
 *
 * - a client SIGKILLed at the start of a round (the coordinator keeps it: no withdraw on
 *   disconnect) is reported by the witnesses' health checks and dropped; its batch is logged
 *   and counted as untrained, never silently lost; the others go on with identical parameters;
 * - when every client of an epoch is gone, the next epoch's checkpoint falls back from `P2P`
 *   to `Hub`; a new client refuses the repo's seeded init (the run has trained: it would restart
 *   the model), waits saying so, and loads the repo once it holds the run's parameters (their
 *   digest is the one the run recorded).
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type SeenEvent, startTinyTestnet } from "../client/testing/testnet.ts";
import type { CoordinatorState } from "../coordinator/core/mod.ts";
import { readModelDir } from "../model/mod.ts";
import { digestBytes } from "../shaders/mod.ts";
import { REPO_ROOT } from "../client/testnet/mod.ts";

const step = (e: SeenEvent) => Number(e.event.step);

Deno.test({
  name: "a client killed mid-round is dropped by health checks and its batch counted untrained",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using testnet = await startTinyTestnet({
    runId: "e2e-kill",
    initMinClients: 3,
    minClients: 1,
    witnessNodes: 0,
    globalBatchSize: 6,
    epochTime: 60,
    maxRoundTrainTime: 5,
  }, { numClients: 3, coordinatorArgs: ["--withdraw-on-disconnect", "false"] });
  const { net, watcher, lines } = testnet;
  try {
    const victim = "client-3";
    const victimKey = net.clientKey(victim);
    // The run is going: every client applied a step.
    await watcher.waitFor(
      "every client to apply a step",
      () => ["client-1", "client-2", victim].every((l) => watcher.named("apply", l).length > 0),
      90_000,
    );
    // Kill the victim right as a round starts (its batch is assigned, not yet published).
    const rounds = watcher.named("state_changed").length;
    const roundStart = await watcher.waitFor(
      "the next round",
      () => watcher.named("state_changed").slice(rounds).find((e) => e.event.to === "RoundTrain"),
      30_000,
    );
    const killedAtStep = step(roundStart);
    await net.kill(victim);

    const reported = await watcher.waitFor(
      "a health check naming the killed client",
      () =>
        watcher.named("health_check_sent").find((e) =>
          (e.event.clients as string[]).includes(victimKey)
        ),
      60_000,
    );
    assert.notEqual(reported.label, victim);
    await watcher.waitFor(
      "the coordinator to drop it",
      () => watcher.named("health_check", "coordinator").some((e) => Number(e.event.dropped) > 0),
      30_000,
    );
    const untrained = await watcher.waitFor(
      "the killed client's batch counted as untrained",
      () =>
        watcher.named("apply").find((e) =>
          e.label !== victim && step(e) >= killedAtStep && Number(e.event.untrained_batches) > 0
        ),
      60_000,
    );
    assert.equal(
      (untrained.event.untrained as unknown[]).length,
      Number(untrained.event.untrained_batches),
      "every untrained batch is listed",
    );
    // The survivors go on, in agreement.
    const later = killedAtStep + 3;
    await watcher.waitFor(
      `both survivors to apply step ${later}`,
      () =>
        ["client-1", "client-2"].every((l) =>
          watcher.named("apply", l).some((e) => step(e) >= later)
        ),
      60_000,
    );
    for (let s = killedAtStep; s <= later; s++) {
      const hashes = watcher.named("apply").filter((e) => e.label !== victim && step(e) === s)
        .map((e) => e.event.params_hash);
      assert.equal(new Set(hashes).size, hashes.length > 0 ? 1 : 0, `parameters at step ${s}`);
    }
  } catch (e) {
    console.error(lines.slice(-80).join("\n"));
    throw e;
  }
});

Deno.test({
  name: "when every client leaves, a newcomer waits rather than restart from the seeded init, " +
    "and loads the run's model once its repo has it",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  // The run's repo holds only a config: its weights are the run-seeded init.
  const repo = await Deno.makeTempDir({ prefix: "psyche-e2e-repo-" });
  await Deno.copyFile(
    join(REPO_ROOT, "config", "models", "llama-tiny", "config.json"),
    join(repo, "config.json"),
  );
  const checkpoints = await Deno.makeTempDir({ prefix: "psyche-e2e-checkpoints-" });
  // Declared before the testnet, so removed after it has stopped.
  await using _dirs = {
    async [Symbol.asyncDispose]() {
      for (const d of [repo, checkpoints]) await Deno.remove(d, { recursive: true });
    },
  };
  await using testnet = await startTinyTestnet({
    runId: "e2e-hub",
    initMinClients: 1,
    minClients: 1,
    epochTime: 10,
    maxRoundTrainTime: 5,
    checkpoint: "Hub",
    modelDir: repo,
    // Time to stop the run's only client between two epochs.
    waitingForMembersExtraTime: 8,
  }, { numClients: 1, checkpointDir: checkpoints });
  const { net, watcher, lines } = testnet;
  const seen: { runState: string; checkpoint: string; clients: string[]; step: number }[] = [];
  const record = (s: CoordinatorState) =>
    seen.push({
      runState: s.runState,
      checkpoint: s.model.checkpoint.kind,
      step: s.progress.step,
      clients: s.epochState.clients.map((c) =>
        [...c.id.signer].map((b) => b.toString(16).padStart(2, "0")).join("")
      ),
    });
  testnet.observe(record);
  try {
    // The first epoch trains and ends; its client checkpoints the parameters it ends with.
    const saved = await watcher.waitFor(
      "client-1's checkpoint at the first epoch's end",
      () => watcher.named("checkpoint", "client-1")[0],
      90_000,
    );
    await watcher.waitFor(
      "the first epoch to end after training",
      () => watcher.named("epoch_end").find((e) => e.event.success === true),
      30_000,
    );
    await net.kill("client-1");
    const newcomer = await net.addClient();
    const newKey = net.clientKey(newcomer);
    const warmup = await watcher.waitFor(
      "an epoch of the newcomer alone to start",
      () =>
        seen.find((s) =>
          s.runState === "Warmup" && s.clients.length === 1 && s.clients[0] === newKey
        ),
      60_000,
    );
    assert.equal(warmup.checkpoint, "Hub", "no client of the last epoch came back");
    assert.equal(warmup.step, saved.event.step, "the epoch starts where the checkpoint is");
    // The repo's seeded init is not the run's model: the newcomer waits and says why.
    const waiting = await watcher.waitFor(
      "the newcomer to wait for the run's model",
      () => watcher.named("waiting_for_model", newcomer)[0],
      60_000,
    );
    assert.equal(waiting.event.step, saved.event.step);
    assert.match(
      String(waiting.event.reason),
      /seeded init of .* but the run recorded [0-9a-f]{64}/,
    );
    assert.equal(watcher.named("model", newcomer).length, 0, "no model was taken");
    // The operator puts the run's parameters in the repo: the next try takes them.
    const dir = String(saved.event.dir);
    await Deno.copyFile(join(dir, "model.safetensors"), join(repo, "model.safetensors"));
    const model = await watcher.waitFor(
      "the newcomer to load the repo's weights",
      () => watcher.named("model", newcomer)[0],
      60_000,
    );
    assert.equal(model.event.folder, repo);
    assert.equal(model.event.weights, "loaded");
    const saved_ = await readModelDir(dir);
    assert.equal(model.event.params_hash, digestBytes(new Uint8Array(saved_.weights!.buffer)));
    await watcher.waitFor(
      "the newcomer to train",
      () => watcher.named("train", newcomer)[0],
      60_000,
    );
    assert.equal(
      watcher.events.filter((e) => e.label === newcomer && e.event.weights === "seeded").length,
      0,
      "the seeded init was never used",
    );
    // Waiting for the run's model is a warning, not an error of the newcomer's.
    assert.deepEqual(watcher.named("error", newcomer).map((e) => e.event.error), []);
  } catch (e) {
    console.error(lines.slice(-80).join("\n"));
    throw e;
  }
});
