import assert from "node:assert/strict";
import { seededBytes } from "../testing/seeded_bytes.ts";
import type { Stream } from "@libp2p/interface";
import { createP2PNode, type P2PNode } from "./node.ts";
import { PayloadService, type PayloadServiceOptions } from "./payload_service.ts";
import { sendChunked } from "./payload_stream.ts";
import { PayloadFetchError } from "./fallback.ts";
import { abortableSleep } from "../mod.ts";
import { contentHash, hashFromBytes, hashToBytes } from "./content_store.ts";
import {
  decodeRequest,
  encodeResponseHeader,
  FLAG_ACCEPT_BULK,
  FLAG_FROM_OFFSET,
  PAYLOAD_PROTOCOL,
} from "./payload_wire.ts";
import { encodeBulkResponseHeader } from "./bulk_wire.ts";
import { StreamReader } from "./stream_reader.ts";
import { fakeBulkListener, testPublic, testSecret } from "../../client/testing/p2p.ts";

const FAST_RETRY = { attemptTimeoutMs: 2000, retries: 1, backoffMs: 10, maxBackoffMs: 10 };

interface Peer {
  node: P2PNode;
  payloads: PayloadService;
}

/** `count` connected participants that all allow each other, each running the payload service. */
async function swarm(
  count: number,
  options: PayloadServiceOptions | ((index: number) => PayloadServiceOptions) = {},
): Promise<Peer[] & AsyncDisposable> {
  const keys = Array.from({ length: count }, (_, i) => testPublic(i + 1));
  const peers: Peer[] = [];
  for (let i = 0; i < count; i++) {
    const node = await createP2PNode({ secretKey: testSecret(i + 1), allowedPeers: keys });
    peers.push({
      node,
      payloads: await PayloadService.start(node, {
        retry: FAST_RETRY,
        ...(typeof options === "function" ? options(i) : options),
      }),
    });
  }
  for (let i = 1; i < count; i++) await peers[i].node.connect(peers[0].node.addresses()[0]);
  // Let everyone learn everyone's address so any pair can dial.
  for (let i = 1; i < count; i++) {
    for (let j = 1; j < count; j++) {
      if (i !== j) {
        await peers[i].node.addPeerAddresses(peers[j].node.publicKey, peers[j].node.addresses());
      }
    }
  }
  return Object.assign(peers, {
    async [Symbol.asyncDispose]() {
      await Promise.all(peers.map((p) => p.node.stop()));
    },
  });
}

Deno.test("fetch from a provider returns the verified bytes, and names work too", async () => {
  await using peers = await swarm(2);
  const [a, b] = peers;
  const payload = seededBytes(3 * 1024 * 1024 + 17, 1); // several chunks, odd tail
  const hash = a.payloads.provide(payload, { step: 4, name: "result-4" });
  const got = await b.payloads.fetch(hash, {
    providers: [a.node.publicKey],
    expectedSize: payload.length,
  });
  assert.equal(contentHash(got), hash);
  assert.deepEqual(got, payload);
  const named = await b.payloads.fetchNamed("result-4", { providers: [a.node.publicKey] });
  assert.equal(named.hash, hash);
  assert.equal(a.payloads.stats.served, 2);
  assert.equal(b.payloads.stats.fetchedBytes, 2 * payload.length);
  const empty = a.payloads.provide(new Uint8Array(0));
  assert.equal((await b.payloads.fetch(empty, { providers: [a.node.publicKey] })).length, 0);
});

Deno.test("fetch falls back when the first provider is gone or lacks the content", async () => {
  await using peers = await swarm(4);
  const [a, b, c, d] = peers;
  const payload = seededBytes(100_000, 2);
  const hash = c.payloads.provide(payload);
  b.payloads.provide(payload);
  await b.node.stop(); // gone
  // a has nothing, b is gone, c has it.
  const got = await d.payloads.fetch(hash, {
    providers: [a.node.publicKey, b.node.publicKey, c.node.publicKey],
  });
  assert.deepEqual(got, payload);
  assert.equal(d.payloads.stats.failedAttempts, 2);
});

Deno.test("a fetch's own retry settings go over the service's", async () => {
  // The service gives up after one round; this fetch goes round again 200 ms later.
  await using peers = await swarm(2, { retry: { ...FAST_RETRY, retries: 0 } });
  const [a, b] = peers;
  const payload = seededBytes(1000, 5);
  const hash = contentHash(payload);
  const fetching = b.payloads.fetch(hash, {
    providers: [a.node.publicKey],
    retry: { retries: 1, backoffMs: 200 },
  });
  // a lacks it at first (a trainer's peer asked before it downloaded the result), then has it.
  while (b.payloads.stats.failedAttempts === 0) await abortableSleep(1);
  a.payloads.provide(payload);
  assert.deepEqual(await fetching, payload);
  await assert.rejects(
    b.payloads.fetch(contentHash(seededBytes(1000, 6)), { providers: [a.node.publicKey] }),
    PayloadFetchError,
    "without its own settings a fetch goes round once, as the service says",
  );
  assert.equal(b.payloads.stats.failedAttempts, 2);
});

