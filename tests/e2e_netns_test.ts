/**
 * End to end across a real network: the coordinator listens on a bridge, and each client runs in
 * its own network namespace with its own address (client/testing/netns.ts), so nothing travels
 * over 127.0.0.1: the coordinator connection, gossip, payloads and model sharing all cross veth
 * links, each limited to 2 Mbit/s each way, the uplink of a modest home connection.
 *
 * - The run trains, every client holding the same parameters at every step; one client binds
 *   p2p to every interface (`--bind-p2p-interface 0.0.0.0`, as docs/quickstart.md advises on
 *   real machines) and is reached at its host's address.
 * - A client whose link is cut for 20 s (a pulled cable) is dropped by the others' health checks
 *   and left behind; they go on without it. Its coordinator connection survives the cut (TCP
 *   retransmits), and once the link is back it joins again, waits out its back-off, resyncs its
 *   model from its peers and trains with them.
 *
 * Needs root (network namespaces); elsewhere the tests are ignored, saying why.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type SeenEvent, startTinyTestnetOn } from "../client/testing/testnet.ts";
import { createTestNetwork, testNetworkUnavailable } from "../client/testing/netns.ts";
import { assertOneModel, clientErrors } from "./support/one_model.ts";

const step = (e: SeenEvent) => Number(e.event.step);
const unavailable = testNetworkUnavailable();
if (unavailable !== null) console.warn(`tests/e2e_netns_test.ts ignored: ${unavailable}`);

Deno.test({
  name: "clients on their own hosts behind slow links train as one; a client cut off for 20 s " +
    "comes back to the run's model",
  ignore: unavailable !== null,
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  await using network = await createTestNetwork({ hosts: 3, rate: "2mbit" });
  const hosts = network.hosts;
  await using testnet = await startTinyTestnetOn(network, {
    runId: "e2e-netns",
    // Two may start an epoch: the cut client must not hold the others at an epoch's start.
    initMinClients: 2,
    minClients: 2,
    witnessNodes: 0,
    globalBatchSize: 6,
    epochTime: 15,
    maxRoundTrainTime: 6,
  }, {
    numClients: 3,
    // client-2 binds every interface, as docs/quickstart.md tells users on real machines to.
    bindAll: ["client-2"],
  });
  const { watcher, lines } = testnet;
  const all = ["client-1", "client-2", "client-3"];
  const applied = (label: string, atLeast: number) =>
    watcher.named("apply", label).some((e) => step(e) >= atLeast);
  try {
    await watcher.waitFor(
      "every client to apply step 3",
      () => all.every((l) => applied(l, 3)),
      150_000,
    );
    const addresses = (label: string) =>
      (watcher.named("start", label)[0].event.p2p_addresses as string[]).join(" ");
    const onHost = (host: { address: string }) =>
      new RegExp(`/ip4/${host.address.replaceAll(".", "\\.")}/`);
    assert.match(addresses("client-1"), onHost(hosts[0]));
    assert.doesNotMatch(addresses("client-1"), /127\.0\.0\.1/, "nothing on loopback");
    // Bound to every interface: loopback too, and the host's address, which peers reach.
    assert.match(addresses("client-2"), onHost(hosts[1]));

    // Cut client-3 off; the other two go on without it.
    const cutAt = Math.max(...watcher.named("apply", "client-1").map(step));
    await network.cut(2);
    const cutTime = Date.now();
    await watcher.waitFor(
      "client-1 and client-2 to apply 3 more steps",
      () => applied("client-1", cutAt + 3) && applied("client-2", cutAt + 3),
      120_000,
    );
    const offFor = 20_000 - (Date.now() - cutTime); // 20 s off at least, however fast the run
    if (offFor > 0) await new Promise((r) => setTimeout(r, offFor));
    await network.mend(2);
    const mendedAt = Math.max(...watcher.named("apply", "client-1").map(step));
    // Back in the run: it applies steps the others apply, with their parameters.
    await watcher.waitFor(
      "client-3 to apply two steps after its link came back",
      () => watcher.named("apply", "client-3").filter((e) => step(e) > mendedAt).length >= 2,
      180_000,
    );
    const count = (name: string) => watcher.named(name, "client-3").length;
    const skipped = watcher.named("states_skipped", "client-3")
      .reduce((n, e) => n + Number(e.event.skipped), 0);
    const errors = clientErrors(watcher.events);
    console.log(
      `client-3 after the cut: ${skipped} stale states skipped, ${count("outdated")} outdated ` +
        `requests; ${errors.length} errors${errors.map((e) => `\n  ${e}`).join("")}`,
    );
    // Refusals of what the cut overtook are `outdated`, not errors: nothing else went wrong.
    assert.deepEqual(errors, [], "clients logged errors");
    assertOneModel(watcher.events);
    const last = Math.max(...watcher.named("apply", "client-3").map(step));
    const at = (label: string) =>
      watcher.named("apply", label).find((e) => step(e) === last)?.event.params_hash;
    await watcher.waitFor(
      "client-1 to apply the same step",
      () => at("client-1") !== undefined,
      60_000,
    );
    assert.equal(
      at("client-3"),
      at("client-1"),
      `client-3 holds the run's parameters at step ${last}`,
    );
  } catch (e) {
    console.error(lines.slice(-150).join("\n"));
    throw e;
  }
});
