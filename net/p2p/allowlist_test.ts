import assert from "node:assert/strict";
import { Allowlist, allowlistGater } from "./allowlist.ts";
import { peerIdOf, publicKeyOf } from "./identity.ts";
import { WEAK_POINTS } from "../testing/weak_keys.ts";

const keyA = publicKeyOf(new Uint8Array(32).fill(1));
const keyB = publicKeyOf(new Uint8Array(32).fill(2));
const keyC = publicKeyOf(new Uint8Array(32).fill(3));

Deno.test("an empty allowlist refuses everyone", async () => {
  const gater = allowlistGater(new Allowlist());
  assert.equal(await gater.denyDialPeer!(peerIdOf(keyA)), true);
});

Deno.test("set replaces the allowed peers and reports the removed ones", async () => {
  const list = new Allowlist([keyA, keyB]);
  const gater = allowlistGater(list);
  assert.equal(list.size, 2);
  assert.equal(await gater.denyDialPeer!(peerIdOf(keyA)), false);
  assert.equal(await gater.denyDialPeer!(peerIdOf(keyC)), true);
  const removed = list.set([keyB, keyC]);
  assert.deepEqual(removed, [peerIdOf(keyA).toString()]);
  assert.equal(list.has(peerIdOf(keyA)), false);
  assert.equal(list.has(peerIdOf(keyC).toString()), true);
  assert.deepEqual(list.publicKey(peerIdOf(keyB)), keyB);
  assert.equal(list.publicKey(peerIdOf(keyA)), undefined);
});

Deno.test("the allowlist keeps its own copy of the keys", () => {
  const key = keyA.slice();
  const list = new Allowlist([key]);
  key.fill(0);
  assert.deepEqual(list.publicKey(peerIdOf(keyA)), keyA);
});

Deno.test("a small-order or non-canonical key is never allowed, even when listed", async () => {
  for (const weak of WEAK_POINTS) {
    const list = new Allowlist([keyA, weak.bytes]);
    assert.equal(list.size, 1, weak.name);
    assert.equal(list.has(peerIdOf(weak.bytes)), false, weak.name);
    assert.equal(await allowlistGater(list).denyDialPeer!(peerIdOf(weak.bytes)), true, weak.name);
    assert.equal(list.has(peerIdOf(keyA)), true, "an honest key beside it still is");
  }
});

Deno.test("a relay passes the gate without becoming a participant, and carries participants only", async () => {
  const relay = peerIdOf(keyC);
  const list = new Allowlist([keyA]);
  const gater = allowlistGater(list);
  assert.equal(await gater.denyDialPeer!(relay), true);
  list.addRelay(relay);
  assert.equal(await gater.denyDialPeer!(relay), false);
  assert.equal(list.has(relay), false, "a relay is no participant");
  assert.equal(list.set([keyA]).length, 0, "a new epoch keeps the relay");
  assert.equal(await gater.denyDialPeer!(relay), false);
  // Relayed connections: only through a relay or a participant, only from a participant.
  assert.equal(await gater.denyInboundRelayedConnection!(relay, peerIdOf(keyA)), false);
  assert.equal(await gater.denyInboundRelayedConnection!(relay, peerIdOf(keyB)), true);
  assert.equal(await gater.denyInboundRelayedConnection!(peerIdOf(keyA), peerIdOf(keyA)), false);
  assert.equal(await gater.denyInboundRelayedConnection!(peerIdOf(keyB), peerIdOf(keyA)), true);
  assert.equal(await gater.denyInboundRelayReservation!(peerIdOf(keyA)), true, "we relay nothing");
});

Deno.test("a client relays for participants only, and only while it serves", async () => {
  let serving = false;
  const list = new Allowlist([keyA, keyB]);
  const gater = allowlistGater(list, () => serving);
  const [a, b, c] = [keyA, keyB, keyC].map(peerIdOf);
  assert.equal(await gater.denyInboundRelayReservation!(a), true, "not reachable: no relay");
  assert.equal(await gater.denyOutboundRelayedConnection!(a, b), true);
  serving = true;
  assert.equal(await gater.denyInboundRelayReservation!(a), false);
  assert.equal(await gater.denyOutboundRelayedConnection!(a, b), false);
  assert.equal(await gater.denyInboundRelayReservation!(c), true, "not a participant");
  assert.equal(await gater.denyOutboundRelayedConnection!(a, c), true);
  assert.equal(await gater.denyOutboundRelayedConnection!(c, a), true);
});
