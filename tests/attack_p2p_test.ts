/**
 * Hostile peers against the P2P layer, over real libp2p nodes and real bulk listeners on
 * 127.0.0.1: a member that announces an oversized result, a provider that sends more than it
 * declared, a provider past its byte budget for the round, and a model manifest whose sizes
 * are not its config's. Each attack must cost the victim no more than the bytes an honest
 * exchange would have cost it.
 */
import assert from "node:assert/strict";
import type { Stream } from "@libp2p/interface";
import { fakeBulkListener, testPublic, testSecret, waitFor } from "../client/testing/p2p.ts";
import { startP2PRun, validResult } from "./support/p2p_run.ts";
import { tinyModel } from "../model/testing/fixtures.ts";
import { expectedResultBytes } from "../client/mod.ts";
import { chunkLayouts, commitmentHash } from "../optimizer/mod.ts";
import { toHex } from "../common/mod.ts";
import { CONFIG_BLOB, fetchModel, modelToBlobs } from "../client/model_sharing/mod.ts";
import {
  contentHash,
  createP2PNode,
  decodeRequest,
  encodeBulkResponseHeader,
  encodeResponseHeader,
  hashToBytes,
  ManifestSizeError,
  type P2PNode,
  PAYLOAD_PROTOCOL,
  PayloadFetchError,
  PayloadService,
  sendChunked,
  shareModel,
  StreamReader,
} from "../net/p2p/mod.ts";

/** One muxer frame: the most a stream can deliver past a cut in one piece. */
const YAMUX_FRAME_BYTES = 64 * 1024;
const JUNK_BYTES = 32 * 1024 * 1024;
const FAST_RETRY = { attemptTimeoutMs: 5000, retries: 0, backoffMs: 10, maxBackoffMs: 10 };

function junk(n: number, seed: number): Uint8Array {
  return new Uint8Array(n).map((_, i) => (Math.imul(i + seed, 2654435761) >>> 24) & 0xff);
}