Deno.test("a provider serving bytes that do not match the hash is rejected and marked bad", async () => {
  await using peers = await swarm(3);
  const [honest, liar, fetcher] = peers;
  const payload = seededBytes(50_000, 3);
  const hash = honest.payloads.provide(payload);
  // The liar answers every request with the right header but corrupted content.
  await liar.node.libp2p.unhandle(PAYLOAD_PROTOCOL);
  await liar.node.libp2p.handle(PAYLOAD_PROTOCOL, async (stream: Stream) => {
    const reader = new StreamReader(stream);
    const request = decodeRequest((await reader.next())!);
    assert.equal(request?.kind, "ByHash");
    const corrupted = payload.slice();
    corrupted[12_345] ^= 1;
    const header = encodeResponseHeader({
      status: "Ok",
      hash: hashToBytes(hash),
      length: corrupted.length,
    });
    await sendChunked(stream, [header, corrupted], 16_384);
    await stream.close();
  });
  const got = await fetcher.payloads.fetch(hash, {
    providers: [liar.node.publicKey, honest.node.publicKey],
  });
  assert.deepEqual(got, payload);
  assert.deepEqual(fetcher.payloads.badProviders(), [liar.node.peerId.toString()]);
  // Next time the liar is not asked at all: only the liar offered means no usable provider.
  const error = await fetcher.payloads.fetch("ab".repeat(32), { providers: [liar.node.publicKey] })
    .catch((e) => e);
  assert.ok(error instanceof PayloadFetchError);
  assert.match(error.message, /no usable provider/);
});

Deno.test("oversized responses are refused before their content is read", async () => {
  // bytesPerRttMs 0: every offer is welcome, however slow the loopback is under load.
  await using peers = await swarm(2, { bulk: { bytesPerRttMs: 0 } });
  const [a, b] = peers;
  const payload = seededBytes(2 * 1024 * 1024, 4);
  const hash = a.payloads.provide(payload);
  const tooBig = await b.payloads.fetch(hash, {
    providers: [a.node.publicKey],
    maxBytes: 1024 * 1024,
  }).catch((e) => e);
  assert.ok(tooBig instanceof PayloadFetchError);
  assert.deepEqual(new Set(tooBig.attempts.map((x) => x.code)), new Set(["too-large"]));
  assert.match(tooBig.attempts[0].message, /declares 2097152 bytes, the limit is 1048576/);
  const wrongSize = await b.payloads.fetch(hash, {
    providers: [a.node.publicKey],
    expectedSize: payload.length - 1,
  }).catch((e) => e);
  assert.ok(wrongSize instanceof PayloadFetchError);
  assert.match(wrongSize.attempts[0].message, /2097151 were announced/);
  // Both were refused at the (bulk) offer, before a byte of content moved.
  assert.equal(a.payloads.stats.bulkOffered, 2 * (1 + FAST_RETRY.retries));
  assert.equal(a.payloads.stats.servedBytes, 0);
  await assert.rejects(
    () => b.payloads.fetch(hash, { providers: [a.node.publicKey], expectedSize: 10, maxBytes: 5 }),
    RangeError,
  );
});

Deno.test("parallel fetches all complete, no more than maxConcurrentDownloads at once", async () => {
  await using peers = await swarm(3, { maxConcurrentDownloads: 2 });
  const [a, b, c] = peers;
  const payloads = Array.from({ length: 8 }, (_, i) => seededBytes(256 * 1024 + i, 10 + i));
  const hashes = payloads.map((p, i) => (i % 2 === 0 ? a : b).payloads.provide(p, { step: 1 }));
  const got = await Promise.all(
    hashes.map((h) => c.payloads.fetch(h, { providers: [a.node.publicKey, b.node.publicKey] })),
  );
  got.forEach((bytes, i) => assert.deepEqual(bytes, payloads[i]));
  assert.equal(c.payloads.stats.peakConcurrentDownloads, 2);
  assert.equal(c.payloads.stats.fetched, 8);
});

