import assert from "node:assert/strict";
import { createP2PNode } from "../../net/p2p/mod.ts";
import { PayloadService } from "../../net/p2p/mod.ts";
import { benchPayload, CHILD_RUN_ID, spawnProvider } from "../testing/bench_provider.ts";
import { type ReceivedAnnouncement, RunGossip } from "./gossip.ts";
import { testPublic, testSecret, waitFor } from "../testing/p2p.ts";
import { contentHash } from "../../net/p2p/mod.ts";

Deno.test("gossip and a bulk payload cross processes; the other process exits after stopping", async () => {
  const size = 4 * 1024 * 1024 + 3;
  const provider = await spawnProvider(41, size, [42]);
  try {
    assert.equal(provider.hash, contentHash(benchPayload(size)));
    await using node = await createP2PNode({
      secretKey: testSecret(42),
      allowedPeers: [testPublic(41)],
    });
    const payloads = await PayloadService.start(node);
    const inbox: ReceivedAnnouncement[] = [];
    const gossip = new RunGossip(node, {
      runId: CHILD_RUN_ID,
      secretKey: testSecret(42),
      onAnnouncement: (a) => inbox.push(a),
    });
    await node.connect(provider.address);
    await waitFor("the child to join the topic", () => gossip.topicPeers().length === 1);
    const announced = new Uint8Array(32).fill(0x5a);
    await gossip.publish({
      kind: "TrainingResult",
      step: 9,
      proof: { committee: "Trainer", position: 1, index: 1 },
      batch: { start: 72, end: 79 },
      commitment: new Uint8Array(32).fill(1),
      contentHash: announced,
      payloadSize: 1,
    });
    await waitFor("the child's Finished", () => inbox.length === 1);
    assert.deepEqual(inbox[0].from, testPublic(41));
    assert.equal(inbox[0].message.kind, "Finished");
    assert.deepEqual(
      inbox[0].message.kind === "Finished" && inbox[0].message.merkleRoot,
      announced,
    );
    gossip.close();
    const bytes = await payloads.fetch(provider.hash, {
      providers: [testPublic(41)],
      expectedSize: size,
    });
    assert.equal(contentHash(bytes), provider.hash);
    // 4 MiB came over the child's bulk listener, which closes with its node: the exit below
    // checks that too.
    assert.equal(payloads.stats.bulkFetched, 1);
  } finally {
    const status = await provider.stop(10_000);
    assert.equal(status.code, 0);
  }
});