/** `count` connected payload services that all allow each other. */
async function services(count: number, bulk = false) {
  const keys = Array.from({ length: count }, (_, i) => testPublic(i + 1));
  const nodes: P2PNode[] = [];
  const payloads: PayloadService[] = [];
  for (let i = 0; i < count; i++) {
    const node = await createP2PNode({ secretKey: testSecret(i + 1), allowedPeers: keys });
    nodes.push(node);
    payloads.push(
      await PayloadService.start(node, {
        retry: FAST_RETRY,
        bulk: bulk ? { minBytes: 0, bytesPerRttMs: 0 } : false,
      }),
    );
  }
  for (let i = 1; i < count; i++) await nodes[i].connect(nodes[0].addresses()[0]);
  return {
    keys,
    nodes,
    payloads,
    async [Symbol.asyncDispose]() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

/** Makes `node` answer every payload request with `answer(acceptBulk)`, whatever was asked. */
async function scriptProvider(
  node: P2PNode,
  answer: (acceptBulk: boolean) => Uint8Array[],
): Promise<void> {
  await node.libp2p.unhandle(PAYLOAD_PROTOCOL);
  await node.libp2p.handle(PAYLOAD_PROTOCOL, async (stream: Stream) => {
    const reader = new StreamReader(stream);
    try {
      const request = decodeRequest((await reader.next())!);
      await sendChunked(stream, answer(request?.acceptBulk === true), YAMUX_FRAME_BYTES);
      await stream.close();
    } catch {
      // The fetcher cut the stream: that is the point.
    } finally {
      reader.release();
    }
  });
}

Deno.test({
  name: "an oversized result announcement is refused before a byte is fetched; honest ones flow",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const expectation = {
      layouts: chunkLayouts([{ name: "w", shape: [256, 256] }], { chunk: 64, topk: 8 }),
      quantize1bit: true,
    };
    await using run = await startP2PRun(expectation);
    const { honest, observer, attacker, step, batchOf, proofOf } = run;
    // The attacker serves 32 MiB of junk for its own batch and announces it, correctly signed
    // and committed: only the size gives it away.
    const expected = expectedResultBytes(expectation);
    const payload = junk(JUNK_BYTES, 1);
    const hash = attacker.payloads.provide(payload, { step });
    await attacker.gossip.publish({
      kind: "TrainingResult",
      step,
      proof: proofOf(2),
      batch: batchOf(2),
      commitment: commitmentHash({ step, batch: batchOf(2), payload }),
      contentHash: hashToBytes(hash),
      payloadSize: payload.length,
    });
    const size = await honest.results.publishResult(
      0,
      proofOf(0),
      validResult(expectation, step, batchOf(0)),
    );
    assert.equal(size, expected);

    const tracker = observer.results.tracker(0)!;
    await waitFor("both announcements", () => tracker.announcements().length === 2, 10_000);
    await waitFor("downloads settled", () => observer.results.downloadsSettled(0), 10_000);
    assert.deepEqual(
      tracker.announcements().filter((a) => tracker.result(a.commitment)).map((a) => a.batch),
      [batchOf(0)],
      "the honest result verified",
    );
    assert.deepEqual(run.refusals, [{
      what: "TrainingResult",
      reason: "WrongPayloadSize",
      from: toHex(run.ids[2].p2pIdentity),
      detail: `result of batch [${batchOf(2).start}, ${batchOf(2).end}] announced ` +
        `${JUNK_BYTES} bytes, a result of this model is ${expected} bytes`,
    }]);
    assert.equal(
      observer.payloads.stats.receivedBytes,
      expected,
      "the observer downloaded the honest result and nothing of the attacker's",
    );
    assert.equal(attacker.payloads.stats.served, 0, "nobody asked the attacker for its junk");
    assert.equal(attacker.payloads.stats.bulkOffered, 0);
  },
});

Deno.test("a provider that declares the right size but streams more is cut at that size", async () => {
  const expected = 300_000;
  const content = junk(expected, 2);
  const hash = contentHash(content);
  const header = encodeResponseHeader({ status: "Ok", hash: hashToBytes(hash), length: expected });

  // In-band: the right header, then the content and 32 MiB more on the encrypted stream.
  {
    await using net = await services(2);
    const [provider, fetcher] = net.payloads;
    await scriptProvider(net.nodes[0], () => [header, content, junk(JUNK_BYTES, 3)]);
    await assert.rejects(
      fetcher.fetch(hash, { providers: [net.keys[0]], expectedSize: expected }),
      (e) =>
        e instanceof PayloadFetchError && e.attempts.length === 1 &&
        /sent more than the 300000 bytes it declared/.test(e.attempts[0].message),
    );
    const received = fetcher.stats.receivedBytes;
    assert.ok(
      received >= expected && received <= expected + YAMUX_FRAME_BYTES,
      `read ${received} bytes: the declared ${expected} and at most one frame more`,
    );
    assert.equal(provider.stats.served, 0);
  }

  // Bulk: an honest-looking offer, and a listener that sends the content and 32 MiB more.
  {
    await using net = await services(2, true);
    const [, fetcher] = net.payloads;
    await using listener = fakeBulkListener([
      encodeBulkResponseHeader({ status: "Ok", length: expected }),
      content,
      junk(JUNK_BYTES, 4),
    ]);
    const offer = encodeResponseHeader({
      status: "BulkOffer",
      hash: hashToBytes(hash),
      length: expected,
      ticket: new Uint8Array(32).fill(9),
      port: listener.port,
    });
    await scriptProvider(net.nodes[0], (acceptBulk) => acceptBulk ? [offer] : [header, content]);
    const got = await fetcher.fetch(hash, { providers: [net.keys[0]], expectedSize: expected });
    assert.deepEqual(got, content);
    assert.equal(fetcher.stats.bulkFetched, 1);
    assert.equal(fetcher.stats.receivedBytes, expected, "not one byte past the offer was read");
  }
});

Deno.test("a provider past its byte budget for the round is refused before it sends", async () => {
  await using net = await services(2);
  const [provider, fetcher] = net.payloads;
  const size = 100_000;
  const hashes = [1, 2, 3, 4].map((seed) =>
    provider.provide(junk(size, seed), { name: `p${seed}` })
  );
  const budget = { round: 5, bytesPerPeer: 2.5 * size };
  const fetch = (i: number, round = 5) =>
    fetcher.fetch(hashes[i], {
      providers: [net.keys[0]],
      expectedSize: size,
      budget: { ...budget, round },
    });
  await fetch(0);
  await fetch(1);
  assert.equal(fetcher.budgetSpent(net.keys[0], 5), 2 * size);
  const overBudget = (e: unknown) =>
    e instanceof PayloadFetchError && e.attempts.length === 1 &&
    e.attempts[0].code === "over-budget" &&
    /already made us download 200000 bytes in round 5: 100000 more would pass its 250000-byte/
      .test(e.attempts[0].message);
  await assert.rejects(fetch(2), overBudget);
  assert.equal(provider.stats.served, 2, "the third request was never sent");
  // Without a size known in advance the header's length is charged, before the content is read.
  const received = fetcher.stats.receivedBytes;
  await assert.rejects(
    fetcher.fetchNamed("p3", { providers: [net.keys[0]], budget }),
    overBudget,
  );
  assert.equal(fetcher.stats.receivedBytes, received, "no content byte was read");
  // The next round has a fresh budget; forgetting old rounds frees their records.
  assert.equal((await fetch(2, 6)).length, size);
  fetcher.forgetBefore(6);
  assert.equal(fetcher.budgetSpent(net.keys[0], 5), 0);
});

Deno.test("a manifest whose tensor sizes disagree with the config is refused before fetching", async () => {
  await using net = await services(2);
  const [liar, joiner] = net.payloads;
  const model = tinyModel(5);
  const blobs = modelToBlobs(model);
  // The liar serves the real config, but lists (and serves) one tensor at 8 MiB.
  const [name, tensor, dtype] = blobs.find(([, , d]) => d === "f32")!;
  const big = new Uint8Array(8 * 1024 * 1024);
  const label = { step: 1, digest: new Uint8Array(32).fill(1) };
  shareModel(liar, blobs.map(([n, bytes, d]) => [n, n === name ? big : bytes, d]), label);
  await assert.rejects(
    fetchModel(joiner, {
      providers: [net.keys[0]],
      step: 1,
      expectedDigest: null,
      manifestTimeoutMs: 3000,
    }),
    (e) =>
      e instanceof ManifestSizeError && e.blob === name &&
      e.message ===
        `Model manifest refused: it lists "${name}" at ${big.length} bytes (${dtype}), the ` +
          `model's config makes it ${tensor.length} (${tensor.length / 4} elements)`,
  );
  const configBytes = blobs.find(([n]) => n === CONFIG_BLOB)![1].length;
  const manifestBytes = liar.store.get(liar.store.hashOfName("psyche/model-manifest")!)!.length;
  // The manifest (asked for by name, then by its agreed hash) and the config, nothing more.
  assert.equal(joiner.stats.receivedBytes, 2 * manifestBytes + configBytes);
  assert.equal(liar.stats.served, 3);
  assert.ok(joiner.stats.receivedBytes < 64 * 1024);
});