Deno.test("forgotten content is no longer served; fetched content can be re-provided", async () => {
  await using peers = await swarm(3);
  const [a, b, c] = peers;
  const old = a.payloads.provide(seededBytes(1000, 5), { step: 1 });
  const recent = a.payloads.provide(seededBytes(1000, 6), { step: 3 });
  assert.equal(a.payloads.forgetBefore(2), 1);
  const gone = await b.payloads.fetch(old, { providers: [a.node.publicKey] }).catch((e) => e);
  assert.ok(gone instanceof PayloadFetchError);
  assert.equal(gone.attempts[0].code, "not-found");
  await b.payloads.fetch(recent, { providers: [a.node.publicKey], provideAs: { step: 3 } });
  a.payloads.forget([recent]);
  // c gets it from b, who re-provided what it fetched.
  const got = await c.payloads.fetch(recent, { providers: [a.node.publicKey, b.node.publicKey] });
  assert.equal(contentHash(got), recent);
});

Deno.test("an aborted fetch rejects with the caller's reason", async () => {
  await using peers = await swarm(2);
  const [a, b] = peers;
  const hash = a.payloads.provide(seededBytes(1000, 7));
  const controller = new AbortController();
  controller.abort(new Error("round ended"));
  await assert.rejects(
    () => b.payloads.fetch(hash, { providers: [a.node.publicKey], signal: controller.signal }),
    /round ended/,
  );
});

Deno.test("a provider answers a malformed request with BadRequest and drops a silent one", async () => {
  await using peers = await swarm(2, { requestTimeoutMs: 200 });
  const [a, b] = peers;
  const bad = await b.node.libp2p.dialProtocol(a.node.peerId, PAYLOAD_PROTOCOL);
  const badReader = new StreamReader(bad);
  bad.send(Uint8Array.of(2, 0, 9)); // version 2, no flags, unknown kind 9
  await bad.close();
  assert.deepEqual([...(await badReader.next())!], [2]); // status BadRequest
  assert.equal(await badReader.next(), undefined);
  assert.equal(a.payloads.stats.badRequests, 1);
  // A requester that never completes its request is cut off after requestTimeoutMs.
  const silent = await b.node.libp2p.dialProtocol(a.node.peerId, PAYLOAD_PROTOCOL);
  const silentReader = new StreamReader(silent);
  silent.send(Uint8Array.of(2)); // version only
  const stopWaiting = new AbortController();
  const outcome = await Promise.race([
    silentReader.next().then(() => "ended", () => "reset"),
    abortableSleep(3000, stopWaiting.signal).then(() => "still open after 3 s", () => "cancelled"),
  ]);
  stopWaiting.abort();
  assert.equal(outcome, "reset");
});

Deno.test("large content moves over the bulk path, small content in-band", async () => {
  await using peers = await swarm(2, { bulk: { minBytes: 1024 * 1024 } });
  const [a, b] = peers;
  const large = seededBytes(2 * 1024 * 1024 + 5, 20);
  const small = seededBytes(64 * 1024, 21);
  const largeHash = a.payloads.provide(large, { name: "large" });
  const smallHash = a.payloads.provide(small);
  const providers = [a.node.publicKey];
  assert.deepEqual(
    await b.payloads.fetch(largeHash, { providers, expectedSize: large.length }),
    large,
  );
  assert.deepEqual(await b.payloads.fetch(smallHash, { providers }), small);
  assert.deepEqual(await b.payloads.fetchNamed("large", { providers }), {
    hash: largeHash,
    bytes: large,
  });
  assert.equal(b.payloads.stats.bulkFetched, 2);
  assert.equal(b.payloads.stats.fetched, 3);
  assert.deepEqual(b.payloads.stats.bulkFallbacks, {});
  const served = a.payloads.stats;
  assert.equal(served.bulkOffered, 2);
  assert.equal(served.bulkServed, 2);
  assert.equal(served.served, 3);
  assert.equal(served.servedBytes, 2 * large.length + small.length);
});

Deno.test("an unreachable bulk listener falls back to the in-band stream", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = probe.addr.port;
  probe.close();
  await using peers = await swarm(2, { bulk: { minBytes: 0, advertisePort: closedPort } });
  const [a, b] = peers;
  const payload = seededBytes(200_000, 22);
  const hash = a.payloads.provide(payload);
  assert.deepEqual(await b.payloads.fetch(hash, { providers: [a.node.publicKey] }), payload);
  assert.deepEqual(b.payloads.stats.bulkFallbacks, { unreachable: 1 });
  assert.equal(b.payloads.stats.bulkFetched, 0);
  assert.equal(b.payloads.stats.failedAttempts, 0);
  assert.equal(a.payloads.stats.bulkOffered, 1);
  // b stops accepting offers from a, until clearBadProviders (a new epoch) gives it a new try.
  const other = a.payloads.provide(seededBytes(200_000, 27));
  await b.payloads.fetch(other, { providers: [a.node.publicKey] });
  assert.equal(a.payloads.stats.bulkOffered, 1);
  b.payloads.clearBadProviders();
  await b.payloads.fetch(hash, { providers: [a.node.publicKey] });
  assert.equal(a.payloads.stats.bulkOffered, 2);
  assert.deepEqual(b.payloads.stats.bulkFallbacks, { unreachable: 2 });
});

