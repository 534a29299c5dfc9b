import assert from "node:assert/strict";
import { createP2PNode, type P2PNode } from "../../net/p2p/mod.ts";
import { type ReceivedAnnouncement, RunGossip } from "./gossip.ts";
import { gossipTopic, type RoundAnnouncement, signAnnouncement } from "./announcement.ts";
import { PayloadService } from "../../net/p2p/mod.ts";
import { testPublic, testSecret, waitFor } from "../testing/p2p.ts";

const RUN = "gossip-test-run";
const proof = { committee: "Trainer", position: 0, index: 0 } as const;
const result = (step: number, tag: number): RoundAnnouncement => ({
  kind: "TrainingResult",
  step,
  proof,
  batch: { start: step * 8, end: step * 8 + 7 },
  commitment: new Uint8Array(32).fill(tag),
  contentHash: new Uint8Array(32).fill(tag + 1),
  payloadSize: 1000 + tag,
});

interface Member {
  node: P2PNode;
  gossip: RunGossip;
  inbox: ReceivedAnnouncement[];
}

/** Three participants in a line a - b - c: a and c only reach each other through b. */
async function line(): Promise<Member[] & AsyncDisposable> {
  const keys = [1, 2, 3].map(testPublic);
  const members: Member[] = [];
  for (const n of [1, 2, 3]) {
    const node = await createP2PNode({
      secretKey: testSecret(n),
      allowedPeers: keys,
      gossipHeartbeatMs: 100,
    });
    const inbox: ReceivedAnnouncement[] = [];
    const gossip = new RunGossip(node, {
      runId: RUN,
      secretKey: testSecret(n),
      onAnnouncement: (m) => inbox.push(m),
    });
    members.push({ node, gossip, inbox });
  }
  const [a, b, c] = members;
  await a.node.connect(b.node.addresses()[0]);
  await c.node.connect(b.node.addresses()[0]);
  await waitFor("b to see both subscribers", () => b.gossip.topicPeers().length === 2);
  await waitFor(
    "a and c to see b",
    () => a.gossip.topicPeers().length === 1 && c.gossip.topicPeers().length === 1,
  );
  return Object.assign(members, {
    async [Symbol.asyncDispose]() {
      for (const m of members) m.gossip.close();
      await Promise.all(members.map((m) => m.node.stop()));
    },
  });
}

Deno.test("announcements reach every participant, relayed through the middle node", async () => {
  await using members = await line();
  const [a, b, c] = members;
  assert.equal(a.node.isConnected(c.node.publicKey), false);
  await a.gossip.publish(result(5, 1));
  await waitFor("c to receive a's announcement", () => c.inbox.length === 1);
  assert.equal(b.inbox.length, 1);
  assert.deepEqual(c.inbox[0].from, a.node.publicKey);
  assert.deepEqual(c.inbox[0].message, result(5, 1));
  await c.gossip.publish({
    kind: "Finished",
    step: 5,
    proof,
    merkleRoot: new Uint8Array(32).fill(9),
    warmup: false,
  });
  await waitFor("a to receive c's Finished", () => a.inbox.length === 1);
  assert.equal(a.inbox[0].message.kind, "Finished");
  assert.equal(a.inbox.length + b.inbox.length + c.inbox.length, 4, "nobody hears itself");
});

Deno.test("a rebroadcast travels as a new message but is delivered only once", async () => {
  await using members = await line();
  const [a, b, c] = members;
  await a.gossip.publish(result(7, 3));
  await waitFor("first delivery", () => c.inbox.length === 1);
  assert.equal(await a.gossip.rebroadcast(7), true);
  await waitFor("the resend to be seen", () => c.gossip.stats.duplicates === 1);
  assert.equal(c.inbox.length, 1);
  assert.equal(b.gossip.stats.duplicates, 1);
  // Too old to resend two steps later.
  assert.equal(await a.gossip.rebroadcast(9), false);
});

