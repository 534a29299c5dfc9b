import assert from "node:assert/strict";
import { startTestServer } from "../../tests/support/server_driver.ts";
import { testState, warmupReport } from "../../tests/support/coordinator_fixtures.ts";
import {
  encodeFrame,
  FrameReader,
  generateIdentity,
  serverHandshake,
  writeAll,
} from "../../net/mod.ts";
import { BackendError } from "./backend.ts";
import { parseAddress, TcpBackend, type TcpBackendEvent } from "./tcp.ts";
import { CoordinatorError, NO_DIGEST, sha256 } from "../../coordinator/core/mod.ts";
import { encodeCoordinatorState } from "../../coordinator/encoding/mod.ts";
import {
  COORDINATOR_CONTEXT,
  diffBytes,
  encodeServerMessage,
} from "../../coordinator/server/mod.ts";
import { toHex } from "../../common/mod.ts";
import { startDelayProxy } from "../../net/testing/delay_proxy.ts";

function serve(port = 0) {
  return startTestServer({ port, tickIntervalMs: 100 });
}

Deno.test("addresses are host:port or [v6]:port", () => {
  assert.deepEqual(parseAddress("127.0.0.1:80"), { hostname: "127.0.0.1", port: 80 });
  assert.deepEqual(parseAddress("[::1]:9000"), { hostname: "::1", port: 9000 });
  assert.throws(() => parseAddress("localhost"), /"localhost" is not host:port/);
  assert.throws(() => parseAddress("h:0"), TypeError);
});

Deno.test("states arrive, join is acknowledged, rejected calls carry the coordinator's code", async () => {
  await using server = serve();
  const backend = await TcpBackend.connect({
    address: server.address,
    runId: "test-run",
    identity: generateIdentity(),
  });
  try {
    for await (const state of backend.states()) {
      assert.equal(state.runId, "test-run");
      assert.equal(state.runState, "WaitingForMembers");
      break;
    }
    await backend.join();
    assert.deepEqual(server.host.pending().map((p) => toHex(p.signer)), [
      toHex(backend.identity.signer),
    ]);
    const state = backend.latest();
    assert.ok(state !== null);
    await assert.rejects(
      backend.sendWarmupWitness(warmupReport(state, 0), NO_DIGEST),
      (e) => e instanceof CoordinatorError && e.code === "WrongRunState",
    );
    await assert.rejects(
      backend.sendCheckpoint({ kind: "Hub", repo: { repoId: "org/m", revision: "abc" } }),
      (e) => e instanceof CoordinatorError && e.code === "InvalidCheckpoint",
    );
  } finally {
    await backend.close();
  }
});

Deno.test("a wrong run id is refused naming both ids, and the backend stays failed", async () => {
  await using server = serve();
  const events: TcpBackendEvent[] = [];
  const backend = await TcpBackend.connect({
    address: server.address,
    runId: "other-run",
    identity: generateIdentity(),
    onEvent: (e) => events.push(e),
  });
  try {
    await assert.rejects(
      backend.join(),
      (e) =>
        e instanceof BackendError && e.kind === "Refused" &&
        /run id "other-run" does not match this coordinator's run "test-run"/.test(e.message),
    );
    await assert.rejects(async () => {
      for await (const _ of backend.states()) {
        // the first state may have arrived before the refusal; the iterator then throws
      }
    }, /Refused/);
    await assert.rejects(backend.join(), /Refused/);
    assert.ok(events.some((e) => e.kind === "Failed"));
    assert.ok(!events.some((e) => e.kind === "Reconnecting"), "a refusal is final");
  } finally {
    await backend.close();
  }
});

