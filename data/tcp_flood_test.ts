/**
 * The data server under a connection flood from many addresses (issue 32: 200 idle handshaking
 * and 200 idle authenticated connections from many loopback addresses locked a real client out of
 * a standalone server capped at 256). Real sockets: every flood connection comes from its own
 * 127.x.y.z address, so no per-address limit applies, only the global cap and its eviction.
 */
import assert from "node:assert/strict";
import { ed25519 } from "@noble/curves/ed25519.js";
import { LocalDataProvider } from "./local.ts";
import { TcpDataProvider } from "./tcp_client.ts";
import { DATA_SERVER_CONTEXT } from "./tcp_messages.ts";
import { type DataServerEvent, startDataServer } from "./tcp_server.ts";
import { closing, writeFixtureDataset } from "./testing/fixtures.ts";
import { toHex } from "../common/mod.ts";
import { clientHandshake, FrameReader } from "../net/mod.ts";
import { type BoundSocket, connectFrom } from "../net/testing/bound_socket.ts";

const member = new Uint8Array(32).fill(7);
const memberHex = toHex(ed25519.getPublicKey(member));
const stranger = new Uint8Array(32).fill(8);

/** `n` connections that never start their handshake, each from its own address. */
async function handshaking(n: number, port: number, subnet: number): Promise<BoundSocket[]> {
  const socks: BoundSocket[] = [];
  for (let i = 1; i <= n; i++) {
    socks.push(await connectFrom(`127.0.${subnet}.${i}`, "127.0.0.1", port));
  }
  return socks;
}

/** `n` connections that finish their handshake with fresh keys and then say nothing. */
async function authenticated(n: number, port: number, subnet: number): Promise<BoundSocket[]> {
  const socks: BoundSocket[] = [];
  for (let i = 1; i <= n; i++) {
    const sock = await connectFrom(`127.0.${subnet}.${i}`, "127.0.0.1", port);
    await clientHandshake(sock, new FrameReader(sock, { maxFrameBytes: 1 << 16 }), {
      context: DATA_SERVER_CONTEXT,
      secretKey: ed25519.utils.randomSecretKey(),
      signal: AbortSignal.timeout(10_000),
    });
    socks.push(sock);
  }
  return socks;
}

async function waitUntil(what: string, cond: () => boolean): Promise<void> {
  for (let i = 0; !cond(); i++) {
    if (i > 1000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("idle connections from many addresses, handshaking or not, cannot lock a client out", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  const events: DataServerEvent[] = [];
  await using server = startDataServer({
    provider: local,
    authorize: () => "Allowed",
    maxConnections: 40,
    // The flood never times out by itself within the test.
    handshakeTimeoutMs: 60_000,
    idleTimeoutMs: 60_000,
    isMember: (key) => key === memberHex,
    onEvent: (e) => events.push(e),
  });
  const evicted = () => events.filter((e) => e.kind === "EvictedConnection");
  // A member fetches once, then sits idle through the flood.
  await using kept = closing(await TcpDataProvider.connect(server.address, { secretKey: member }));
  assert.equal((await kept.getSamples({ start: 0, end: 0 })).count, 1);
  const flood = [
    ...await handshaking(30, server.port, 1),
    ...await authenticated(30, server.port, 2),
  ];
  try {
    // 61 connections for 40 places: the 21 quietest non-members made room, never the member.
    await waitUntil("21 evictions", () => evicted().length === 21);
    assert.ok(evicted().some((e) => e.kind === "EvictedConnection" && e.client === null));
    assert.ok(evicted().every((e) => e.kind === "EvictedConnection" && e.client !== memberHex));
    // A real client that arrives now gets in, and is served.
    await using late = closing(
      await TcpDataProvider.connect(server.address, { secretKey: stranger }),
    );
    assert.equal((await late.getSamples({ start: 1, end: 2 })).count, 2);
    assert.equal(evicted().length, 22);
    assert.equal((await kept.getSamples({ start: 3, end: 3 })).count, 1, "the member still works");
    assert.deepEqual(events.filter((e) => e.kind === "RefusedConnection"), []);
    // The server closed the evicted flood connections.
    await waitUntil("22 closed", () => flood.filter((s) => s.ended).length === 22);
  } finally {
    for (const sock of flood) sock.close();
  }
});

Deno.test("when every connection is a member's, a newcomer is refused in words", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  await using server = startDataServer({
    provider: local,
    authorize: () => "Allowed",
    maxConnections: 1,
    isMember: (key) => key === memberHex,
  });
  await using kept = closing(await TcpDataProvider.connect(server.address, { secretKey: member }));
  await assert.rejects(
    TcpDataProvider.connect(server.address, { secretKey: stranger }),
    /Server refused the connection: the server already has 1 connections, all of members/,
  );
  assert.equal((await kept.getSamples({ start: 0, end: 0 })).count, 1);
});
