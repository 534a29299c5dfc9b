import assert from "node:assert/strict";
import type { Stream } from "@libp2p/interface";
import { createP2PNode, type P2PNode } from "../../net/p2p/mod.ts";
import { type ReceivedAnnouncement, RunGossip } from "./gossip.ts";
import { gossipTopic, type RoundAnnouncement, signAnnouncement } from "./announcement.ts";
import { encodeSyncResponse, SYNC_PROTOCOL } from "./sync_wire.ts";
import { testPublic, testSecret, waitFor } from "../testing/p2p.ts";

const RUN = "sync-test-run";
const TOPIC = gossipTopic(RUN);
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
const finished = (step: number, warmup = false): RoundAnnouncement => ({
  kind: "Finished",
  step,
  proof,
  merkleRoot: new Uint8Array(32).fill(step),
  warmup,
});

interface Member {
  node: P2PNode;
  gossip: RunGossip;
  inbox: ReceivedAnnouncement[];
}

/** Nodes 1 and 2, connected and meshed; node 2 loses the first copy of every TrainingResult. */
async function pair(): Promise<Member[] & AsyncDisposable> {
  const keys = [1, 2].map(testPublic);
  const members: Member[] = [];
  for (const n of [1, 2]) {
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
      loseFirstCopy: n === 2 ? new Set(["TrainingResult"] as const) : undefined,
    });
    await gossip.serve();
    members.push({ node, gossip, inbox });
  }
  const [a, b] = members;
  await b.node.connect(a.node.addresses()[0]);
  await waitFor(
    "both to see each other on the topic",
    () => a.gossip.topicPeers().length === 1 && b.gossip.topicPeers().length === 1,
  );
  return Object.assign(members, {
    async [Symbol.asyncDispose]() {
      for (const m of members) m.gossip.close();
      await Promise.all(members.map((m) => m.node.stop()));
    },
  });
}

Deno.test("a lost announcement is pulled from its sender and delivered once", async () => {
  await using members = await pair();
  const [a, b] = members;
  await a.gossip.publish(result(5, 1));
  await a.gossip.publish(finished(5));
  await waitFor("b to get a's Finished", () => b.inbox.length === 1);
  assert.equal(b.gossip.stats.lostOnPurpose, 1, "the result was lost on the way");
  assert.equal(b.inbox[0].message.kind, "Finished");

  const report = await b.gossip.pull(a.node.publicKey, 5, { maxEnvelopes: 8 });
  assert.deepEqual(report, { received: 2, delivered: 1, refused: 0 });
  assert.deepEqual(b.inbox.map((m) => m.message), [finished(5), result(5, 1)]);
  assert.deepEqual(b.inbox[1].from, a.node.publicKey);
  // Again: nothing new. Another step: nothing held.
  assert.deepEqual(await b.gossip.pull(a.node.publicKey, 5, { maxEnvelopes: 8 }), {
    received: 2,
    delivered: 0,
    refused: 0,
  });
  assert.equal((await b.gossip.pull(a.node.publicKey, 6, { maxEnvelopes: 8 })).received, 0);
  // What b delivered it serves in turn: a pulls back its own (duplicates of what it sent).
  assert.equal((await a.gossip.pull(b.node.publicKey, 5, { maxEnvelopes: 8 })).received, 2);
  assert.equal(b.gossip.stats.pulled, 1);
});

Deno.test("pulls leave out warmup readiness and forgotten steps", async () => {
  await using members = await pair();
  const [a, b] = members;
  await a.gossip.publish(finished(3, true));
  await a.gossip.publish(finished(3));
  await a.gossip.publish(finished(4));
  await waitFor("b to get all three", () => b.inbox.length === 3);
  const at3 = await b.gossip.pull(a.node.publicKey, 3, { maxEnvelopes: 8 });
  assert.equal(at3.received, 1, "only the round's Finished, not the warmup one");
  a.gossip.forgetBefore(4);
  assert.equal((await b.gossip.pull(a.node.publicKey, 3, { maxEnvelopes: 8 })).received, 0);
  assert.equal((await b.gossip.pull(a.node.publicKey, 4, { maxEnvelopes: 8 })).received, 1);
});

/** Makes node 1 answer every pull with `answer` instead of its archive. */
async function lieWith(node: P2PNode, answer: Uint8Array): Promise<void> {
  await node.libp2p.unhandle(SYNC_PROTOCOL);
  await node.libp2p.handle(SYNC_PROTOCOL, (stream: Stream) => {
    stream.send(answer);
    void stream.close();
  });
}

Deno.test("pulled envelopes are checked as gossip's are: forged, foreign and off-step ones are refused", async () => {
  await using members = await pair();
  const [a, b] = members;
  const sign = (message: RoundAnnouncement, n: number, topic = TOPIC) =>
    signAnnouncement(message, { secretKey: testSecret(n), topic, nonce: 1 });
  const forged = sign(result(5, 1), 1);
  forged[40] ^= 1; // a flipped signature bit
  const claimsB = sign(result(5, 2), 1);
  claimsB.set(testPublic(2), 1); // a's signature under b's key
  const stranger = sign(result(5, 3), 9);
  const otherRun = sign(result(5, 4), 1, gossipTopic("another run"));
  const otherStep = sign(result(6, 5), 1);
  const warmup = sign(finished(5, true), 1);
  const garbage = new Uint8Array([1, 2, 3]);
  const good = sign(result(5, 6), 1);
  const bad = [forged, claimsB, stranger, otherRun, otherStep, warmup, garbage];
  await lieWith(a.node, encodeSyncResponse([...bad, good]));
  const report = await b.gossip.pull(a.node.publicKey, 5, { maxEnvelopes: 8 });
  assert.deepEqual(report, { received: 8, delivered: 1, refused: bad.length });
  assert.deepEqual(b.inbox.map((m) => m.message), [result(5, 6)]);
  assert.equal(b.gossip.stats.badPulled, bad.length);
});

Deno.test("a pull answer declaring more envelopes than asked for is refused before its bytes", async () => {
  await using members = await pair();
  const [a, b] = members;
  const many = Array.from(
    { length: 9 },
    (_, i) => signAnnouncement(result(5, i), { secretKey: testSecret(1), topic: TOPIC, nonce: i }),
  );
  await lieWith(a.node, encodeSyncResponse(many));
  await assert.rejects(
    b.gossip.pull(a.node.publicKey, 5, { maxEnvelopes: 8 }),
    /9 envelopes, at most 8 expected/,
  );
  // A header that promises one envelope and then streams more than any envelope can be.
  const endless = new Uint8Array(3 + 2 + 4096);
  endless.set([1, 0, 1, 0x10, 0x00]);
  await lieWith(a.node, endless);
  await assert.rejects(
    b.gossip.pull(a.node.publicKey, 5, { maxEnvelopes: 8 }),
    /more than 2053 bytes/,
  );
  assert.equal(b.inbox.length, 0);
});

Deno.test("a pull from a peer that does not answer gives up at its timeout", async () => {
  await using members = await pair();
  const [a, b] = members;
  await a.node.libp2p.unhandle(SYNC_PROTOCOL);
  await a.node.libp2p.handle(SYNC_PROTOCOL, () => {/* never answers */});
  await assert.rejects(
    b.gossip.pull(a.node.publicKey, 5, { maxEnvelopes: 8, timeoutMs: 300 }),
  );
});
