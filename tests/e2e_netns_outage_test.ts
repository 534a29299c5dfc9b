/**
 * End to end across a real network (client/testing/netns.ts), the whole network down at once:
 * every client's link is cut for 20 s, so no client reaches the coordinator or another client,
 * as in an outage of the coordinator's network. When the links come back, the run must go on
 * by itself: every client joins again as needed, and they train on as one model.
 *
 * Needs root (network namespaces); elsewhere the test is ignored, saying why.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type SeenEvent, startTinyTestnetOn } from "../client/testing/testnet.ts";
import { createTestNetwork, testNetworkUnavailable } from "../client/testing/netns.ts";
import { assertOneModel, clientErrors } from "./support/one_model.ts";

const step = (e: SeenEvent) => Number(e.event.step);
const unavailable = testNetworkUnavailable();
if (unavailable !== null) console.warn(`tests/e2e_netns_outage_test.ts ignored: ${unavailable}`);

Deno.test({
  name: "after every client was cut off for 20 s, the run goes on by itself as one model",
  ignore: unavailable !== null,
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using network = await createTestNetwork({ hosts: 3 });
  const hosts = network.hosts;
  await using testnet = await startTinyTestnetOn(network, {
    runId: "e2e-outage",
    initMinClients: 2,
    minClients: 2,
    witnessNodes: 0,
    globalBatchSize: 6,
    epochTime: 15,
    maxRoundTrainTime: 6,
  }, {
    numClients: 3,
  });
  const { watcher, lines } = testnet;
  const all = ["client-1", "client-2", "client-3"];
  const lastApplied = () => Math.max(0, ...watcher.named("apply").map(step));
  try {
    await watcher.waitFor(
      "every client to apply step 3",
      () => all.every((l) => watcher.named("apply", l).some((e) => step(e) >= 3)),
      150_000,
    );
    for (let i = 0; i < hosts.length; i++) await network.cut(i);
    await new Promise((r) => setTimeout(r, 20_000));
    const before = lastApplied();
    for (let i = 0; i < hosts.length; i++) await network.mend(i);
    const mendedAt = Date.now();
    await watcher.waitFor(
      "every client to apply two steps after the outage",
      () => all.every((l) => watcher.named("apply", l).filter((e) => step(e) > before).length >= 2),
      180_000,
    );
    console.log(
      `back to training ${((Date.now() - mendedAt) / 1000).toFixed(1)} s after the outage`,
    );
    // A round nobody witnessed ends its epoch, and the epoch's end says it was unattested.
    const unwitnessed = watcher.named("round_end").filter((e) => e.event.witnesses === 0);
    const unattested = watcher.named("epoch_end").filter((e) => e.event.cause === "no_witnesses");
    assert.equal(
      unattested.length,
      unwitnessed.length,
      "one unattested epoch per unwitnessed round",
    );
    for (const e of unattested) assert.equal(e.event.level, "warn");
    const errors = clientErrors(watcher.events);
    console.log(
      `${unattested.length} epoch(s) ended unattested; ${watcher.named("outdated").length} ` +
        `outdated requests; ${errors.length} errors${errors.map((e) => `\n  ${e}`).join("")}`,
    );
    // Refusals of what the outage overtook are `outdated`, not errors.
    assert.deepEqual(errors, [], "clients logged errors");
    assertOneModel(watcher.events);
  } catch (e) {
    console.error(lines.slice(-200).join("\n"));
    throw e;
  }
});
