import assert from "node:assert/strict";
import { publicKeyFromRaw } from "@libp2p/crypto/keys";
import { peerIdFromPublicKey } from "@libp2p/peer-id";
import { multiaddr } from "@multiformats/multiaddr";
import { toHex } from "../common/mod.ts";
import { RunDriver, testState } from "../tests/support/coordinator_fixtures.ts";
import { Exchange } from "./exchange.ts";
import type { ClientEventName, ClientEvents, ClientLogger } from "./log.ts";
import { signAnnouncement } from "./p2p/announcement.ts";
import { hashToBytes } from "../net/p2p/mod.ts";
import { publicKeyOf } from "../net/p2p/mod.ts";
import { roundView } from "./round_view.ts";
import { bloomContains, type NodeIdentity, sha256 } from "../coordinator/core/mod.ts";
import {
  chunkLayouts,
  commitmentHash,
  type DistroResult,
  encodePayload,
} from "../optimizer/mod.ts";

const RUN = "exchange-test";
const expectation = {
  layouts: chunkLayouts([{ name: "w", shape: [8, 8] }], { chunk: 64, topk: 2 }),
  quantize1bit: true,
};

function resultFor(step: number, batch: { start: number; end: number }, v: number): DistroResult {
  return {
    step,
    batch,
    trainerNonce: 0,
    params: [{
      indices: new Uint32Array([v % 64, (v + 1) % 64]),
      values: new Float32Array([1, -1]),
    }],
  };
}

