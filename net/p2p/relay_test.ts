/**
 * Peers that meet through the run's circuit relay (net/p2p/relay.ts): a client that holds a
 * reservation is reached at its `/p2p-circuit` address, payloads cross the relayed connection
 * in-band (the bulk path needs a dialable provider), and a key that is not a member of the
 * run is refused by the relay.
 */
import assert from "node:assert/strict";
import { multiaddr } from "@multiformats/multiaddr";
import { peerIdFromString } from "@libp2p/peer-id";
import { createP2PNode, type P2PNode } from "./node.ts";
import { PayloadService } from "./payload_service.ts";
import { isRelayed } from "./reachability.ts";
import { peerIdOf } from "./identity.ts";
import { startDelayProxy } from "../testing/delay_proxy.ts";
import { type Relay, type RelayOptions, startRelay } from "./mod.ts";
import { testPublic, testSecret } from "../../client/testing/p2p.ts";
import { toHex } from "../../common/mod.ts";
import { type BoundSocket, connectFrom } from "../testing/bound_socket.ts";

const members = new Set([1, 2].map((i) => toHex(testPublic(i))));
const FAST_RETRY = { attemptTimeoutMs: 5000, retries: 1, backoffMs: 10, maxBackoffMs: 10 };

async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 10_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A relay on loopback serving the test keys 1 and 2, with more options when given. */
function membersRelay(options: Partial<RelayOptions> = {}): Promise<Relay> {
  return startRelay({
    host: "127.0.0.1",
    port: 0,
    isMember: (key) => members.has(key),
    maxReservations: 4,
    ...options,
  });
}

const relayedAddress = (node: P2PNode) => node.addresses().map(String).find(isRelayed);

Deno.test("a peer reached only through the relay serves its payload over the relayed connection", async () => {
  const relay = await membersRelay();
  const allowed = [testPublic(1), testPublic(2)];
  const a = await createP2PNode({ secretKey: testSecret(1), allowedPeers: allowed });
  const b = await createP2PNode({ secretKey: testSecret(2), allowedPeers: allowed });
  try {
    const served = await PayloadService.start(a, { retry: FAST_RETRY, bulk: { minBytes: 1 } });
    const fetcher = await PayloadService.start(b, { retry: FAST_RETRY, bulk: { minBytes: 1 } });
    assert.deepEqual(await a.setRelays(relay.addresses()), []);
    await waitFor("a's reservation", () => relayedAddress(a) !== undefined);
    assert.equal(relay.reservations(), 1);
    assert.deepEqual(a.relays(), { count: 1, addresses: relay.addresses(), connected: 1 });

    // b knows a only by its relayed address, as a peer behind NAT would be known.
    assert.deepEqual(await b.setRelays(relay.addresses()), []);
    await b.addPeerAddresses(a.publicKey, [relayedAddress(a)!]);
    await b.connectTo(a.publicKey);
    const via = b.libp2p.getConnections(a.peerId).map((c) => c.remoteAddr.toString());
    assert.ok(via.every(isRelayed), `b reached a through the relay only: ${via}`);

    const payload = crypto.getRandomValues(new Uint8Array(60_000));
    const big = new Uint8Array(3 * 1024 * 1024 + 7).map((_, i) => (i * 31) & 0xff);
    const hashes = [served.provide(payload), served.provide(big)];
    assert.deepEqual(await fetcher.fetch(hashes[0], { providers: [a.publicKey] }), payload);
    assert.deepEqual(await fetcher.fetch(hashes[1], { providers: [a.publicKey] }), big);
    // Never offered the bulk path: a relayed provider cannot be dialled for it.
    assert.equal(fetcher.stats.bulkFetched, 0);
    assert.deepEqual(fetcher.stats.bulkFallbacks, {});
  } finally {
    await Promise.all([a.stop(), b.stop()]);
    await relay.close();
  }
});

Deno.test("the relay refuses a key that is not a member, and holds no slot for it", async () => {
  const relay = await membersRelay();
  const stranger = await createP2PNode({ secretKey: testSecret(9), allowedPeers: [] });
  try {
    const failures = await stranger.setRelays(relay.addresses());
    // The stranger may see its dial succeed before the relay's gate closes it; either way it
    // gets no reservation and no relayed address.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(relay.reservations(), 0);
    assert.equal(relayedAddress(stranger), undefined);
    assert.ok(relay.stats.refusedNonMembers >= 1, "the relay counted the refusal");
    assert.ok(failures.length <= 1);
    assert.equal(relay.connections(), 0);
  } finally {
    await stranger.stop();
    await relay.close();
  }
});

Deno.test("a relay address without its peer id is refused by name", async () => {
  await using node = await createP2PNode({ secretKey: testSecret(1) });
  await assert.rejects(
    () => node.setRelays(["/ip4/127.0.0.1/tcp/9"]),
    /relay "\/ip4\/127.0.0.1\/tcp\/9" must end in \/p2p\/<relay peer id>/,
  );
});

