import assert from "node:assert/strict";
import {
  clientHandshake,
  decodeHandshakeMessage,
  generateIdentity,
  writeFrame,
} from "../../net/mod.ts";
import {
  connectTestBackend,
  framesUntilClosed,
  rawConnect,
  startTestServer,
} from "../../tests/support/server_driver.ts";
import {
  RunDriver,
  testState,
  witnessIndices,
  witnessReport,
} from "../../tests/support/coordinator_fixtures.ts";
import { CoordinatorHost } from "./host.ts";
import { encodeCoordinatorState } from "../encoding/mod.ts";
import type { ServerEvent } from "./log.ts";
import {
  COORDINATOR_CONTEXT,
  decodeServerMessage,
  encodeClientMessage,
  type ServerMessage,
} from "./protocol.ts";
import type { ClientTelemetry } from "./telemetry.ts";
import { type CoordinatorServerOptions, startCoordinatorServer } from "./server.ts";
import { toHex, toMillis } from "../../common/mod.ts";
import { type CoordinatorState, currentRound, type WitnessMetadata } from "../core/mod.ts";
import type { TcpBackendEvent } from "../../client/backend/mod.ts";

const WITNESS_METADATA: WitnessMetadata = {
  step: 0,
  tokensPerSec: 1000,
  bandwidthPerSec: 1e6,
  loss: 4.5,
  evals: [],
  promptResults: [],
  promptIndex: 0,
  efficiency: 0.9,
};

function serve(options: Partial<CoordinatorServerOptions> = {}) {
  const events: ServerEvent[] = [];
  const server = startTestServer({ onEvent: (e) => events.push(e), ...options });
  return { server, events };
}

