import assert from "node:assert/strict";
import { createP2PNode } from "./node.ts";
import { publicKeyOf } from "./identity.ts";

const secret = (n: number) => new Uint8Array(32).fill(n);

Deno.test("node identity is the client's ed25519 key and it listens on loopback", async () => {
  await using node = await createP2PNode({ secretKey: secret(1) });
  assert.deepEqual(node.publicKey, publicKeyOf(secret(1)));
  const addrs = node.addresses().map(String);
  assert.equal(addrs.length, 1);
  assert.match(addrs[0], new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/p2p/${node.peerId}$`));
});

Deno.test("allowed peers connect; a peer outside the allowlist is refused both ways", async () => {
  await using a = await createP2PNode({
    secretKey: secret(1),
    allowedPeers: [publicKeyOf(secret(2))],
  });
  await using b = await createP2PNode({
    secretKey: secret(2),
    allowedPeers: [publicKeyOf(secret(1))],
  });
  // The intruder allows everyone it knows; a does not allow it.
  await using x = await createP2PNode({
    secretKey: secret(3),
    allowedPeers: [publicKeyOf(secret(1)), publicKeyOf(secret(2))],
  });
  await b.connect(a.addresses()[0]);
  await waitFor(() => a.isConnected(b.publicKey) && b.isConnected(a.publicKey));
  await assert.rejects(
    () => a.connect(x.addresses()[0]),
    "a must not dial a peer it does not allow",
  );
  // x dials a: the dial may appear to succeed on x's side, but a drops it once noise reveals x.
  await x.connect(a.addresses()[0]).catch(() => {});
  await waitFor(() => !a.isConnected(x.publicKey) && !x.isConnected(a.publicKey));
  assert.equal(a.isConnected(x.publicKey), false);
});

Deno.test("setAllowedPeers closes connections to peers no longer allowed", async () => {
  await using a = await createP2PNode({
    secretKey: secret(1),
    allowedPeers: [publicKeyOf(secret(2))],
  });
  await using b = await createP2PNode({
    secretKey: secret(2),
    allowedPeers: [publicKeyOf(secret(1))],
  });
  await b.connect(a.addresses()[0]);
  await waitFor(() => a.isConnected(b.publicKey) && b.isConnected(a.publicKey));
  await a.setAllowedPeers([publicKeyOf(secret(3))]);
  await waitFor(() => !a.isConnected(b.publicKey));
  // b may still dial, but a refuses the connection once it sees b's identity.
  await b.connect(a.addresses()[0]).catch(() => {});
  await waitFor(() => !a.isConnected(b.publicKey) && !b.isConnected(a.publicKey));
});

Deno.test("bad ports are refused before anything starts", async () => {
  await assert.rejects(() => createP2PNode({ secretKey: secret(1), port: 70_000 }), /port must be/);
  await assert.rejects(
    () => createP2PNode({ secretKey: secret(1), host: "localhost" }),
    /host must be an IPv4 address such as 127.0.0.1, found "localhost"/,
  );
  await assert.rejects(() => createP2PNode({ secretKey: secret(1), host: "10.0.0.256" }), /host/);
});

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("publicAddresses replace the advertised addresses", async () => {
  await using node = await createP2PNode({
    secretKey: secret(4),
    publicAddresses: ["/ip4/203.0.113.7/tcp/4001"],
  });
  assert.deepEqual(node.addresses().map(String), [`/ip4/203.0.113.7/tcp/4001/p2p/${node.peerId}`]);
});

Deno.test("connectTo dials a participant by key once its address is known", async () => {
  const keys = [1, 2].map((n) => publicKeyOf(secret(n)));
  await using a = await createP2PNode({ secretKey: secret(1), allowedPeers: keys });
  await using b = await createP2PNode({ secretKey: secret(2), allowedPeers: keys });
  assert.equal(await a.knowsAddresses(b.publicKey), false);
  await assert.rejects(() => a.connectTo(b.publicKey), /^Error: no known address: /);
  // An address where nothing listens: the failure names it and says what happened.
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const deadPort = (closed.addr as Deno.NetAddr).port;
  closed.close();
  await a.addPeerAddresses(b.publicKey, [`/ip4/127.0.0.1/tcp/${deadPort}`]);
  await assert.rejects(
    () => a.connectTo(b.publicKey),
    new RegExp(`dialled /ip4/127\\.0\\.0\\.1/tcp/${deadPort}[^:]*: refused: nothing listens there`),
  );
  await a.addPeerAddresses(b.publicKey, [b.addresses()[0].toString().replace(/\/p2p\/.*/, "")]);
  assert.equal(await a.knowsAddresses(b.publicKey), true);
  await a.connectTo(b.publicKey);
  assert.deepEqual(a.connectedPeers(), [b.publicKey]);
});

Deno.test("a node listening on 0.0.0.0 advertises its interface addresses and accepts dials", async () => {
  const keys = [5, 6].map((n) => publicKeyOf(secret(n)));
  await using wide = await createP2PNode({
    secretKey: secret(5),
    host: "0.0.0.0",
    allowedPeers: keys,
  });
  await using other = await createP2PNode({ secretKey: secret(6), allowedPeers: keys });
  const addrs = wide.addresses().map(String);
  assert.ok(addrs.every((a) => !a.includes("/0.0.0.0/")), `wildcard advertised: ${addrs}`);
  const loopback = addrs.find((a) => a.startsWith("/ip4/127.0.0.1/"));
  assert.ok(loopback, `no loopback address among ${addrs}`);
  await other.connect(loopback);
  await waitFor(() => wide.isConnected(other.publicKey));
});