async function waitFor(what: string, cond: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

Deno.test({
  name:
    "Exchange: forged gossip and a payload that misses its commitment are refused; the run goes on",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const secrets = [1, 2, 3].map((n) => new Uint8Array(32).fill(n * 17));
    const ids: NodeIdentity[] = secrets.map((s) => {
      const key = publicKeyOf(s);
      return { signer: key, p2pIdentity: key };
    });
    const driver = new RunDriver(
      testState({
        initMinClients: 3,
        minClients: 1,
        globalBatchSizeStart: 6,
        globalBatchSizeEnd: 6,
      }),
    );
    driver.startEpoch(ids);
    driver.warmupTimeout();
    const state = driver.state;
    const logs: { event: ClientEventName; fields: ClientEvents[ClientEventName] }[][] = [
      [],
      [],
      [],
    ];
    const exchanges: Exchange[] = [];
    try {
      for (const [i, secretKey] of secrets.entries()) {
        const logger: ClientLogger = { log: (event, fields) => logs[i].push({ event, fields }) };
        const ex = await Exchange.start({
          runId: RUN,
          secretKey,
          publicKey: ids[i].p2pIdentity,
          logger,
          onChange: () => {},
          gossipHeartbeatMs: 100,
          retry: { attemptTimeoutMs: 2000, retries: 0, backoffMs: 10 },
        });
        ex.results.setExpectation(expectation);
        exchanges.push(ex);
      }
      const [honest, observer, rogue] = exchanges;
      for (const ex of exchanges) {
        for (const [j, other] of exchanges.entries()) {
          if (other !== ex) {
            await ex.node.addPeerAddresses(ids[j].p2pIdentity, other.node.addresses());
          }
        }
        await ex.update(structuredClone(state)); // each client holds its own copy, as in life
      }
      await waitFor(
        "gossip mesh",
        () => exchanges.every((ex) => ex.gossip.topicPeers().length === 2),
      );
      await new Promise((r) => setTimeout(r, 300)); // a heartbeat or two to graft the mesh

      const view = roundView(state, 0, ids[0].signer)!;
      const batchOf = (i: number) => view.assignments.find((a) => a.clientIndex === i)!.batch;
      const proofOf = (i: number) => view.selection.committeeProof(i);

      // 1. The rogue forges an announcement in the honest client's name (its own signature).
      const forged = signAnnouncement({
        kind: "TrainingResult",
        step: view.step,
        proof: proofOf(0),
        batch: batchOf(0),
        commitment: sha256(new Uint8Array([1])),
        contentHash: sha256(new Uint8Array([2])),
        payloadSize: 10,
      }, { secretKey: secrets[2], topic: rogue.gossip.topic, nonce: 7 });
      forged.set(ids[0].p2pIdentity, 1); // claim to be client 0
      await rogue.node.libp2p.services.pubsub.publish(rogue.gossip.topic, forged);

      // 2. The rogue announces its own batch, but serves bytes that miss the commitment.
      const rogueResult = resultFor(view.step, batchOf(2), 5);
      const announcedBytes = encodePayload(rogueResult, expectation);
      const servedBytes = encodePayload(resultFor(view.step, batchOf(2), 9), expectation);
      const servedHash = rogue.payloads.provide(servedBytes, { step: view.step });
      await rogue.gossip.publish({
        kind: "TrainingResult",
        step: view.step,
        proof: proofOf(2),
        batch: batchOf(2),
        commitment: commitmentHash({ step: view.step, batch: batchOf(2), payload: announcedBytes }),
        contentHash: hashToBytes(servedHash),
        payloadSize: servedBytes.length,
      });

      // 3. The rogue claims the honest client's batch under its own name.
      await rogue.gossip.publish({
        kind: "TrainingResult",
        step: view.step,
        proof: proofOf(2),
        batch: batchOf(0),
        commitment: sha256(new Uint8Array([3])),
        contentHash: sha256(new Uint8Array([4])),
        payloadSize: 10,
      });

      // 4. The honest client publishes a real result.
      const honestResult = resultFor(view.step, batchOf(0), 1);
      await honest.results.publishResult(0, proofOf(0), honestResult);

      const tracker = observer.results.tracker(0)!;
      await waitFor(
        "the honest result",
        () => tracker.announcements().some((a) => tracker.result(a.commitment) !== undefined),
      );
      await waitFor(
        "the rogue's refusals",
        () => logs[1].filter((l) => l.event === "refused").length >= 2,
      );
      await waitFor("downloads settled", () => observer.results.downloadsSettled(0));

      assert.ok(observer.gossip.stats.badSignature >= 1, "forged signature rejected by gossip");
      const reasons = logs[1].filter((l) => l.event === "refused")
        .map((l) => (l.fields as ClientEvents["refused"]).reason).sort();
      assert.deepEqual(reasons, ["CommitmentMismatch", "WrongBatch"]);
      // Only the honest result and the rogue's (unverified) announcement were accepted.
      assert.equal(tracker.announcements().length, 2);
      const verified = tracker.announcements().filter((a) => tracker.result(a.commitment));
      assert.deepEqual(verified.map((a) => a.batch), [batchOf(0)]);
      assert.deepEqual(
        verified[0] && tracker.result(verified[0].commitment)!.params[0].indices,
        new Uint32Array([1, 2]),
      );
      // The observer's witness report vouches for the honest trainer only.
      const report = observer.results.witnessReport(1, { position: 0, index: 1, witness: true });
      assert.ok(bloomContains(report.participantBloom, sha256(ids[0].signer)));
      assert.ok(!bloomContains(report.participantBloom, sha256(ids[2].signer)));
      assert.equal(observer.results.tracker(0)?.finishedBy([ids[0].p2pIdentity]) ?? false, false);
      await honest.results.announceFinished(0, view.step, proofOf(0));
      await waitFor(
        "Finished",
        () => observer.results.tracker(0)?.finishedBy([ids[0].p2pIdentity]) ?? false,
      );

      // 5. A peer ahead of us: its round-1 Finished arrives before we see round 1 and is kept.
      driver.fullRound();
      // The new round's tracker exists as soon as update() is called, before anything it awaits
      // (the allowlist): an announcement delivered meanwhile must find it, not be dropped.
      const updating = honest.update(structuredClone(state));
      assert.ok(
        honest.results.tracker(1) !== undefined,
        "round 1's tracker exists before update() awaits",
      );
      await updating;
      const view1 = roundView(state, 1, ids[0].signer)!;
      await honest.results.announceFinished(1, view1.step, view1.selection.committeeProof(0));
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(observer.results.tracker(1), undefined, "the observer is still in round 0");
      await observer.update(structuredClone(state));
      await waitFor(
        "the kept Finished",
        () => observer.results.tracker(1)?.finishedBy([ids[0].p2pIdentity]) ?? false,
      );
    } finally {
      for (const ex of exchanges) await ex.close();
    }
  },
});