Deno.test("bytes tampered on the bulk path fall back in-band and do not mark the provider bad", async () => {
  const payload = seededBytes(300_000, 23);
  const tampered = payload.slice();
  tampered[99_999] ^= 1;
  const header = encodeBulkResponseHeader({ status: "Ok", length: payload.length });
  await using tamperer = fakeBulkListener([header, tampered]);
  await using peers = await swarm(2, { bulk: { minBytes: 0, advertisePort: tamperer.port } });
  const [a, b] = peers;
  const hash = a.payloads.provide(payload);
  assert.deepEqual(await b.payloads.fetch(hash, { providers: [a.node.publicKey] }), payload);
  assert.deepEqual(b.payloads.stats.bulkFallbacks, { "hash-mismatch": 1 });
  assert.deepEqual(b.payloads.badProviders(), []);
});

Deno.test("bulk: false keeps every byte on the encrypted stream, on either side", async () => {
  // Peer 1 provides with bulk off; peer 2 fetches with bulk on; peer 3 fetches with bulk off
  // from peer 2, which provides with bulk on.
  await using peers = await swarm(
    3,
    (i) => (i === 1 ? { bulk: { minBytes: 0 } } : { bulk: false }),
  );
  const [a, b, c] = peers;
  assert.equal(a.payloads.bulkAddress, undefined);
  assert.equal(b.payloads.bulkAddress?.host, "127.0.0.1");
  const payload = seededBytes(200_000, 24);
  const hash = a.payloads.provide(payload);
  await b.payloads.fetch(hash, { providers: [a.node.publicKey], provideAs: {} });
  assert.equal(b.payloads.stats.bulkFetched, 0);
  assert.deepEqual(await c.payloads.fetch(hash, { providers: [b.node.publicKey] }), payload);
  assert.equal(b.payloads.stats.bulkOffered, 0);
  assert.equal(c.payloads.stats.bulkFetched, 0);
});

Deno.test("bad bulk options are refused by name, leaving nothing listening", async () => {
  await using node = await createP2PNode({ secretKey: testSecret(1) });
  await assert.rejects(
    () => PayloadService.start(node, { bulk: { minBytes: -1 } }),
    /bulk.minBytes must be a non-negative integer, found -1/,
  );
  await assert.rejects(
    () => PayloadService.start(node, { bulk: { advertisePort: 70_000 } }),
    /bulk.advertisePort must be an integer in 1..65535, found 70000/,
  );
  await assert.rejects(
    () => PayloadService.start(node, { bulk: { host: "not-an-address" } }),
    /Cannot start the bulk listener on not-an-address:0/,
  );
});

Deno.test("offers are declined when the payload is too small for the round trip", async () => {
  // An absurd bytesPerRttMs makes every measured round trip "far": once b has one answer from a,
  // it only accepts offers for payloads of unknown size.
  await using peers = await swarm(2, { bulk: { minBytes: 0, bytesPerRttMs: 1e12 } });
  const [a, b] = peers;
  const [x, y, z] = [30, 31, 32].map((seed) => seededBytes(100_000, seed));
  const providers = [a.node.publicKey];
  const expectedSize = 100_000;
  await b.payloads.fetch(a.payloads.provide(x), { providers, expectedSize }); // no round trip yet
  assert.equal(b.payloads.stats.bulkFetched, 1);
  await b.payloads.fetch(a.payloads.provide(y), { providers, expectedSize });
  assert.equal(b.payloads.stats.bulkFetched, 1);
  assert.equal(a.payloads.stats.bulkOffered, 1);
  await b.payloads.fetch(a.payloads.provide(z), { providers }); // size unknown
  assert.equal(b.payloads.stats.bulkFetched, 2);
});

/**
 * Replaces `peer`'s payload handler with one serving `content` by hash through `send`
 * (header and bytes to write as it likes); counts requests and the most served at once.
 */
