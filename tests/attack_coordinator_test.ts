/**
 * Attacks on the TCP coordinator, each against a real server over real TCP, with honest
 * clients (TcpBackend, sending real warmup witnesses, witnesses and health checks) that
 * must keep working: idle connections filling the cap, health-check floods, keys outside
 * a permissioned run, keys dropped by health checks rejoining, joiners that never train,
 * and idle non-members (members must never be cut).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  clientHandshake,
  encodeFrame,
  generateIdentity,
  HandshakeError,
  type Identity,
  writeAll,
} from "../net/mod.ts";
import { testConfig, testModel, testState } from "./support/coordinator_fixtures.ts";
import {
  connectTestBackend,
  framesUntilClosed,
  rawConnect,
  type RawConnection,
  ScriptedClient,
  type ScriptedClientOptions,
  ServerProcess,
} from "./support/server_driver.ts";
import {
  clientFrameLimits,
  COORDINATOR_CONTEXT,
  CoordinatorHost,
  type CoordinatorServer,
  type CoordinatorServerOptions,
  decodeServerMessage,
  encodeClientMessage,
  type HostOptions,
  type ServerEvent,
  type ServerMessage,
  startCoordinatorServer,
} from "../coordinator/server/mod.ts";
import type { CoordinatorConfig, CoordinatorState } from "../coordinator/core/mod.ts";
import { equalBytes, toHex } from "../common/mod.ts";
import { runConfigToToml } from "../coordinator/config/mod.ts";
import { TcpBackend } from "../client/backend/mod.ts";

/** Sub-second rounds: witnesses end RoundTrain at once, so a step takes about 0.3 s. */
const QUICK: Partial<CoordinatorConfig> = {
  initMinClients: 2,
  minClients: 2,
  witnessNodes: 0,
  waitingForMembersExtraTime: 0.2,
  warmupTime: 3,
  maxRoundTrainTime: 1,
  roundWitnessTime: 0.3,
  cooldownTime: 0.3,
  epochTime: 30,
  totalSteps: 10_000,
};

function quickHost(config: Partial<CoordinatorConfig> = {}, options: Partial<HostOptions> = {}) {
  const state = testState({ ...QUICK, ...config }, Date.now() / 1000, { coldStartWarmupSteps: 0 });
  return new CoordinatorHost({ state, withdrawOnDisconnect: true, ...options });
}

function serve(host: CoordinatorHost, options: Partial<CoordinatorServerOptions> = {}) {
  const events: ServerEvent[] = [];
  const server = startCoordinatorServer({
    host,
    hostname: "127.0.0.1",
    onEvent: (e) => events.push(e),
    ...options,
  });
  return { server, events };
}

/** Honest clients that join and follow the run. */
async function honestClients(
  server: CoordinatorServer,
  n: number,
  options: ScriptedClientOptions = {},
): Promise<ScriptedClient[]> {
  const clients: ScriptedClient[] = [];
  for (let i = 0; i < n; i++) {
    clients.push(new ScriptedClient(await connectTestBackend(server), options));
  }
  for (const c of clients) c.start();
  await Promise.all(clients.map((c) => c.backend.join()));
  return clients;
}

/** An authenticated raw connection with a fresh key that then does what the test says. */
async function hostileClient(address: string): Promise<RawConnection & { identity: Identity }> {
  const raw = await rawConnect(address);
  const identity = generateIdentity();
  await clientHandshake(raw.conn, raw.frames, {
    context: COORDINATOR_CONTEXT,
    secretKey: identity.secretKey,
  });
  return { ...raw, identity };
}

function closeQuietly(raw: { conn: Deno.Conn }): void {
  try {
    raw.conn.close();
  } catch {
    // closed by the server
  }
}

/** The server messages in `frames`, without state pushes. */
function replies(frames: Uint8Array[]): ServerMessage[] {
  return frames.map(decodeServerMessage).filter((m) =>
    m.kind !== "State" && m.kind !== "StateDelta"
  );
}

