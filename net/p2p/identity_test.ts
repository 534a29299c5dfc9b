import assert from "node:assert/strict";
import { ed25519 } from "@noble/curves/ed25519.js";
import { libp2pPrivateKey, peerIdOf, publicKeyOf, publicKeyOfPeer } from "./identity.ts";
import { peerIdFromPrivateKey } from "@libp2p/peer-id";

Deno.test("libp2p identity derives from the same ed25519 secret the client signs with", async () => {
  const secret = new Uint8Array(32).map((_, i) => i * 7 + 1);
  const key = await libp2pPrivateKey(secret);
  const pub = publicKeyOf(secret);
  assert.deepEqual(key.publicKey.raw, pub);
  // A signature made by the libp2p key verifies under the coordinator-facing public key.
  const msg = new TextEncoder().encode("hello");
  const sig = await key.sign(msg);
  assert.ok(ed25519.verify(sig, msg, pub));
  assert.equal(peerIdFromPrivateKey(key).toString(), peerIdOf(pub).toString());
  assert.deepEqual(publicKeyOfPeer(peerIdOf(pub)), pub);
});

Deno.test("different secrets give different peer ids", () => {
  const a = publicKeyOf(new Uint8Array(32).fill(1));
  const b = publicKeyOf(new Uint8Array(32).fill(2));
  assert.notEqual(peerIdOf(a).toString(), peerIdOf(b).toString());
});

Deno.test("keys of the wrong length are refused with the length found", async () => {
  await assert.rejects(
    () => libp2pPrivateKey(new Uint8Array(64)),
    /secret key must be 32 bytes, found 64/,
  );
  assert.throws(() => peerIdOf(new Uint8Array(31)), /public key must be 32 bytes, found 31/);
});