async function handCrafted(
  peer: Peer,
  content: Map<string, Uint8Array>,
  send: (stream: Stream, header: Uint8Array, bytes: Uint8Array) => Promise<void>,
): Promise<{ requests: number; peak: number }> {
  const seen = { requests: 0, peak: 0 };
  let active = 0;
  await peer.node.libp2p.unhandle(PAYLOAD_PROTOCOL);
  await peer.node.libp2p.handle(PAYLOAD_PROTOCOL, async (stream: Stream) => {
    seen.requests++;
    seen.peak = Math.max(seen.peak, ++active);
    try {
      const reader = new StreamReader(stream);
      const request = decodeRequest((await reader.next())!);
      if (request?.kind !== "ByHash") throw new Error("a request by hash was expected");
      const body = content.get(hashFromBytes(request.hash))!;
      const header = encodeResponseHeader({
        status: "Ok",
        hash: request.hash,
        length: body.length,
      });
      await send(stream, header, body);
      await stream.close();
    } catch {
      // The fetcher gave up on us: nothing to do.
    } finally {
      active--;
    }
  }, { maxInboundStreams: 64 });
  return seen;
}

Deno.test("a slow provider that keeps sending outlives the stall timeout; a stalled one loses its place", async () => {
  const retry = { attemptTimeoutMs: 400, retries: 0, backoffMs: 10, maxBackoffMs: 10 };
  await using peers = await swarm(4, { retry, bulk: false });
  const [slow, stalled, honest, fetcher] = peers;
  const payload = seededBytes(192 * 1024, 21);
  const hash = honest.payloads.provide(payload);
  const content = new Map([[hash, payload]]);
  // 12 chunks 100 ms apart: 1.2 s in all, three times the stall timeout.
  await handCrafted(slow, content, async (stream, header, bytes) => {
    stream.send(header);
    for (let at = 0; at < bytes.length; at += 16 * 1024) {
      await abortableSleep(100);
      stream.send(bytes.subarray(at, at + 16 * 1024));
    }
  });
  const fromSlow = await fetcher.payloads.fetch(hash, { providers: [slow.node.publicKey] });
  assert.deepEqual(fromSlow, payload);
  // One chunk, then silence: the attempt stalls, and the honest provider serves instead.
  const stalls = await handCrafted(stalled, content, async (stream, header, bytes) => {
    stream.send(header);
    stream.send(bytes.subarray(0, 16 * 1024));
    await abortableSleep(10_000);
  });
  const providers = [stalled.node.publicKey, honest.node.publicKey];
  fetcher.payloads.forget([hash]);
  assert.deepEqual(await fetcher.payloads.fetch(hash, { providers, pinned: 2 }), payload);
  assert.equal(stalls.requests, 1);
  const figures = fetcher.payloads.providerFigures();
  assert.equal(figures.get(stalled.node.peerId.toString())?.failures, 1);
  assert.equal(figures.get(honest.node.peerId.toString())?.failures, 0);
  // Unpinned, the provider that stalled goes after the one that served.
  fetcher.payloads.forget([hash]);
  assert.deepEqual(await fetcher.payloads.fetch(hash, { providers }), payload);
  assert.equal(stalls.requests, 1, "the stalled provider was not asked first again");
  assert.deepEqual(
    fetcher.payloads.rankProviders([...providers, slow.node.publicKey], payload.length).providers,
    [honest.node.publicKey, slow.node.publicKey, stalled.node.publicKey],
  );
});

Deno.test("no more than maxDownloadsPerPeer transfers run at once from one provider", async () => {
  await using peers = await swarm(2, {
    maxConcurrentDownloads: 8,
    maxDownloadsPerPeer: 2,
    bulk: false,
  });
  const [provider, fetcher] = peers;
  const blobs = Array.from({ length: 6 }, (_, i) => seededBytes(4096 + i, 30 + i));
  const content = new Map(blobs.map((b) => [contentHash(b), b]));
  const served = await handCrafted(provider, content, async (stream, header, bytes) => {
    await abortableSleep(150);
    await sendChunked(stream, [header, bytes], 16_384);
  });
  const got = await Promise.all(
    [...content.keys()].map((h) =>
      fetcher.payloads.fetch(h, { providers: [provider.node.publicKey] })
    ),
  );
  got.forEach((bytes, i) => assert.deepEqual(bytes, blobs[i]));
  assert.equal(served.requests, 6);
  assert.equal(served.peak, 2);
  await assert.rejects(
    () => PayloadService.start(fetcher.node, { maxDownloadsPerPeer: 0 }),
    /maxDownloadsPerPeer must be a positive integer, found 0/,
  );
});

/**
 * Makes `peer` serve `payload` by hash whole-length but send only its first `prefix` bytes
 * (`corrupt` flips one of them), then hold the stream open without a byte until `hold` aborts.
 */