Deno.test("a second connection with the same key replaces the first and keeps the join", async () => {
  const { server, events } = serve();
  await using _ = server;
  const identity = generateIdentity();
  const firstEvents: TcpBackendEvent[] = [];
  const first = await connectTestBackend(server, {
    identity,
    reconnect: false,
    onEvent: (e) => firstEvents.push(e),
  });
  await first.join();
  const second = await connectTestBackend(server, { identity });
  try {
    while (!firstEvents.some((e) => e.kind === "Failed")) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.deepEqual(server.host.pending().map((p) => toHex(p.signer)), [
      toHex(identity.publicKey),
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
  const backend = await connectTestBackend(server);
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
  const backend = await connectTestBackend(server, { reconnect: false });
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

Deno.test("connections over a cap of members are rejected at once; the others carry on", async () => {
  const { server, events } = serve({ maxConnections: 1 });
  await using _ = server;
  const backend = await connectTestBackend(server);
  try {
    await backend.join();
    const raw = await rawConnect(server.address);
    const frames = await framesUntilClosed(raw, 3000);
    const reason = "the server already has 1 connections, all of members";
    assert.deepEqual(frames.map((f) => decodeHandshakeMessage(f)), [{ kind: "Rejected", reason }]);
    assert.ok(events.some((e) => e.kind === "ConnectionRefused" && e.reason === reason));
    await backend.join();
  } finally {
    await backend.close();
  }
});

/** A run whose every timer is sub-second, started at the wall clock's current millisecond. */
function fastHost(startOffsetMs = 0): CoordinatorHost {
  const config = {
    initMinClients: 1,
    minClients: 1,
    waitingForMembersExtraTime: 0.06,
    warmupTime: 0.08,
    maxRoundTrainTime: 0.07,
    roundWitnessTime: 0.05,
    cooldownTime: 0.06,
  };
  const start = (Date.now() + startOffsetMs) / 1000;
  const state = testState(config, start, { coldStartWarmupSteps: 0 });
  return new CoordinatorHost({ state, withdrawOnDisconnect: true });
}

Deno.test("each state ends at its own deadline and is pushed at once, with no periodic tick", async () => {
  const events: ServerEvent[] = [];
  const host = fastHost();
  // The periodic tick never fires during this test: only the deadline timer can move the run.
  const server = startCoordinatorServer({
    host,
    hostname: "127.0.0.1",
    tickIntervalMs: 600_000,
    pushIntervalMs: 600_000,
    onEvent: (e) => events.push(e),
  });
  await using _ = server;
  const backend = await connectTestBackend(server);
  try {
    await backend.join();
    const seen: CoordinatorState[] = [];
    for await (const state of backend.states({ signal: AbortSignal.timeout(10_000) })) {
      seen.push(state);
      if (state.runState === "Cooldown") break;
    }
    const moves = events.flatMap((e) => e.kind === "StateChanged" ? [`${e.from}->${e.to}`] : []);
    assert.deepEqual(moves.slice(0, 4), [
      "WaitingForMembers->Warmup",
      "Warmup->RoundTrain",
      "RoundTrain->RoundWitness",
      "RoundWitness->Cooldown", // nobody witnessed: everyone is withdrawn
    ]);
    // Each pushed state began no earlier than its predecessor's timer allowed, to the ms.
    const config = host.state.config;
    const timer: Partial<Record<string, number>> = {
      WaitingForMembers: config.waitingForMembersExtraTime,
      Warmup: config.warmupTime,
      RoundTrain: config.maxRoundTrainTime,
      RoundWitness: config.roundWitnessTime,
    };
    const distinct = seen.filter((s, i) => i === 0 || s.runState !== seen[i - 1].runState);
    assert.equal(distinct.at(-1)?.runState, "Cooldown");
    for (let i = 1; i < distinct.length; i++) {
      const prev = distinct[i - 1];
      const gap = toMillis(distinct[i].runStateStartUnixTimestamp) -
        toMillis(prev.runStateStartUnixTimestamp);
      assert.ok(gap >= toMillis(timer[prev.runState] ?? 0), `${prev.runState} lasted ${gap} ms`);
    }
  } finally {
    await backend.close();
  }
});

Deno.test("a join that completes the quorum moves the run before its Ack is answered", async () => {
  // The extra time has long passed: the join itself must start the epoch, and the new state
  // must be pushed right behind the join's answer, with no tick timer involved.
  const host = fastHost(-60_000);
  const server = startCoordinatorServer({
    host,
    hostname: "127.0.0.1",
    tickIntervalMs: 600_000,
    pushIntervalMs: 600_000,
  });
  await using _ = server;
  const backend = await connectTestBackend(server);
  try {
    const states = backend.states({ signal: AbortSignal.timeout(10_000) })[Symbol.asyncIterator]();
    assert.equal((await states.next()).value?.runState, "WaitingForMembers");
    await backend.join();
    assert.equal(host.state.runState, "Warmup", "the host moved while handling the join");
    assert.equal((await states.next()).value?.runState, "Warmup");
    await states.return?.();
  } finally {
    await backend.close();
  }
});

const NOTICE: ClientTelemetry = {
  step: 0,
  bytesSent: 4096,
  bytesReceived: 8192,
  tokensPerSec: 320,
  breakdownMs: { train: 900, encode: 20, exchange: 300, apply: 40, wait: 5 },
};

/** Polls until `find` finds something (every 10 ms, up to 5 s). */
async function eventually<T>(what: string, find: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const hit = find();
    if (hit !== undefined) return hit;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("telemetry over TCP: a member's is kept unanswered under its own key; a non-member's is dropped", async () => {
  const { server, events } = serve();
  await using _ = server;
  const member = await connectTestBackend(server);
  const stranger = await connectTestBackend(server);
  try {
    await member.join();
    const step = server.host.state.progress.step;
    await member.sendTelemetry({ ...NOTICE, step });
    const kept = await eventually(
      "the member's telemetry",
      () => events.find((e) => e.kind === "Telemetry"),
    );
    assert.deepEqual(kept, {
      kind: "Telemetry",
      client: toHex(member.identity.signer),
      telemetry: { ...NOTICE, step },
    });
    await member.join(); // request ids still pair up: the notice took no answer

    await stranger.sendTelemetry({ ...NOTICE, step });
    const dropped = await eventually(
      "the stranger's telemetry dropped",
      () => events.find((e) => e.kind === "TelemetryDropped"),
    );
    assert.equal(
      dropped.kind === "TelemetryDropped" && dropped.client,
      toHex(stranger.identity.signer),
    );
    assert.equal(server.host.telemetry(toHex(stranger.identity.signer)), null);
    assert.equal(server.host.telemetryClients, 1);
    await stranger.join(); // its connection is still open
  } finally {
    await member.close();
    await stranger.close();
  }
});

Deno.test("a telemetry frame with a NaN is refused and closed; no notice is kept", async () => {
  const { server, events } = serve();
  await using _ = server;
  const raw = await rawConnect(server.address);
  const identity = generateIdentity();
  await clientHandshake(raw.conn, raw.frames, {
    context: COORDINATOR_CONTEXT,
    secretKey: identity.secretKey,
  });
  const bytes = encodeClientMessage({ kind: "Telemetry", requestId: 1, telemetry: NOTICE });
  new DataView(bytes.buffer).setFloat64(1 + 4 + 4 + 8 + 8, NaN, false); // tokensPerSec
  await writeFrame(raw.conn, bytes);
  const replies = (await framesUntilClosed(raw)).map(decodeServerMessage)
    .filter((m: ServerMessage) => m.kind !== "State");
  assert.equal(replies.length, 1);
  assert.equal(replies[0].kind, "Refused");
  assert.match(
    (replies[0] as { reason: string }).reason,
    /Telemetry: .*telemetry\.tokensPerSec" must be finite, found NaN/,
  );
  assert.ok(!events.some((e) => e.kind === "Telemetry" || e.kind === "TelemetryDropped"));
  assert.equal(server.host.telemetryClients, 0);
});

Deno.test("a member flooding telemetry gets one notice kept and one event per step", async () => {
  const { server, events } = serve({ rateLimits: null });
  await using _ = server;
  const member = await connectTestBackend(server);
  try {
    await member.join();
    const step = server.host.state.progress.step;
    const flood = 2000;
    await Promise.all(
      Array.from(
        { length: flood },
        (_, n) => member.sendTelemetry({ ...NOTICE, step, bytesSent: n }),
      ),
    );
    await member.join(); // answered after every notice before it was handled
    assert.equal(events.filter((e) => e.kind === "Telemetry").length, 1);
    assert.equal(server.host.telemetryClients, 1);
    assert.equal(server.host.staleTelemetry, flood - 1);
    assert.equal(server.host.telemetry(toHex(member.identity.signer))?.bytesSent, 0);
  } finally {
    await member.close();
  }
});

Deno.test("a witness report short of a quorum is pushed batched, as a delta; the quorum's new run state at once", async () => {
  // Four clients in RoundTrain (all witnesses; two reports end it) with a long train timer.
  const keys = [0, 1, 2, 3].map(() => generateIdentity());
  const ids = keys.map((k) => ({ signer: k.publicKey, p2pIdentity: k.publicKey }));
  const config = {
    initMinClients: 4,
    minClients: 1,
    witnessNodes: 0,
    waitingForMembersExtraTime: 1,
    warmupTime: 1,
    maxRoundTrainTime: 600,
    epochTime: 3600,
  };
  const driver = new RunDriver(testState(config, Date.now() / 1000 - 10));
  driver.startEpoch(ids);
  driver.warmupTimeout();
  assert.equal(driver.state.runState, "RoundTrain");
  const host = new CoordinatorHost({ state: driver.state, withdrawOnDisconnect: false });
  const server = startCoordinatorServer({
    host,
    hostname: "127.0.0.1",
    tickIntervalMs: 600_000,
    pushIntervalMs: 600_000,
    stateBatchMs: 300,
  });
  await using _ = server;
  const backends = await Promise.all(
    keys.map((identity) => connectTestBackend(server, { identity })),
  );
  try {
    const states = backends[0].states({ signal: AbortSignal.timeout(10_000) })
      [Symbol.asyncIterator]();
    await states.next();
    const witnesses = witnessIndices(host.state);
    const report = (i: number) =>
      backends[i].sendWitness(
        witnessReport(host.state, witnesses[i], ids),
        { ...WITNESS_METADATA, step: host.state.progress.step },
        new Uint8Array(32),
      );
    const version = host.version;
    const sent = performance.now();
    const bytesBefore = backends[0].receivedBytes;
    await report(0);
    assert.equal(host.version, version + 1, "the report changed the state");
    const batched = (await states.next()).value!;
    const waited = performance.now() - sent;
    assert.ok(waited >= 250, `the reports were pushed after ${waited.toFixed(0)} ms, not batched`);
    assert.equal(batched.runState, "RoundTrain");
    assert.equal(currentRound(batched).witnesses.length, 1);
    // It came as a delta from the first state (plus the report's Ack), rebuilt bit for bit.
    const whole = encodeCoordinatorState(batched);
    assert.deepEqual(whole, encodeCoordinatorState(host.state));
    const read = backends[0].receivedBytes - bytesBefore;
    assert.ok(read < whole.length / 2, `${read} bytes read for a ${whole.length}-byte state`);
    const quorum = performance.now();
    await report(1);
    const moved = (await states.next()).value!;
    assert.equal(moved.runState, "RoundWitness");
    const late = performance.now() - quorum;
    assert.ok(late < 250, `the new run state waited ${late.toFixed(0)} ms`);
    await states.return?.();
  } finally {
    await Promise.all(backends.map((b) => b.close()));
  }
});
