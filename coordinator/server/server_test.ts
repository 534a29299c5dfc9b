import assert from "node:assert/strict";
import { TcpBackend, type TcpBackendEvent } from "../../client/backend/tcp.ts";
import { decodeHandshakeMessage, generateIdentity } from "../../net/mod.ts";
import { framesUntilClosed, rawConnect } from "../../tests/support/server_driver.ts";
import { testState } from "../../tests/support/coordinator_fixtures.ts";
import { keyString } from "../machine_core.ts";
import { CoordinatorHost } from "./host.ts";
import type { ServerEvent } from "./log.ts";
import { type CoordinatorServerOptions, startCoordinatorServer } from "./server.ts";

function serve(options: Partial<CoordinatorServerOptions> = {}) {
  const events: ServerEvent[] = [];
  const host = new CoordinatorHost({ state: testState({}, 0), withdrawOnDisconnect: true });
  const server = startCoordinatorServer({
    host,
    hostname: "127.0.0.1",
    tickIntervalMs: 10_000,
    onEvent: (e) => events.push(e),
    ...options,
  });
  return { server, events };
}

Deno.test("a second connection with the same key replaces the first and keeps the join", async () => {
  const { server, events } = serve();
  await using _ = server;
  const identity = generateIdentity();
  const firstEvents: TcpBackendEvent[] = [];
  const first = await TcpBackend.connect({
    address: server.address,
    runId: "test-run",
    identity,
    reconnect: false,
    onEvent: (e) => firstEvents.push(e),
  });
  await first.join();
  const second = await TcpBackend.connect({ address: server.address, runId: "test-run", identity });
  try {
    while (!firstEvents.some((e) => e.kind === "Failed")) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(server.host.pending().map((p) => keyString(p.signer)), [
      keyString(identity.publicKey),
    ]);
    assert.ok(!events.some((e) => e.kind === "Left"), "a replaced connection is not a leave");
    await second.join();
  } finally {
    await first.close();
    await second.close();
  }
});

Deno.test("the state is pushed periodically even when nothing changes", async () => {
  const { server } = serve({ pushIntervalMs: 50 });
  await using _ = server;
  const backend = await TcpBackend.connect({
    address: server.address,
    runId: "test-run",
    identity: generateIdentity(),
  });
  try {
    let count = 0;
    for await (const _state of backend.states({ signal: AbortSignal.timeout(2000) })) {
      if (++count === 3) break;
    }
    assert.equal(count, 3);
  } finally {
    await backend.close();
  }
});

Deno.test("a peer that never answers the challenge is rejected after the handshake timeout", async () => {
  const { server, events } = serve({ handshakeTimeoutMs: 100 });
  await using _ = server;
  const raw = await rawConnect(server.address);
  const frames = await framesUntilClosed(raw, 3000);
  assert.deepEqual(frames.map((f) => decodeHandshakeMessage(f).kind), ["Challenge", "Rejected"]);
  assert.ok(events.some((e) => e.kind === "ConnectionRefused" && e.client === null));
});

Deno.test("closing the server withdraws nobody and reports Stopped", async () => {
  const { server, events } = serve();
  const backend = await TcpBackend.connect({
    address: server.address,
    runId: "test-run",
    identity: generateIdentity(),
    reconnect: false,
  });
  await backend.join();
  await server.close();
  await backend.close();
  assert.equal(server.host.pending().length, 1);
  assert.equal(events.at(-1)?.kind, "Stopped");
  assert.deepEqual(
    events.map((e) => e.kind).filter((k) => k !== "Stopped"),
    ["Listening", "Connected", "Joined"],
  );
});

Deno.test("connections over the cap are rejected at once; the others carry on", async () => {
  const { server, events } = serve({ maxConnections: 1 });
  await using _ = server;
  const backend = await TcpBackend.connect({
    address: server.address,
    runId: "test-run",
    identity: generateIdentity(),
  });
  try {
    const raw = await rawConnect(server.address);
    const frames = await framesUntilClosed(raw, 3000);
    assert.deepEqual(frames.map((f) => decodeHandshakeMessage(f)), [
      { kind: "Rejected", reason: "the server already has 1 connections" },
    ]);
    assert.ok(events.some((e) => e.kind === "ConnectionRefused" && /1 connections/.test(e.reason)));
    await backend.join();
  } finally {
    await backend.close();
  }
});