function stallsAfter(
  peer: Peer,
  payload: Uint8Array,
  options: { prefix: number; hold: AbortSignal; corrupt?: number },
): Promise<{ requests: number; peak: number }> {
  const sent = payload.slice(0, options.prefix);
  if (options.corrupt !== undefined) sent[options.corrupt] ^= 1;
  const content = new Map([[contentHash(payload), payload]]);
  return handCrafted(peer, content, async (stream, header) => {
    await sendChunked(stream, [header, sent], 64 * 1024);
    await abortableSleep(60_000, options.hold).catch(() => {});
  });
}

// A stall timeout well above any pause between local chunks, far below the test's patience.
const RESUME_RETRY = { attemptTimeoutMs: 1000, retries: 1, backoffMs: 10, maxBackoffMs: 10 };

Deno.test("a download stalled half-way goes on from its offset at the next provider", async () => {
  await using peers = await swarm(3, { retry: RESUME_RETRY, bulk: false });
  const [stalled, rest, fetcher] = peers;
  const hold = new AbortController();
  try {
    const payload = seededBytes(3 * 1024 * 1024 + 17, 41);
    const hash = rest.payloads.provide(payload);
    const prefix = 1024 * 1024 + 5;
    await stallsAfter(stalled, payload, { prefix, hold: hold.signal });
    const budget = { round: 3, bytesPerPeer: payload.length };
    const got = await fetcher.payloads.fetch(hash, {
      providers: [stalled.node.publicKey, rest.node.publicKey],
      pinned: 2,
      budget,
    });
    assert.deepEqual(got, payload);
    // The second provider was asked for the rest only, in-band, and sent only that.
    assert.equal(rest.payloads.stats.resumedServed, 1);
    assert.equal(rest.payloads.stats.servedBytes, payload.length - prefix);
    assert.equal(rest.payloads.stats.bulkOffered, 0);
    assert.equal(fetcher.payloads.stats.resumedFetches, 1);
    assert.equal(fetcher.payloads.stats.failedAttempts, 1);
    // Each provider's budget pays for what it was asked to send.
    assert.equal(fetcher.payloads.budgetSpent(stalled.node.publicKey, 3), payload.length);
    assert.equal(
      fetcher.payloads.budgetSpent(rest.node.publicKey, 3),
      payload.length - prefix,
    );
    assert.deepEqual(fetcher.payloads.badProviders(), []);
  } finally {
    hold.abort();
  }
});

Deno.test("content mixed from two providers that fails its hash is fetched whole, blaming nobody", async () => {
  await using peers = await swarm(3, { retry: RESUME_RETRY, bulk: false });
  const [liar, honest, fetcher] = peers;
  const hold = new AbortController();
  try {
    const payload = seededBytes(2 * 1024 * 1024 + 3, 42);
    const hash = honest.payloads.provide(payload);
    const prefix = 512 * 1024;
    await stallsAfter(liar, payload, { prefix, hold: hold.signal, corrupt: 777 });
    const got = await fetcher.payloads.fetch(hash, {
      providers: [liar.node.publicKey, honest.node.publicKey],
      pinned: 2,
    });
    assert.deepEqual(got, payload);
    assert.equal(fetcher.payloads.stats.resumeDiscards, 1);
    assert.equal(fetcher.payloads.stats.resumedFetches, 0, "the bytes returned came whole");
    // The honest provider sent the rest, then everything again.
    assert.equal(honest.payloads.stats.served, 2);
    assert.equal(honest.payloads.stats.resumedServed, 1);
    assert.equal(honest.payloads.stats.servedBytes, 2 * payload.length - prefix);
    // Who lied cannot be told from mixed content: nobody is marked bad.
    assert.deepEqual(fetcher.payloads.badProviders(), []);
  } finally {
    hold.abort();
  }
});

Deno.test("a rest that does not go with the bytes held starts the download over", async () => {
  // Under a name, providers may serve different content: the second provider's is shorter than
  // the prefix held (it answers BadOffset), or longer (its header disagrees with the prefix).
  for (const otherLength of [1000, 700_000]) {
    await using peers = await swarm(3, { retry: RESUME_RETRY, bulk: false });
    const [stalled, other, fetcher] = peers;
    const hold = new AbortController();
    try {
      const first = seededBytes(600_000, 43);
      const second = seededBytes(otherLength, 44);
      const prefix = 200_000;
      await stalled.node.libp2p.unhandle(PAYLOAD_PROTOCOL);
      await stalled.node.libp2p.handle(PAYLOAD_PROTOCOL, async (stream: Stream) => {
        const request = decodeRequest((await new StreamReader(stream).next())!);
        assert.deepEqual(request, { kind: "ByName", name: "w", acceptBulk: false, offset: 0 });
        const header = encodeResponseHeader({
          status: "Ok",
          hash: hashToBytes(contentHash(first)),
          length: first.length,
        });
        await sendChunked(stream, [header, first.subarray(0, prefix)], 64 * 1024);
        await abortableSleep(60_000, hold.signal).catch(() => {});
      });
      const hash = other.payloads.provide(second, { name: "w" });
      const got = await fetcher.payloads.fetchNamed("w", {
        providers: [stalled.node.publicKey, other.node.publicKey],
        pinned: 2,
      });
      assert.equal(got.hash, hash);
      assert.deepEqual(got.bytes, second);
      assert.equal(fetcher.payloads.stats.resumedFetches, 0);
      // Only the stall failed: the second provider was asked again within its attempt.
      assert.equal(fetcher.payloads.stats.failedAttempts, 1);
    } finally {
      hold.abort();
    }
  }
});