Deno.test({
  name:
    "Exchange: a participant it cannot dial is named once, with the error, however often it retries",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const secrets = [1, 2].map((n) => new Uint8Array(32).fill(n * 29));
    const ids: NodeIdentity[] = secrets.map((s) => {
      const key = publicKeyOf(s);
      return { signer: key, p2pIdentity: key };
    });
    const driver = new RunDriver(testState({ initMinClients: 2, minClients: 1 }));
    driver.startEpoch(ids);
    driver.warmupTimeout();
    // A port nobody listens on: a peer that bound 127.0.0.1 on another machine looks like this.
    const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (closed.addr as Deno.NetAddr).port;
    closed.close();
    const events: { event: ClientEventName; fields: ClientEvents[ClientEventName] }[] = [];
    const ex = await Exchange.start({
      runId: RUN,
      secretKey: secrets[0],
      publicKey: ids[0].p2pIdentity,
      logger: { log: (event, fields) => events.push({ event, fields }) },
      onChange: () => {},
    });
    try {
      const peerId = peerIdFromPublicKey(publicKeyFromRaw(ids[1].p2pIdentity));
      await ex.node.addPeerAddresses(ids[1].p2pIdentity, [
        multiaddr(`/ip4/127.0.0.1/tcp/${port}/p2p/${peerId.toString()}`),
      ]);
      await ex.update(structuredClone(driver.state));
      const unreachable = () => events.filter((e) => e.event === "peer_unreachable");
      await waitFor("a peer_unreachable event", () => unreachable().length > 0, 15_000);
      await new Promise((r) => setTimeout(r, 4500)); // two more ticks, two more failed dials
      assert.equal(unreachable().length, 1, JSON.stringify(unreachable()));
      const fields = unreachable()[0].fields as ClientEvents["peer_unreachable"];
      assert.equal(fields.peer, toHex(ids[1].p2pIdentity));
      // It names the address it dialled and what happened there.
      assert.equal(
        fields.error,
        `dialled /ip4/127.0.0.1/tcp/${port}: refused: nothing listens there`,
      );
    } finally {
      await ex.close();
    }
  },
});

Deno.test({
  name:
    "Exchange: a run's relays and bootstrap peers are used; an unusable one is named, not fatal",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const secrets = [1, 2, 3].map((n) => new Uint8Array(32).fill(n * 41));
    const [self, relay, peer] = secrets.map(publicKeyOf);
    const idOf = (key: Uint8Array) => peerIdFromPublicKey(publicKeyFromRaw(key)).toString();
    // Nobody listens there: the relay is recorded (and dialled again later), not reached.
    const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (closed.addr as Deno.NetAddr).port;
    closed.close();
    const errors: ClientEvents["error"][] = [];
    const ex = await Exchange.start({
      runId: RUN,
      secretKey: secrets[0],
      publicKey: self,
      relays: [`/ip4/127.0.0.1/tcp/${port}/p2p/${idOf(relay)}`], // --relay
      logger: {
        log: (event, fields) => {
          if (event === "error") errors.push(fields as ClientEvents["error"]);
        },
      },
      onChange: () => {},
    });
    try {
      const runRelay = `/ip4/127.0.0.2/tcp/${port}/p2p/${idOf(relay)}`;
      // What the program admits but libp2p cannot use is skipped; the rest are kept.
      await ex.useRelays([runRelay, "/ip9/1.2.3.4/p2p/abc"]);
      assert.deepEqual(ex.node.relays().addresses.sort(), [
        `/ip4/127.0.0.1/tcp/${port}/p2p/${idOf(relay)}`,
        runRelay,
      ]);
      assert.equal(errors.length, 1, JSON.stringify(errors));
      assert.equal(errors[0].what, "relay");
      assert.match(errors[0].error, /^"\/ip9\/1\.2\.3\.4\/p2p\/abc" is not a relay's multiaddr/);
      assert.equal(await ex.node.knowsAddresses(peer), false);
      await ex.useBootstrapPeers([
        `/ip4/127.0.0.1/tcp/${port}/p2p/${idOf(peer)}`,
        "/ip4/127.0.0.1/tcp/1",
      ]);
      assert.equal(await ex.node.knowsAddresses(peer), true, "the bootstrap peer's address");
      assert.equal(errors.length, 2, JSON.stringify(errors));
      assert.equal(errors[1].what, "bootstrap peer");
      assert.match(errors[1].error, /"\/ip4\/127\.0\.0\.1\/tcp\/1" must end in \/p2p\/<peer id>/);
    } finally {
      await ex.close();
    }
  },
});
