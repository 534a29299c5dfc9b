/**
 * End to end, "one model whatever happens": real coordinator and client processes on
 * 127.0.0.1 (client/testnet), each test breaking the run the way the real world does and
 * checking that every client that trains holds the run's parameters at every step
 * (tests/support/one_model.ts), that a client which left them says so and comes back, and that
 * nothing is hidden:
 *
 * - one client's parameters change under it (a flipped bit, through the
 *   `PSYCHE_FAULT_FLIP_WEIGHT_AFTER_STEP` hook): it sees the difference at the step the
 *   witnesses record, stops training and witnessing, withdraws, resyncs at the next epoch
 *   from its peers, and ends identical to them;
 * - the coordinator is SIGKILLed mid-round and restarted from its saved run: the clients,
 *   which went further than the saved step, roll back to it and go on in step.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type EventWatcher, type SeenEvent, startTinyTestnet } from "../client/testing/testnet.ts";
import { assertOneModel } from "./support/one_model.ts";

const named = (w: EventWatcher, name: string, label?: string) => w.named(name, label);
const num = (e: SeenEvent, field: string) => Number(e.event[field]);

Deno.test({
  name: "a client whose parameters change diverges at the next record, withdraws, resyncs " +
    "from its peers and ends identical",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const FLIP_AFTER = 3;
  await using testnet = await startTinyTestnet({
    runId: "e2e-flip",
    initMinClients: 3,
    minClients: 2,
    witnessNodes: 0, // all three witness: a quorum of two outvotes the flipped client
    globalBatchSize: 6,
    epochTime: 16,
    maxRoundTrainTime: 8,
    weightDecay: 0.1,
  }, {
    numClients: 3,
    clientEnv: (label) =>
      label === "client-2"
        ? { PSYCHE_FAULT_FLIP_WEIGHT_AFTER_STEP: String(FLIP_AFTER) }
        : undefined,
  });
  const { watcher, lines } = testnet;
  try {
    const diverged = await watcher.waitFor(
      "client-2 to see it diverged",
      () => named(watcher, "diverged", "client-2")[0],
      150_000,
    );
    // The flip is after the apply of step 3's results: the parameters of step 5.
    assert.equal(num(diverged, "step"), FLIP_AFTER + 2);
    assert.notEqual(diverged.event.consensus, null, "caught by the run's record");
    assert.notEqual(diverged.event.params_hash, diverged.event.consensus);
    const resynced = await watcher.waitFor(
      "client-2 to resync",
      () => named(watcher, "resynced", "client-2")[0],
      150_000,
    );
    // Between the two it contributed nothing: no result, no witness report.
    const between = watcher.events.filter((e) =>
      e.label === "client-2" &&
      Date.parse(String(e.event.time)) > Date.parse(String(diverged.event.time)) &&
      Date.parse(String(e.event.time)) < Date.parse(String(resynced.event.time))
    );
    assert.deepEqual(between.filter((e) => e.event.event === "train"), []);
    assert.deepEqual(between.filter((e) => e.event.event === "witness"), []);
    assert.ok(
      watcher.named("left").some((e) => e.event.withdrawn === true),
      "the diverged client withdrew from the epoch",
    );
    // Back in the run: it trains again and applies what the others apply.
    const resyncStep = num(resynced, "step");
    await watcher.waitFor(
      "client-2 to apply two steps after its resync",
      () =>
        named(watcher, "apply", "client-2").filter((e) => num(e, "params_step") > resyncStep)
          .length >= 2,
      120_000,
    );
    await watcher.waitFor(
      "client-2 to train again",
      () => named(watcher, "train", "client-2").find((e) => num(e, "step") >= resyncStep),
      60_000,
    );
    for (const label of ["client-1", "client-3"]) {
      assert.deepEqual(named(watcher, "diverged", label), [], `${label} never diverged`);
    }
    assertOneModel(watcher.events, 8);
  } catch (e) {
    console.error(lines.slice(-120).join("\n"));
    throw e;
  }
});

Deno.test({
  name: "a coordinator SIGKILLed mid-round resumes from its saved epoch; every client rolls " +
    "back to that epoch's parameters and goes on in step",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using testnet = await startTinyTestnet({
    runId: "e2e-restart",
    initMinClients: 3,
    minClients: 2,
    witnessNodes: 0,
    globalBatchSize: 6,
    epochTime: 12,
    maxRoundTrainTime: 8,
    weightDecay: 0.1,
  }, { numClients: 3 });
  const { net, watcher, lines } = testnet;
  try {
    // One epoch saved, then into the second: kill the coordinator in the middle of a round.
    await watcher.waitFor(
      "the first epoch saved",
      () => watcher.named("saved")[0],
      150_000,
    );
    const savedStep = num(watcher.named("saved")[0], "step");
    await watcher.waitFor(
      "every client to apply a step of the next epoch",
      () =>
        ["client-1", "client-2", "client-3"].every((l) =>
          named(watcher, "apply", l).some((e) => num(e, "params_step") > savedStep)
        ),
      90_000,
    );
    const killedAt = Date.now();
    const file = await net.restartCoordinator();
    assert.match(file, new RegExp(`-step${savedStep}\\.toml$`));
    // Every client comes back to the saved step's parameters, then trains past them.
    for (const label of ["client-1", "client-2", "client-3"]) {
      const loaded = await watcher.waitFor(
        `${label} to load the saved step's parameters again`,
        () =>
          named(watcher, "model", label).find((e) => Date.parse(String(e.event.time)) > killedAt),
        150_000,
      );
      assert.equal(num(loaded, "params_step"), savedStep);
      await watcher.waitFor(
        `${label} to train again after the restart`,
        () =>
          named(watcher, "train", label).find((e) =>
            Date.parse(String(e.event.time)) > Date.parse(String(loaded.event.time))
          ),
        150_000,
      );
    }
    await watcher.waitFor(
      "two applied steps past the restart",
      () =>
        named(watcher, "apply").filter((e) =>
          Date.parse(String(e.event.time)) > killedAt && num(e, "params_step") > savedStep + 1
        ).length >= 6,
      120_000,
    );
    assertOneModel(watcher.events, 6);
    assert.deepEqual(named(watcher, "diverged"), [], "nobody diverged");
  } catch (e) {
    console.error(lines.slice(-120).join("\n"));
    throw e;
  }
});

Deno.test({
  name: "chaos: 4 clients, 3 SIGKILLs and restarts; every applied step identical across the " +
    "clients that applied it, no batch silently lost",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using testnet = await startTinyTestnet({
    runId: "e2e-chaos",
    initMinClients: 3,
    minClients: 2,
    witnessNodes: 0,
    globalBatchSize: 8,
    epochTime: 14,
    maxRoundTrainTime: 8,
    weightDecay: 0.1,
  }, { numClients: 4 });
  const { net, watcher, lines } = testnet;
  try {
    await watcher.waitFor("training to start", () => named(watcher, "apply")[0], 120_000);
    let n = 0;
    await net.randomKills({
      count: 3,
      intervalMs: 9_000,
      restartMs: 3_000,
      randomIndex: (k) => (n++ * 7 + 1) % k, // deterministic: a different victim each time
    });
    const killedAt = Date.now();
    // Every client, restarted or not, is back in the run and applies steps again.
    for (const label of ["client-1", "client-2", "client-3", "client-4"]) {
      await watcher.waitFor(
        `${label} to apply a step after the chaos`,
        () =>
          named(watcher, "apply", label).find((e) => Date.parse(String(e.event.time)) > killedAt),
        180_000,
      );
    }
    const kills = watcher.named("testnet").flatMap((e) => {
      const m = /random kill \d+\/\d+: (client-\d+)/.exec(String(e.event.message));
      return m === null ? [] : [{ victim: m[1], at: Date.parse(String(e.event.time)) }];
    });
    assert.equal(kills.length, 3);
    // A killed client starts with nothing: it loads the run's parameters from its peers.
    for (const { victim, at } of kills) {
      const loaded = await watcher.waitFor(
        `${victim} to load the model again after its kill`,
        () => named(watcher, "model", victim).find((e) => Date.parse(String(e.event.time)) > at),
        120_000,
      );
      assert.equal(loaded.event.weights, "p2p", `${victim} fetched the model from its peers`);
    }
    assertOneModel(watcher.events, 10);
    assert.deepEqual(named(watcher, "diverged"), [], "no client left the run's parameters");
    // No batch silently lost: every client that applied a step counted the same untrained
    // batches (a batch is either applied by everyone or counted by everyone).
    const untrained = new Map<number, Set<string>>();
    for (const e of named(watcher, "apply")) {
      const key = JSON.stringify(e.event.untrained);
      const set = untrained.get(num(e, "step")) ?? new Set();
      set.add(key);
      untrained.set(num(e, "step"), set);
    }
    for (const [step, lists] of untrained) {
      assert.equal(lists.size, 1, `clients counted different untrained batches at step ${step}`);
    }
  } catch (e) {
    console.error(lines.slice(-150).join("\n"));
    throw e;
  }
});