Deno.test("forged, unsigned, unknown-sender and malformed announcements are dropped, not relayed", async () => {
  await using members = await line();
  const [a, b, c] = members;
  const pubsub = a.node.libp2p.services.pubsub;
  const topic = gossipTopic(RUN);
  // a claims to be b: a's signature under b's public key.
  const forged = signAnnouncement(result(1, 1), { secretKey: testSecret(1), topic, nonce: 1 });
  forged.set(b.node.publicKey, 1);
  // an all-zero signature from an allowed key.
  const unsigned = signAnnouncement(result(1, 2), { secretKey: testSecret(1), topic, nonce: 2 });
  unsigned.fill(0, 33, 97);
  // properly signed by a key that is not in the run.
  const stranger = signAnnouncement(result(1, 3), { secretKey: testSecret(9), topic, nonce: 3 });
  // signed for another run's topic.
  const otherRun = signAnnouncement(result(1, 4), {
    secretKey: testSecret(1),
    topic: gossipTopic("another run"),
    nonce: 4,
  });
  for (const bytes of [forged, unsigned, stranger, otherRun, new Uint8Array([1, 2, 3])]) {
    await pubsub.publish(topic, bytes);
  }
  await a.gossip.publish(result(1, 5)); // a valid one after them, to know they have all arrived
  await waitFor("the valid announcement at c", () => c.inbox.length === 1);
  await waitFor("b to have judged all five bad ones", () => {
    const stats = b.gossip.stats;
    return stats.malformed + stats.unknownSender + stats.badSignature === 5;
  });
  assert.deepEqual(b.gossip.stats, {
    delivered: 1,
    duplicates: 0,
    malformed: 1,
    unknownSender: 1,
    badSignature: 3,
    lostOnPurpose: 0,
    pulled: 0,
    badPulled: 0,
  });
  // b did not forward any of them, so c only saw the valid one.
  assert.deepEqual(c.gossip.stats, {
    delivered: 1,
    duplicates: 0,
    malformed: 0,
    unknownSender: 0,
    badSignature: 0,
    lostOnPurpose: 0,
    pulled: 0,
    badPulled: 0,
  });
  assert.deepEqual(c.inbox[0].message, result(1, 5));
  assert.deepEqual(b.inbox.map((m) => m.message), [result(1, 5)]);
});

Deno.test("an announcement relayed from a sender outside our allowlist is ignored", async () => {
  await using members = await line();
  const [a, b, c] = members;
  // c has moved to an epoch without a; b still allows a and relays for it.
  await c.node.setAllowedPeers([testPublic(2), testPublic(3)]);
  await a.gossip.publish(result(2, 1));
  await waitFor("c to see a's relayed announcement", () => c.gossip.stats.unknownSender === 1);
  assert.equal(b.inbox.length, 1);
  assert.equal(c.inbox.length, 0);
  await b.gossip.publish(result(2, 2));
  await waitFor("c to receive b", () => c.inbox.length === 1);
  assert.deepEqual(c.inbox[0].from, b.node.publicKey);
});

Deno.test("PeerAddresses lets a participant fetch from someone it never connected to", async () => {
  await using members = await line();
  const [a, , c] = members;
  const provider = await PayloadService.start(a.node);
  const fetcher = await PayloadService.start(c.node, { retry: { retries: 0 } });
  const hash = provider.provide(new Uint8Array(10_000).fill(7));
  // Before a announces its addresses, c has no way to reach it.
  const before = await fetcher.fetch(hash, { providers: [a.node.publicKey] }).catch((e) => e);
  assert.match(String(before), /unreachable/);
  await a.gossip.announceAddresses();
  await waitFor("c to receive a's addresses", () => c.inbox.length === 1);
  assert.equal(c.inbox[0].message.kind, "PeerAddresses");
  const bytes = await fetcher.fetch(hash, { providers: [a.node.publicKey] });
  assert.equal(bytes.length, 10_000);
});

Deno.test("gossip refuses a signing key that is not the node's identity", async () => {
  await using node = await createP2PNode({ secretKey: testSecret(1) });
  assert.throws(
    () => new RunGossip(node, { runId: RUN, secretKey: testSecret(2), onAnnouncement: () => {} }),
    /secretKey is not the key of this node's identity/,
  );
});