Deno.test("after the connection drops the backend reconnects and joins again", async () => {
  const first = serve();
  const port = first.port;
  const events: TcpBackendEvent[] = [];
  const backend = await TcpBackend.connect({
    address: first.address,
    runId: "test-run",
    identity: generateIdentity(),
    reconnectDelayMs: 50,
    onEvent: (e) => events.push(e),
  });
  try {
    await backend.join();
    await first.close();
    await using second = serve(port);
    const deadline = Date.now() + 5000;
    while (second.host.pending().length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assert.deepEqual(second.host.pending().map((p) => toHex(p.signer)), [
      toHex(backend.identity.signer),
    ]);
    assert.ok(events.some((e) => e.kind === "Disconnected"));
    assert.equal(events.filter((e) => e.kind === "Connected").length, 2);
  } finally {
    await backend.close();
  }
});

Deno.test("a join the connection dropped under is asked again once the backend reconnected", async () => {
  // A coordinator that goes away with the client's Join unanswered (it was restarting as the
  // client started): the join waits for the next coordinator rather than fail the client.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  const dropping = (async () => {
    const conn = await listener.accept();
    const frames = new FrameReader(conn, { maxFrameBytes: 1 << 16 });
    await serverHandshake(conn, frames, { context: COORDINATOR_CONTEXT });
    await frames.next(); // the Join, never answered
    conn.close();
    listener.close();
  })();
  const events: TcpBackendEvent[] = [];
  const backend = await TcpBackend.connect({
    address: `127.0.0.1:${port}`,
    runId: "test-run",
    identity: generateIdentity(),
    reconnectDelayMs: 50,
    onEvent: (e) => events.push(e),
  });
  try {
    const joined = backend.join();
    await dropping;
    await using server = serve(port);
    await joined;
    assert.deepEqual(server.host.pending().map((p) => toHex(p.signer)), [
      toHex(backend.identity.signer),
    ]);
    assert.ok(events.some((e) => e.kind === "Disconnected"));
    assert.ok(events.some((e) => e.kind === "Reconnected"));
  } finally {
    await backend.close();
  }
});

Deno.test("close ends every states iterator and fails later calls with Closed", async () => {
  await using server = serve();
  const backend = await TcpBackend.connect({
    address: server.address,
    runId: "test-run",
    identity: generateIdentity(),
  });
  const seen: string[] = [];
  const reading = (async () => {
    for await (const s of backend.states()) seen.push(s.runState);
  })();
  while (backend.latest() === null) await new Promise((r) => setTimeout(r, 10));
  await backend.close();
  await reading;
  assert.ok(seen.length >= 1);
  await assert.rejects(backend.join(), (e) => e instanceof BackendError && e.kind === "Closed");
});

Deno.test("the first connection fails at once when nobody listens", async () => {
  const server = serve();
  const address = server.address;
  await server.close();
  const error = await TcpBackend.connect({
    address,
    runId: "test-run",
    identity: generateIdentity(),
  })
    .then(() => null, (e) => e);
  assert.ok(error instanceof Deno.errors.ConnectionRefused, String(error));
  // The message names the address tried.
  assert.match(error.message, new RegExp(`^cannot reach the coordinator at ${address}: `));
});

Deno.test("a coordinator that accepts but never answers: a timeout naming the address, retried when waiting", async () => {
  // Accepts the TCP connection and says nothing (a machine too busy to answer the handshake).
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  const address = `127.0.0.1:${listener.addr.port}`;
  try {
    const error = await TcpBackend.connect({
      address,
      runId: "test-run",
      identity: generateIdentity(),
      connectTimeoutMs: 100,
    }).then(() => null, (e) => e);
    assert.ok(error instanceof DOMException && error.name === "TimeoutError", String(error));
    assert.match(error.message, new RegExp(`^cannot reach the coordinator at ${address}: `));
    // Waiting for the coordinator, the timeout is one more reason to try again, not a crash.
    const events: TcpBackendEvent[] = [];
    const stop = new AbortController();
    const waiting = TcpBackend.connect({
      address,
      runId: "test-run",
      identity: generateIdentity(),
      connectTimeoutMs: 100,
      waitForCoordinator: true,
      onEvent: (e) => {
        events.push(e);
        if (e.kind === "Reconnecting" && e.attempt === 2) stop.abort();
      },
      signal: stop.signal,
    }).then(() => null, (e) => e);
    const stopped = await waiting;
    assert.ok(stopped !== null, "it never connected");
    const retries = events.filter((e) => e.kind === "Reconnecting");
    assert.equal(retries.length, 2);
    for (const r of retries) {
      assert.match(r.kind === "Reconnecting" && r.error || "", /cannot reach the coordinator at/);
    }
  } finally {
    listener.close();
    await accepting.catch(() => {});
    for (const conn of held) conn.close();
  }
});