/** A bulk listener that sends the Ok header and the first `prefix` bytes of `payload`, then stalls. */
function bulkStallsAfter(payload: Uint8Array, prefix: number, options: { corrupt?: number } = {}) {
  const sent = payload.slice(0, prefix);
  if (options.corrupt !== undefined) sent[options.corrupt] ^= 1;
  const header = encodeBulkResponseHeader({ status: "Ok", length: payload.length });
  return fakeBulkListener([header, sent], { hold: true });
}

Deno.test("a bulk transfer stalled half-way goes on from its offset over the next provider's bulk path", async () => {
  const payload = seededBytes(3 * 1024 * 1024 + 17, 45);
  const prefix = 1024 * 1024 + 5;
  await using stalls = bulkStallsAfter(payload, prefix);
  // The first provider's offers name the stalling listener; the fetcher takes every offer.
  await using peers = await swarm(3, (i) => ({
    retry: RESUME_RETRY,
    bulk: i === 0 ? { minBytes: 0, advertisePort: stalls.port } : { minBytes: 0, bytesPerRttMs: 0 },
  }));
  const [stalled, rest, fetcher] = peers;
  const hash = stalled.payloads.provide(payload);
  rest.payloads.provide(payload);
  const got = await fetcher.payloads.fetch(hash, {
    providers: [stalled.node.publicKey, rest.node.publicKey],
    pinned: 2,
    expectedSize: payload.length,
    budget: { round: 3, bytesPerPeer: payload.length },
  });
  assert.deepEqual(got, payload);
  assert.deepEqual(stalls.requests.map((r) => r.offset), [0]);
  // The second provider was asked for the rest only, over its bulk listener, and sent only that.
  const served = rest.payloads.stats;
  assert.equal(served.bulkOffered, 1);
  assert.equal(served.bulkServed, 1);
  assert.equal(served.resumedServed, 1);
  assert.equal(served.servedBytes, payload.length - prefix);
  assert.equal(fetcher.payloads.budgetSpent(rest.node.publicKey, 3), payload.length - prefix);
  const fetched = fetcher.payloads.stats;
  assert.equal(fetched.bulkFetched, 1);
  assert.equal(fetched.resumedFetches, 1);
  assert.equal(fetched.failedAttempts, 1);
  assert.equal(fetched.receivedBytes, payload.length, "no byte came twice");
  assert.deepEqual(fetcher.payloads.badProviders(), []);
});

Deno.test("a prefix received over bulk is finished in-band, and one received in-band over bulk", async () => {
  const payload = seededBytes(2 * 1024 * 1024 + 9, 46);
  const prefix = 768 * 1024;
  const hash = contentHash(payload);
  const fetch = (fetcher: Peer, providers: Peer[]) =>
    fetcher.payloads.fetch(hash, {
      providers: providers.map((p) => p.node.publicKey),
      pinned: 2,
      expectedSize: payload.length,
    });
  {
    // Bulk, then in-band: the second provider has its bulk path off.
    await using stalls = bulkStallsAfter(payload, prefix);
    await using peers = await swarm(3, (i) => ({
      retry: RESUME_RETRY,
      bulk: i === 0
        ? { minBytes: 0, advertisePort: stalls.port }
        : i === 1
        ? false
        : { bytesPerRttMs: 0 },
    }));
    const [stalled, rest, fetcher] = peers;
    stalled.payloads.provide(payload);
    rest.payloads.provide(payload);
    assert.deepEqual(await fetch(fetcher, [stalled, rest]), payload);
    assert.equal(rest.payloads.stats.resumedServed, 1);
    assert.equal(rest.payloads.stats.servedBytes, payload.length - prefix);
    assert.equal(fetcher.payloads.stats.bulkFetched, 0);
    assert.equal(fetcher.payloads.stats.resumedFetches, 1);
    assert.equal(fetcher.payloads.stats.receivedBytes, payload.length);
  }
  {
    // In-band, then bulk.
    await using peers = await swarm(3, (i) => ({
      retry: RESUME_RETRY,
      bulk: { minBytes: 0, bytesPerRttMs: i === 2 ? 0 : undefined },
    }));
    const [stalled, rest, fetcher] = peers;
    const hold = new AbortController();
    try {
      await stallsAfter(stalled, payload, { prefix, hold: hold.signal });
      rest.payloads.provide(payload);
      assert.deepEqual(await fetch(fetcher, [stalled, rest]), payload);
      assert.equal(rest.payloads.stats.bulkServed, 1);
      assert.equal(rest.payloads.stats.resumedServed, 1);
      assert.equal(rest.payloads.stats.servedBytes, payload.length - prefix);
      assert.equal(fetcher.payloads.stats.bulkFetched, 1);
      assert.equal(fetcher.payloads.stats.resumedFetches, 1);
      assert.equal(fetcher.payloads.stats.receivedBytes, payload.length);
    } finally {
      hold.abort();
    }
  }
});