Deno.test("a participant is found through the relay with no address of its own", async () => {
  const relay = await membersRelay();
  const a = await createP2PNode({ secretKey: testSecret(1) });
  const b = await createP2PNode({ secretKey: testSecret(2) });
  try {
    await a.setRelays(relay.addresses());
    await b.setRelays(relay.addresses());
    await waitFor("a's reservation", () => relayedAddress(a) !== undefined);
    // The epoch's client list arrives: b knows a's key, never an address of a's.
    assert.equal(await b.knowsAddresses(a.publicKey), false);
    await b.setAllowedPeers([a.publicKey, b.publicKey]);
    await a.setAllowedPeers([a.publicKey, b.publicKey]);
    assert.equal(await b.knowsAddresses(a.publicKey), true);
    await b.connectTo(a.publicKey);
    assert.ok(b.isConnected(a.publicKey));
  } finally {
    await Promise.all([a.stop(), b.stop()]);
    await relay.close();
  }
});

Deno.test("idle sockets from 300 addresses cannot keep a member from its reservation", async () => {
  // The member connects from 127.0.0.1, the one address with a coordinator session here.
  const relay = await membersRelay({ allowAddress: (ip) => ip === "127.0.0.1" });
  const port = Number(relay.addresses()[0].split("/")[4]);
  const idle: BoundSocket[] = [];
  const member = await createP2PNode({ secretKey: testSecret(1) });
  try {
    for (let i = 0; i < 300; i++) {
      const from = `127.0.${1 + (i >> 8)}.${(i & 255) + 2}`;
      await connectFrom(from, "127.0.0.1", port).then((s) => idle.push(s), () => {});
    }
    assert.deepEqual(await member.setRelays(relay.addresses()), []);
    await waitFor("the member's reservation", () => relayedAddress(member) !== undefined);
    assert.equal(relay.reservations(), 1);
    assert.ok(
      relay.stats.refusedAddresses >= 290,
      `sockets closed on accept: ${relay.stats.refusedAddresses}`,
    );
  } finally {
    for (const socket of idle) socket.close();
    await member.stop();
    await relay.close();
  }
});

Deno.test("a relay the run no longer names is dropped; the new one takes its place", async () => {
  const first = await membersRelay();
  const second = await membersRelay();
  const a = await createP2PNode({ secretKey: testSecret(1) });
  try {
    await a.setRelays(first.addresses());
    await waitFor("a reservation on the first relay", () => first.reservations() === 1);
    // The coordinator restarted with a relay of a new identity.
    assert.deepEqual(await a.setRelays(second.addresses()), []);
    await waitFor("a reservation on the second relay", () => second.reservations() === 1);
    assert.equal(a.allowlist.isRelay(first.peerId), false, "the old relay left the gate");
    await waitFor("the old relay's connection to close", () => first.connections() === 0);
    assert.deepEqual(a.relays(), { count: 1, addresses: second.addresses(), connected: 1 });
    await waitFor(
      "a relayed address through the new relay",
      () => relayedAddress(a)?.includes(second.peerId.toString()) === true,
    );
  } finally {
    await a.stop();
    await Promise.all([first.close(), second.close()]);
  }
});

Deno.test("a reservation on a relay the run did not name opens a path through it to every participant", async () => {
  // As when the run's relay died and a public client's relay took its place: b reserves where
  // the run named it to, a only on a relay it happened to connect to.
  const relay = await membersRelay();
  const allowed = [testPublic(1), testPublic(2)];
  const a = await createP2PNode({ secretKey: testSecret(1), allowedPeers: allowed });
  const b = await createP2PNode({ secretKey: testSecret(2), allowedPeers: allowed });
  try {
    await b.setRelays(relay.addresses());
    await waitFor("b's reservation", () => relayedAddress(b) !== undefined);
    assert.equal(await a.knowsAddresses(b.publicKey), false, "a knows no address of b");
    a.allowlist.addRelay(relay.peerId);
    await a.libp2p.dial(relay.addresses().map((addr) => multiaddr(addr)));
    await waitFor("a's reservation", () => relayedAddress(a) !== undefined);
    assert.equal(a.relays().count, 0, "the run named no relay to a");
    await waitFor("a path to b through a's relay", () => a.knowsAddresses(b.publicKey));
    await a.connectTo(b.publicKey);
    assert.ok(a.isConnected(b.publicKey));
  } finally {
    await Promise.all([a.stop(), b.stop()]);
    await relay.close();
  }
});