Deno.test("waitForCoordinator: a client started first waits, saying so, and connects once it listens", async () => {
  const probe = serve();
  const { address, port } = probe;
  await probe.close();
  const events: TcpBackendEvent[] = [];
  const connecting = TcpBackend.connect({
    address,
    runId: "test-run",
    identity: generateIdentity(),
    reconnectDelayMs: 20,
    maxReconnectDelayMs: 40,
    waitForCoordinator: true,
    onEvent: (e) => events.push(e),
  });
  const deadline = Date.now() + 5000;
  while (events.filter((e) => e.kind === "Reconnecting").length < 2 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
  }
  await using server = serve(port);
  const backend = await connecting;
  try {
    await backend.join();
    assert.equal(server.host.pending().length, 1);
    const waits = events.filter((e) => e.kind === "Reconnecting");
    assert.ok(waits.length >= 2, `${waits.length} waits said`);
    for (const w of waits) {
      assert.match(w.kind === "Reconnecting" && w.error || "", /cannot reach the coordinator/);
    }
  } finally {
    await backend.close();
  }
});

Deno.test("waitForCoordinator: something else on the port fails at once, and so does an abort", async () => {
  // Not a coordinator: it accepts and hangs up, so the handshake fails; waiting would not help.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const hangUp = (async () => {
    for await (const conn of listener) conn.close();
  })();
  const events: TcpBackendEvent[] = [];
  const wrong = await TcpBackend.connect({
    address: `127.0.0.1:${listener.addr.port}`,
    runId: "test-run",
    identity: generateIdentity(),
    waitForCoordinator: true,
    onEvent: (e) => events.push(e),
  }).then(() => null, (e) => e);
  listener.close();
  await hangUp.catch(() => {});
  assert.ok(
    wrong instanceof Error && !(wrong instanceof Deno.errors.ConnectionRefused),
    String(wrong),
  );
  assert.deepEqual(events.filter((e) => e.kind === "Reconnecting"), []);

  const gone = serve();
  const address = gone.address;
  await gone.close();
  const stop = new AbortController();
  const waiting = TcpBackend.connect({
    address,
    runId: "test-run",
    identity: generateIdentity(),
    reconnectDelayMs: 20,
    waitForCoordinator: true,
    signal: stop.signal,
  }).then(() => null, (e) => e);
  setTimeout(() => stop.abort(), 100);
  assert.ok(await waiting instanceof Error, "an aborted wait rejects");
});

/**
 * A hand-driven coordinator on `listener`: it accepts one connection and completes the
 * handshake, and a backend (`options` added) connects to it. The test writes the frames.
 */
async function handDrivenCoordinator(
  listener: Deno.TcpListener,
  options: { reconnect?: boolean } = {},
): Promise<{ backend: TcpBackend; conn: Deno.Conn; events: TcpBackendEvent[] }> {
  const serving = (async () => {
    const conn = await listener.accept();
    await serverHandshake(conn, new FrameReader(conn, { maxFrameBytes: 1 << 16 }), {
      context: COORDINATOR_CONTEXT,
    });
    return conn;
  })();
  const events: TcpBackendEvent[] = [];
  const { port } = listener.addr as Deno.NetAddr;
  const backend = await TcpBackend.connect({
    address: `127.0.0.1:${port}`,
    runId: "test-run",
    identity: generateIdentity(),
    ...options,
    onEvent: (e) => events.push(e),
  });
  return { backend, conn: await serving, events };
}

Deno.test("a backlog of states is skipped to the newest but for a Cooldown, replies kept in order", async () => {
  // A coordinator whose pushes piled up while the link was stalled: 30 states and an Ack
  // between them arrive in one burst.
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const stateFrame = (step: number) => {
    const state = testState();
    state.progress.step = step;
    if (step === 10) state.runState = "Cooldown"; // an epoch's end is never skipped
    return encodeFrame(
      encodeServerMessage({ kind: "State", bytes: encodeCoordinatorState(state) }),
    );
  };
  const burst = [
    ...Array.from({ length: 20 }, (_, i) => stateFrame(i + 1)),
    encodeFrame(encodeServerMessage({ kind: "Ack", requestId: 1 })),
    ...Array.from({ length: 10 }, (_, i) => stateFrame(i + 21)),
  ];
  const bytes = new Uint8Array(burst.reduce((n, f) => n + f.length, 0));
  burst.reduce((at, f) => (bytes.set(f, at), at + f.length), 0);
  assert.ok(bytes.length < 60_000, "the burst fits one read of the reader's 64 KiB chunk");
  const { backend, conn, events } = await handDrivenCoordinator(listener);
  try {
    const seen: number[] = [];
    const joined = backend.join(); // request 1, answered inside the burst
    const reading = (async () => {
      for await (const s of backend.states()) {
        seen.push(s.progress.step);
        if (s.progress.step === 30) return;
      }
    })();
    await writeAll(conn, bytes);
    await joined;
    await reading;
    assert.deepEqual(seen, [10, 20, 30], "the Cooldown, the newest before the Ack, the newest");
    assert.deepEqual(events.filter((e) => e.kind === "StatesSkipped"), [
      { kind: "StatesSkipped", skipped: 9 },
      { kind: "StatesSkipped", skipped: 9 },
      { kind: "StatesSkipped", skipped: 9 },
    ]);
  } finally {
    await backend.close();
    conn.close();
  }
});

