/**
 * End-to-end faults on a real local testnet (coordinator + clients as processes on 127.0.0.1,
 * client/testnet), after Psyche's `disconnect_client` and
 * `test_when_all_clients_disconnect_checkpoint_is_hub`:
 *
 * - a client SIGKILLed at the start of a round (the coordinator keeps it: no withdraw on
 *   disconnect) is reported by the witnesses' health checks and dropped; its batch is logged
 *   and counted as untrained, never silently lost; the others go on with identical parameters;
 * - when every client of an epoch is gone, the next epoch's checkpoint falls back from `P2P`
 *   to `Hub`, and a new client loads the model from the Hub folder and trains.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Testnet } from "../client/testnet/launcher.ts";
import {
  EventWatcher,
  observeCoordinator,
  type SeenEvent,
  tinyRunFolder,
} from "../client/testnet/testing.ts";
import type { CoordinatorState } from "../coordinator/types.ts";

const step = (e: SeenEvent) => Number(e.event.step);

/** Shown when a test fails: the testnet's merged console output. */
function recorder() {
  const lines: string[] = [];
  return { lines, write: (line: string) => lines.push(line) };
}

Deno.test({
  name: "a client killed mid-round is dropped by health checks and its batch counted untrained",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const config = await tinyRunFolder({
    runId: "e2e-kill",
    initMinClients: 3,
    minClients: 1,
    witnessNodes: 0,
    globalBatchSize: 6,
    epochTime: 60,
    maxRoundTrainTime: 5,
  });
  const watcher = new EventWatcher();
  const out = recorder();
  const net = await Testnet.start({
    configPath: config,
    numClients: 3,
    write: out.write,
    colour: false,
    onEvent: watcher.onEvent,
    coordinatorArgs: ["--withdraw-on-disconnect", "false"],
  });
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
    const rounds = watcher.named("StateChanged").length;
    const roundStart = await watcher.waitFor(
      "the next round",
      () => watcher.named("StateChanged").slice(rounds).find((e) => e.event.to === "RoundTrain"),
      30_000,
    );
    const killedAtStep = step(roundStart);
    await net.kill(victim);

    const reported = await watcher.waitFor(
      "a health check naming the killed client",
      () =>
        watcher.named("health_check").find((e) =>
          (e.event.clients as string[]).includes(victimKey)
        ),
      60_000,
    );
    assert.notEqual(reported.label, victim);
    await watcher.waitFor(
      "the coordinator to drop it",
      () => watcher.named("HealthCheck").some((e) => Number(e.event.dropped) > 0),
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
    console.error(out.lines.slice(-80).join("\n"));
    throw e;
  } finally {
    await net.stop();
    await Deno.remove(config, { recursive: true });
  }
});

Deno.test({
  name: "when every client leaves, the checkpoint falls back to Hub and a newcomer loads it",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const config = await tinyRunFolder({
    runId: "e2e-hub",
    initMinClients: 1,
    minClients: 1,
    epochTime: 10,
    maxRoundTrainTime: 5,
    checkpoint: "Hub",
  });
  const watcher = new EventWatcher();
  const out = recorder();
  const net = await Testnet.start({
    configPath: config,
    numClients: 1,
    write: out.write,
    colour: false,
    onEvent: watcher.onEvent,
  });
  const observing = new AbortController();
  const seen: { epoch: number; runState: string; checkpoint: string; clients: string[] }[] = [];
  const record = (s: CoordinatorState) =>
    seen.push({
      epoch: s.progress.epoch,
      runState: s.runState,
      checkpoint: s.model.checkpoint.kind,
      clients: s.epochState.clients.map((c) =>
        [...c.id.signer].map((b) => b.toString(16).padStart(2, "0")).join("")
      ),
    });
  const observer = observeCoordinator(
    { address: net.serverAddr, runId: net.runId, signal: observing.signal },
    record,
  );
  try {
    await watcher.waitFor(
      "the first epoch to end after training",
      () => watcher.named("EpochEnd").find((e) => e.event.success === true),
      90_000,
    );
    await watcher.waitFor(
      "the checkpoint to become P2P",
      () => seen.some((s) => s.checkpoint === "P2P"),
      10_000,
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
    assert.equal(warmup.checkpoint, "Hub");
    const model = await watcher.waitFor(
      "the newcomer to load its model",
      () => watcher.named("model", newcomer)[0],
      60_000,
    );
    assert.match(String(model.event.folder), /config\/models\/llama-tiny$/);
    assert.notEqual(model.event.weights, "p2p");
    await watcher.waitFor(
      "the newcomer to train",
      () => watcher.named("train", newcomer)[0],
      60_000,
    );
  } catch (e) {
    console.error(out.lines.slice(-80).join("\n"));
    throw e;
  } finally {
    observing.abort();
    await observer.catch(() => {});
    await net.stop();
    await Deno.remove(config, { recursive: true });
  }
});