Deno.test("a corrupted bulk prefix fails the final hash and is fetched whole, blaming neither provider", async () => {
  const payload = seededBytes(2 * 1024 * 1024 + 3, 47);
  const prefix = 512 * 1024;
  await using stalls = bulkStallsAfter(payload, prefix, { corrupt: 777 });
  await using peers = await swarm(3, (i) => ({
    retry: RESUME_RETRY,
    bulk: i === 0 ? { minBytes: 0, advertisePort: stalls.port } : { minBytes: 0, bytesPerRttMs: 0 },
  }));
  const [liar, honest, fetcher] = peers;
  const hash = liar.payloads.provide(payload);
  honest.payloads.provide(payload);
  const got = await fetcher.payloads.fetch(hash, {
    providers: [liar.node.publicKey, honest.node.publicKey],
    pinned: 2,
  });
  assert.deepEqual(got, payload);
  const fetched = fetcher.payloads.stats;
  assert.equal(fetched.resumeDiscards, 1);
  assert.equal(fetched.resumedFetches, 0, "the bytes returned came whole");
  assert.deepEqual(fetched.bulkFallbacks, { "hash-mismatch": 1 });
  assert.equal(fetched.failedAttempts, 1);
  // The honest provider sent the rest over bulk, then everything again in-band.
  const served = honest.payloads.stats;
  assert.equal(served.served, 2);
  assert.equal(served.bulkServed, 1);
  assert.equal(served.resumedServed, 1);
  assert.equal(served.servedBytes, 2 * payload.length - prefix);
  assert.deepEqual(fetcher.payloads.badProviders(), []);
});

Deno.test("a provider from before bulk offers for a rest is asked for the whole content", async () => {
  const payload = seededBytes(1024 * 1024 + 1, 48);
  const hash = contentHash(payload);
  await using peers = await swarm(3, (i) => ({
    retry: RESUME_RETRY,
    bulk: { bytesPerRttMs: i === 2 ? 0 : undefined },
  }));
  const [stalled, old, fetcher] = peers;
  const hold = new AbortController();
  try {
    await stallsAfter(stalled, payload, { prefix: 300_000, hold: hold.signal });
    // Its decoder refused the two flags together, as every provider did before this change.
    const flags: number[] = [];
    await old.node.libp2p.unhandle(PAYLOAD_PROTOCOL);
    await old.node.libp2p.handle(PAYLOAD_PROTOCOL, async (stream: Stream) => {
      const request = (await new StreamReader(stream).next())!;
      flags.push(request[1]);
      const answer = request[1] === (FLAG_ACCEPT_BULK | FLAG_FROM_OFFSET)
        ? [encodeResponseHeader({ status: "BadRequest" })]
        : [
          encodeResponseHeader({ status: "Ok", hash: hashToBytes(hash), length: payload.length }),
          payload,
        ];
      await sendChunked(stream, answer, 64 * 1024);
      await stream.close();
    });
    const got = await fetcher.payloads.fetch(hash, {
      providers: [stalled.node.publicKey, old.node.publicKey],
      pinned: 2,
      expectedSize: payload.length,
    });
    assert.deepEqual(got, payload);
    assert.deepEqual(flags, [FLAG_ACCEPT_BULK | FLAG_FROM_OFFSET, 0]);
    assert.equal(fetcher.payloads.stats.resumedFetches, 0);
    assert.equal(fetcher.payloads.stats.failedAttempts, 1, "only the stall failed");
    assert.deepEqual(fetcher.payloads.badProviders(), []);
  } finally {
    hold.abort();
  }
});