Deno.test("states sent as deltas are rebuilt, skipped ones included; a delta that does not check out drops the link", async () => {
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const states = [1, 2, 3].map((step) => {
    const state = testState();
    state.progress.step = step;
    return encodeCoordinatorState(state);
  });
  const delta = (base: Uint8Array, next: Uint8Array, checksum = sha256(next).subarray(0, 8)) =>
    encodeFrame(encodeServerMessage({
      kind: "StateDelta",
      length: next.length,
      checksum,
      ops: diffBytes(base, next),
    }));
  const { backend, conn, events } = await handDrivenCoordinator(listener, { reconnect: false });
  try {
    const seen: number[] = [];
    const reading = (async () => {
      for await (const s of backend.states()) {
        seen.push(s.progress.step);
        if (s.progress.step === 3) return;
      }
    })();
    // Step 2 comes as a delta and is skipped (3 is behind it), yet 3's delta builds on it.
    const frames = [
      encodeFrame(encodeServerMessage({ kind: "State", bytes: states[0] })),
      delta(states[0], states[1]),
      delta(states[1], states[2]),
    ];
    await writeAll(conn, frames[0]);
    while (seen.length === 0) await new Promise((r) => setTimeout(r, 5));
    const rest = new Uint8Array(frames[1].length + frames[2].length);
    rest.set(frames[1]);
    rest.set(frames[2], frames[1].length);
    await writeAll(conn, rest);
    await reading;
    assert.deepEqual(seen, [1, 3]);
    assert.deepEqual(encodeCoordinatorState(backend.latest()!), states[2]);
    // A delta whose rebuilt bytes are not the coordinator's: the connection is given up.
    await writeAll(conn, delta(states[2], states[0], new Uint8Array(8)));
    while (!events.some((e) => e.kind === "Failed")) {
      await new Promise((r) => setTimeout(r, 5));
    }
    const dropped = events.find((e) => e.kind === "Failed");
    assert.ok(dropped?.kind === "Failed");
    assert.match(dropped.error.message, /does not match its checksum/);
  } finally {
    await backend.close();
    conn.close();
  }
});

Deno.test("a coordinator gone silent (its machine died: no reset) is given up and redialled", async () => {
  await using server = startTestServer({ tickIntervalMs: 100, pushIntervalMs: 50 });
  await using proxy = startDelayProxy({
    listen: { hostname: "127.0.0.1", port: 0 },
    target: { hostname: "127.0.0.1", port: server.port },
    delayMs: 0,
  });
  const events: TcpBackendEvent[] = [];
  const backend = await TcpBackend.connect({
    address: `127.0.0.1:${proxy.port}`,
    runId: "test-run",
    identity: generateIdentity(),
    connectTimeoutMs: 200,
    reconnectDelayMs: 50,
    silentLinkMs: 400,
    onEvent: (e) => events.push(e),
  });
  try {
    // Pushed every 50 ms, it is never silent for 400 ms.
    await new Promise((r) => setTimeout(r, 1_200));
    assert.deepEqual(events.filter((e) => e.kind === "Disconnected"), []);
    proxy.freeze();
    const deadline = Date.now() + 5_000;
    while (!events.some((e) => e.kind === "Disconnected") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
    }
    const dropped = events.find((e) => e.kind === "Disconnected");
    assert.ok(dropped?.kind === "Disconnected", "the silent link was never given up");
    assert.match(dropped.reason, /^the coordinator sent nothing for \d+ s .*: its machine/);
    assert.ok(events.some((e) => e.kind === "Reconnecting"), "and it dials again");
  } finally {
    await backend.close();
  }
});
