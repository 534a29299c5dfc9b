/**
 * End to end, a client that never sees a Cooldown (the `PSYCHE_FAULT_MISS_COOLDOWN` hook; in the
 * wild, a backlog of states after a stall or a follower slower than the feed). The apply of the
 * epoch's last results is planned from the Cooldown, so before the fix it started the next epoch
 * a step behind and had to fetch the parameters from its peers; in an outage, where every client
 * missed it, nobody could serve them. Now it does the Cooldown's work in the WaitingForMembers that
 * follows (client/state/cooldown.ts, `planMissedCooldown`; its applies are tested there).
 *
 * Checked: client-2 applies every step the others apply, labels the next epoch's parameters as
 * they do, keeps its own model across the epoch (one `model` event, no fetch), never diverges or
 * logs an error, and every client holds the same parameters at every step.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type SeenEvent, startTinyTestnet } from "../client/testing/testnet.ts";
import { assertOneModel, clientErrors } from "./support/one_model.ts";

const step = (e: SeenEvent) => Number(e.event.step);
const CLIENTS = ["client-1", "client-2", "client-3"];

Deno.test({
  name: "a client that never sees a Cooldown applies the epoch's last results after it, " +
    "and keeps the run's model",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using testnet = await startTinyTestnet({
    runId: "e2e-missed-cooldown",
    initMinClients: 3,
    minClients: 2,
    witnessNodes: 0,
    globalBatchSize: 6,
    epochTime: 10,
    maxRoundTrainTime: 8,
  }, {
    numClients: 3,
    clientEnv: (label) => label === "client-2" ? { PSYCHE_FAULT_MISS_COOLDOWN: "1" } : undefined,
  });
  const { watcher, lines } = testnet;
  try {
    const firstEnd = await watcher.waitFor(
      "the first epoch to end",
      () => watcher.named("epoch_end", "coordinator").find((e) => e.event.success === true),
      180_000,
    );
    const nextStart = step(firstEnd);
    // Two steps of the next epoch applied by everyone: it began from one model.
    await watcher.waitFor(
      `every client to apply step ${nextStart + 1}`,
      () => CLIENTS.every((l) => watcher.named("apply", l).some((e) => step(e) >= nextStart + 1)),
      180_000,
    );
    const cooldowns = (label: string) =>
      watcher.named("state", label).filter((e) => e.event.run_state === "Cooldown").length;
    assert.equal(cooldowns("client-2"), 0, "client-2 never saw a Cooldown");
    assert.ok(cooldowns("client-1") > 0, "client-1 did");
    const applied = (label: string) =>
      watcher.named("apply", label).map(step).filter((s) => s <= nextStart + 1);
    assert.deepEqual(applied("client-2"), applied("client-1"), "the same steps applied");
    // The epoch timer's last rounds train nothing, so what client-2 missed is the snapshot that
    // labels the parameters of the next epoch's first step: it made it after the Cooldown.
    const snapshots = watcher.named("model_snapshot", "client-2").filter((e) =>
      step(e) === nextStart
    );
    assert.equal(snapshots.length, 1, `client-2 labelled the parameters of step ${nextStart}`);
    const theirs = watcher.named("model_snapshot", "client-1").find((e) => step(e) === nextStart);
    assert.equal(snapshots[0].event.params_hash, theirs?.event.params_hash);
    for (const label of CLIENTS) {
      assert.equal(watcher.named("model", label).length, 1, `${label} loaded its model once`);
      assert.deepEqual(watcher.named("diverged", label), [], `${label} never diverged`);
    }
    const errors = clientErrors(watcher.events);
    assert.deepEqual(errors, [], "clients logged errors");
    assertOneModel(watcher.events);
  } catch (e) {
    console.error(lines.slice(-150).join("\n"));
    throw e;
  }
});