/** Polls `events` until one matches (every 20 ms, up to `timeoutMs`). */
async function eventually<T>(
  find: () => T | undefined,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const hit = find();
    if (hit !== undefined) return hit;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function stepAtLeast(step: number) {
  return (s: CoordinatorState) => s.runState !== "WaitingForMembers" && s.progress.step >= step;
}

Deno.test("idle connections filling the cap: members keep training, a real joiner still joins", async () => {
  const cap = 24;
  const { server, events } = serve(quickHost(), {
    maxConnections: cap,
    maxConnectionsPerAddress: 1000,
    idleTimeoutMs: 600_000, // no help from the idle timeout here
  });
  await using _ = server;
  const clients = await honestClients(server, 2);
  const hostile: Awaited<ReturnType<typeof hostileClient>>[] = [];
  let joiner: TcpBackend | null = null;
  try {
    await clients[0].waitFor((s) => s.runState === "RoundTrain", 15_000, "training");
    // Authenticated connections with fresh keys that never send a thing fill the cap...
    for (let i = 0; i < cap - 2; i++) hostile.push(await hostileClient(server.address));
    assert.ok(!events.some((e) => e.kind === "ConnectionClosed"), "room for all so far");
    const step = server.host.state.progress.step;
    // ...and keep coming: each new one takes the place of the quietest non-member.
    for (let i = 0; i < 4; i++) hostile.push(await hostileClient(server.address));
    // A real client arrives at the full cap and joins.
    joiner = await connectTestBackend(server, { reconnect: false });
    await joiner.join();
    assert.ok(server.host.pending().some((p) => equalBytes(p.signer, joiner!.identity.signer)));
    const evicted = events.flatMap((e) => e.kind === "ConnectionClosed" ? [e.client] : []);
    assert.equal(evicted.length, 5);
    assert.deepEqual(
      evicted,
      hostile.slice(0, 5).map((h) => toHex(h.identity.publicKey)),
      "the quietest non-members go first; members never",
    );
    // The members were never disturbed: the run goes on training with them.
    await clients[0].waitFor(stepAtLeast(step + 3), 20_000, "three more steps");
    assert.ok(server.host.state.epochState.clients.length >= 2);
  } finally {
    for (const h of hostile) closeQuietly(h);
    await joiner?.close();
    for (const c of clients) await c.stop();
  }
});

Deno.test("one address may not hold more than its share of connections, nor reconnect at will", async () => {
  const { server, events } = serve(quickHost(), {
    maxConnectionsPerAddress: 2,
    connectsPerSecondPerAddress: 1000,
  });
  const a = await hostileClient(server.address);
  const b = await hostileClient(server.address);
  try {
    await assert.rejects(
      connectTestBackend(server, { reconnect: false }),
      (e) =>
        e instanceof HandshakeError &&
        e.message ===
          `cannot reach the coordinator at ${server.address}: ` +
            "Server refused the connection: 127.0.0.1 already has 2 connections " +
            "(the most per address)",
    );
    assert.ok(
      events.some((e) => e.kind === "ConnectionRefused" && /most per address/.test(e.reason)),
    );
    closeQuietly(a);
    // A slot frees up when a connection closes.
    let backend: TcpBackend | null = null;
    const deadline = Date.now() + 5000;
    while (backend === null && Date.now() < deadline) {
      backend = await connectTestBackend(server, { reconnect: false }).catch(() => null);
      if (backend === null) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(backend !== null, "a slot after a close");
    await backend.close();
  } finally {
    closeQuietly(a);
    closeQuietly(b);
    await server.close();
  }
  // With the default rate (a tenth of the cap a second), reconnecting in a loop is refused
  // before any handshake: the server verifies no signature for it.
  const limited = serve(quickHost(), { maxConnectionsPerAddress: 3 });
  await using _ = limited.server;
  for (let i = 0; i < 3; i++) closeQuietly(await hostileClient(limited.server.address));
  await assert.rejects(
    hostileClient(limited.server.address),
    /Server refused the connection: 127.0.0.1 opens connections too fast \(at most 0.3 a second\)/,
  );
});

Deno.test("a health-check flood is refused cheaply while honest clients keep training", async () => {
  const { server, events } = serve(quickHost());
  await using _ = server;
  const limits = clientFrameLimits(server.host.state.config.maxClients);
  const clients = await honestClients(server, 2);
  const hostile: RawConnection[] = [];
  try {
    await clients[0].waitFor((s) => s.runState === "RoundTrain", 15_000, "training");

    // The measured attack: a 65,535-entry health check (5.3 MB). No frame of this run can
    // be that long, so its 4-byte header is enough to refuse it; the rest is never read.
    const big = await hostileClient(server.address);
    hostile.push(big);
    const head = new Uint8Array(4);
    new DataView(head.buffer).setUint32(0, 9 + 65_535 * 81);
    await writeAll(big.conn, head);
    assert.deepEqual(replies(await framesUntilClosed(big, 5000)).at(-1), {
      kind: "Refused",
      reason: `Frame of 5308344 bytes exceeds the maximum of ${limits.HealthCheck} bytes`,
    });
    assert.equal(limits.HealthCheck, 9 + 64 * 81, "a health check names at most maxClients");
    // Each kind has its own limit, checked on the tag before the payload is read: a
    // 1000-byte Join is refused, though health checks may be longer.
    const join = await hostileClient(server.address);
    hostile.push(join);
    const joinHead = new Uint8Array(5); // length, then tag 0 (Join)
    new DataView(joinHead.buffer).setUint32(0, 1000);
    await writeAll(join.conn, joinHead);
    assert.match(
      (replies(await framesUntilClosed(join, 5000)).at(-1) as { reason: string }).reason,
      new RegExp(`^Join frame of 1000 bytes exceeds the maximum of ${limits.Join} bytes$`),
    );

    // Health checks of the largest allowed size from a non-member, whose entries are
    // garbage: answered from their head (a decode would refuse the garbage and close),
    // and throttled once over the connection's rates.
    const flood = await hostileClient(server.address);
    hostile.push(flood);
    const frame = encodeClientMessage({
      kind: "HealthCheck",
      requestId: 1,
      checks: [{
        id: { signer: new Uint8Array(32), p2pIdentity: new Uint8Array(32) },
        proof: { committee: "Trainer", position: 0, index: 0 },
      }],
    }).slice(0, 9);
    const garbage = new Uint8Array(limits.HealthCheck).fill(0xff);
    garbage.set(frame);
    new DataView(garbage.buffer).setUint32(5, server.host.state.config.maxClients);
    const count = 80;
    const step = server.host.state.progress.step;
    const writing = writeAll(flood.conn, encodeFrame(garbage).slice()).then(async () => {
      const one = encodeFrame(garbage);
      for (let i = 1; i < count; i++) await writeAll(flood.conn, one);
    });
    const answers: ServerMessage[] = [];
    while (answers.length < count) {
      const got = await flood.frames.next();
      assert.ok(got !== null, "the flooding connection stays open");
      const msg = decodeServerMessage(got);
      if (msg.kind !== "State" && msg.kind !== "StateDelta") answers.push(msg);
    }
    await writing;
    assert.ok(answers.every((m) => m.kind === "Error" && m.code === "InvalidHealthCheck"));
    assert.deepEqual(answers[0], {
      kind: "Error",
      requestId: 1,
      code: "InvalidHealthCheck",
      message: "the sender is not a client of this epoch",
    });
    const throttled = events.find((e) => e.kind === "Throttled");
    assert.equal(
      throttled?.kind === "Throttled" && throttled.client,
      toHex(flood.identity.publicKey),
    );
    // Meanwhile the honest clients were served: the run kept training.
    await clients[0].waitFor(stepAtLeast(step + 2), 20_000, "two more steps");
  } finally {
    for (const h of hostile) closeQuietly(h);
    for (const c of clients) await c.stop();
  }
});

Deno.test("a permissioned run (--authorized-keys) refuses unknown keys at the handshake", async () => {
  const dir = await Deno.makeTempDir({ prefix: "attack-allowlist-" });
  const listed = [generateIdentity(), generateIdentity()];
  const stranger = generateIdentity();
  await Deno.writeTextFile(
    join(dir, "keys.txt"),
    `# the run's two clients\n${toHex(listed[0].publicKey)}\n${toHex(listed[1].publicKey)} # b\n`,
  );
  await Deno.writeTextFile(
    join(dir, "state.toml"),
    runConfigToToml({
      runId: "test-run",
      runState: "WaitingForMembers",
      config: testConfig(QUICK),
      model: testModel({ coldStartWarmupSteps: 0 }),
      progress: { epoch: 0, step: 1, epochStartDataIndex: 0 },
    }),
  );
  const process = ServerProcess.start([
    "--state",
    join(dir, "state.toml"),
    "--authorized-keys",
    join(dir, "keys.txt"),
  ]);
  const backends: TcpBackend[] = [];
  try {
    const address = await process.address();
    await assert.rejects(
      TcpBackend.connect({ address, runId: "test-run", identity: stranger, reconnect: false }),
      (e) =>
        e instanceof HandshakeError &&
        e.message ===
          `cannot reach the coordinator at ${address}: ` +
            "Server rejected the handshake: this key is not in the run's authorized keys",
    );
    await process.waitForEvent(
      (e) =>
        e.event === "connection_refused" && /not in the run's authorized keys/.test(`${e.reason}`),
      5000,
      "the refusal logged",
    );
    for (const identity of listed) {
      const backend = await TcpBackend.connect({ address, runId: "test-run", identity });
      backends.push(backend);
      await backend.join();
    }
    const clients = backends.map((b) => new ScriptedClient(b));
    for (const c of clients) c.start();
    await clients[0].waitFor((s) => s.runState === "RoundTrain", 15_000, "the listed keys train");
    for (const c of clients) await c.stop();
  } finally {
    for (const b of backends) await b.close();
    await process.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a key dropped by a health check waits, pending, until the epoch its back-off names", async () => {
  // Epochs of a few rounds; a dropped key sits out the rest of its epoch (k = 1).
  const { server, events } = serve(
    quickHost({ warmupTime: 1, epochTime: 2 }, { joinBackoffEpochs: 1 }),
  );
  await using _ = server;
  const silentIdentity = generateIdentity();
  const silent = await connectTestBackend(server, { identity: silentIdentity, reconnect: false });
  await silent.join();
  // Two honest clients whose witness reports never saw the silent one; one reports it.
  const clients = await honestClients(server, 2, {
    unseen: [silentIdentity.publicKey],
    healthChecks: true,
  });
  try {
    const dropped = await eventually(
      () => events.find((e) => e.kind === "BackedOff"),
      20_000,
      "the silent key dropped by a health check",
    );
    assert.deepEqual(dropped, {
      kind: "BackedOff",
      client: toHex(silentIdentity.publicKey),
      cause: "HealthCheck",
      epoch: 0,
      until: 1,
    });
    // Its join is accepted and deferred: it waits in the pending list, sitting out epoch 0.
    await silent.join();
    const deferred = await eventually(
      () => events.find((e) => e.kind === "JoinDeferred"),
      5_000,
      "the join deferred",
    );
    assert.deepEqual(deferred, {
      kind: "JoinDeferred",
      client: toHex(silentIdentity.publicKey),
      reason: "this key was dropped by a health check in epoch 0; it may join again from epoch 1",
    });
    // In epoch 1 the same key is taken again.
    await clients[0].waitFor(
      (s) =>
        s.progress.epoch >= 1 && s.runState === "Warmup" &&
        s.epochState.clients.some((c) => equalBytes(c.id.signer, silentIdentity.publicKey)),
      30_000,
      "epoch 1 taking the key back",
    );
  } finally {
    await silent.close();
    for (const c of clients) await c.stop();
  }
});

Deno.test("joiners that never train cost one short epoch, not every epoch", async () => {
  // Six silent keys beside two honest clients: eight witness seats, a quorum of five.
  const { server, events } = serve(
    quickHost({
      warmupTime: 1,
      epochTime: 3,
      maxClients: 16,
      waitingForMembersExtraTime: 2, // all eight join before epoch 0 starts
    }),
  );
  await using _ = server;
  const silent: TcpBackend[] = [];
  for (let i = 0; i < 6; i++) {
    const backend = await connectTestBackend(server, { reconnect: false });
    silent.push(backend);
    await backend.join();
  }
  const clients = await honestClients(server, 2);
  try {
    // Epoch 0 fails its first round; the silent witnesses are withdrawn and backed off.
    await clients[0].waitFor((s) => s.progress.epoch >= 1, 30_000, "epoch 1");
    const backedOff = events.flatMap((e) => e.kind === "BackedOff" ? [e.client] : []);
    assert.deepEqual(
      new Set(backedOff),
      new Set(silent.map((b) => toHex(b.identity.signer))),
    );
    const firstEnd = events.find((e) => e.kind === "EpochEnd");
    assert.ok(firstEnd?.kind === "EpochEnd" && firstEnd.step <= 3, "epoch 0 was cut short");
    // Epoch 1 trains with the honest clients only, for more than one round.
    const s = await clients[0].waitFor(
      (s) =>
        s.progress.epoch === 1 && s.runState === "RoundTrain" && s.epochState.clients.length > 0,
      20_000,
      "epoch 1 training",
    );
    assert.equal(s.epochState.clients.length, 2);
    const step = s.progress.step;
    await clients[0].waitFor(stepAtLeast(step + 3), 20_000, "epoch 1 keeps training");
    // A silent key that joins again waits: epoch 1 did not take it.
    await silent[0].join();
    assert.ok(
      events.some((e) => e.kind === "JoinDeferred" && /may join again from epoch 2/.test(e.reason)),
    );
  } finally {
    for (const b of silent) await b.close();
    for (const c of clients) await c.stop();
  }
});

Deno.test("idle non-members are closed after the timeout; members never are", async () => {
  const { server, events } = serve(quickHost({ initMinClients: 5 }), { idleTimeoutMs: 300 });
  await using _ = server;
  const memberEvents: string[] = [];
  const member = await connectTestBackend(server, {
    reconnect: false,
    onEvent: (e) => memberEvents.push(e.kind),
  });
  await member.join();
  const idle = await hostileClient(server.address);
  // A non-member that keeps talking is not idle (its requests are refused, but it talks).
  const talker = await hostileClient(server.address);
  const talking = setInterval(() => {
    writeAll(
      talker.conn,
      encodeFrame(
        encodeClientMessage({ kind: "Checkpoint", requestId: 1, repo: { kind: "Ephemeral" } }),
      ),
    ).catch(() => {});
  }, 100);
  try {
    const started = Date.now();
    await framesUntilClosed(idle, 5000);
    assert.ok(Date.now() - started >= 250, "not before its timeout");
    const closed = await eventually(
      () => events.find((e) => e.kind === "ConnectionClosed"),
      1000,
      "the close logged",
    );
    assert.deepEqual(closed, {
      kind: "ConnectionClosed",
      peer: closed?.kind === "ConnectionClosed" ? closed.peer : "",
      client: toHex(idle.identity.publicKey),
      reason: "idle for 0.3 s and not a member of the run",
    });
    // The member sent nothing since its join, far longer than the timeout: still connected.
    await new Promise((r) => setTimeout(r, 900));
    assert.deepEqual(
      memberEvents.filter((e) => e !== "Connected"),
      [],
      "the member's connection never dropped",
    );

    await member.join();
    assert.equal(events.filter((e) => e.kind === "ConnectionClosed").length, 1, "nor the talker's");
  } finally {
    clearInterval(talking);
    closeQuietly(idle);
    closeQuietly(talker);
    await member.close();
  }
});