Deno.test("a peer reached through the relay is upgraded to a direct connection at an address it announced", async () => {
  const relay = await membersRelay();
  const allowed = [testPublic(1), testPublic(2)];
  const a = await createP2PNode({ secretKey: testSecret(1), allowedPeers: allowed });
  const b = await createP2PNode({ secretKey: testSecret(2), allowedPeers: allowed });
  try {
    await a.setRelays(relay.addresses());
    await b.setRelays(relay.addresses());
    await waitFor("a's reservation", () => relayedAddress(a) !== undefined);
    await b.addPeerAddresses(a.publicKey, [relayedAddress(a)!]);
    await b.connectTo(a.publicKey);
    const routes = () =>
      b.libp2p.getConnections(a.peerId).map((c) => isRelayed(String(c.remoteAddr)));
    assert.deepEqual(routes(), [true], "reached through the relay only");
    // a's direct address arrives (the run's gossip carries it): b dials it and leaves the relay.
    const direct = a.addresses().map(String).filter((x) => !isRelayed(x));
    await b.addPeerAddresses(a.publicKey, direct);
    assert.deepEqual(await b.upgradeRelayed(), [a.peerId.toString()]);
    await waitFor("the relayed connection to close", () => routes().every((r) => !r));
    assert.ok(b.isConnected(a.publicKey));
  } finally {
    await Promise.all([a.stop(), b.stop()]);
    await relay.close();
  }
});

Deno.test("a peer's own announcement replaces what it announced before; relay paths and an operator's address stay", async () => {
  const relay = await membersRelay();
  const allowed = [testPublic(1), testPublic(2)];
  const b = await createP2PNode({ secretKey: testSecret(2), allowedPeers: allowed });
  try {
    await b.setRelays(relay.addresses());
    const held = async () =>
      (await b.libp2p.peerStore.get(peerIdOf(testPublic(1)))).addresses
        .map((x) => x.multiaddr.toString()).sort();
    const bootstrap = "/dns4/peer-1.example/tcp/4001";
    const runRelayPath = `${relay.addresses()[0]}/p2p-circuit`;
    const otherRelay =
      "/ip4/11.77.1.9/tcp/9/p2p/12D3KooWPjceQrSwdWXPyLLeABRXmuqt69Rg3sBYbU1Nft9HyQ6X";
    await b.addPeerAddresses(testPublic(1), [bootstrap]);
    // First announced before peer 1 knew it was behind NAT: its private address with a path.
    await b.setAnnouncedAddresses(testPublic(1), [
      "/ip4/10.78.1.2/tcp/4001",
      `${otherRelay}/p2p-circuit`,
    ]);
    assert.deepEqual(
      await held(),
      ["/ip4/10.78.1.2/tcp/4001", `${otherRelay}/p2p-circuit`, bootstrap, runRelayPath].sort(),
    );
    // Then its relayed path only: the private address goes, and would hang a dial if dialled.
    await b.setAnnouncedAddresses(testPublic(1), [`${otherRelay}/p2p-circuit`]);
    assert.deepEqual(await held(), [`${otherRelay}/p2p-circuit`, bootstrap, runRelayPath].sort());
  } finally {
    await b.stop();
    await relay.close();
  }
});

Deno.test("a relay that goes silent (its machine died: no reset) is dropped by the probe, and its reservation with it", async () => {
  const relay = await membersRelay();
  const relayPort = Number(/\/tcp\/(\d+)\//.exec(relay.addresses()[0])![1]);
  await using proxy = startDelayProxy({
    listen: { hostname: "127.0.0.1", port: 0 },
    target: { hostname: "127.0.0.1", port: relayPort },
    delayMs: 0,
  });
  const throughProxy = relay.addresses()[0].replace(`/tcp/${relayPort}/`, `/tcp/${proxy.port}/`);
  const allowed = [testPublic(1), testPublic(2)];
  const probe = { intervalMs: 100, minTimeoutMs: 400, maxTimeoutMs: 400 };
  const a = await createP2PNode({
    secretKey: testSecret(1),
    allowedPeers: allowed,
    relayProbe: probe,
  });
  try {
    assert.deepEqual(await a.setRelays([throughProxy]), []);
    await waitFor("a's reservation", () => relayedAddress(a) !== undefined);
    // Alive, it answers every probe: many intervals pass and the connection stays.
    await new Promise((r) => setTimeout(r, 10 * probe.intervalMs));
    assert.equal(a.relays().connected, 1, "a live relay is kept");
    assert.ok(relayedAddress(a) !== undefined);
    proxy.freeze();
    const frozenAt = Date.now();
    await waitFor(
      "the silent relay's connection and a's reservation there to go",
      () => a.relays().connected === 0 && relayedAddress(a) === undefined,
      5_000,
    );
    const took = Date.now() - frozenAt;
    assert.ok(
      took >= probe.minTimeoutMs,
      `dropped after ${took} ms, before the probe's wait ran out`,
    );
    // Not a relay candidate any more (libp2p would try it first, and hang 6 s on the dial).
    const relayId = relay.addresses()[0].split("/p2p/")[1];
    const { protocols } = await a.libp2p.peerStore.get(peerIdFromString(relayId));
    assert.ok(!protocols.some((p) => p.includes("/circuit/relay/")), `still listed: ${protocols}`);
    // Said once, for the client's log.
    assert.deepEqual(a.takeSilentRelays(), [{ relay: relayId, waitedMs: probe.minTimeoutMs }]);
    assert.deepEqual(a.takeSilentRelays(), []);
  } finally {
    await a.stop();
    await relay.close();
  }
});
