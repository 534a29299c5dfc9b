import assert from "node:assert/strict";
import { ed25519 } from "@noble/curves/ed25519.js";
import fc from "fast-check";
import { DummyDataProvider } from "./dummy.ts";
import { DataError } from "./errors.ts";
import { LocalDataProvider } from "./local.ts";
import { parseHostPort, TcpDataProvider } from "./tcp_client.ts";
import {
  DATA_SERVER_CONTEXT,
  type DataServerMessage,
  decodeDataClientMessage,
  decodeDataServerMessage,
  encodeDataClientMessage,
  encodeDataServerMessage,
} from "./tcp_messages.ts";
import { type DataServerEvent, startDataServer } from "./tcp_server.ts";
import { checkProviderCompliance } from "./testing/compliance.ts";
import { closing, rows, writeFixtureDataset } from "./testing/fixtures.ts";
import { type BatchId, toHex } from "../common/mod.ts";
import {
  clientHandshake,
  encodeFrame,
  FrameReader,
  ProtocolError,
  writeFrame,
} from "../net/mod.ts";

const alice = new Uint8Array(32).fill(1);
const mallory = new Uint8Array(32).fill(2);
const aliceHex = toHex(ed25519.getPublicKey(alice));

Deno.test("data messages round-trip and reject malformed bytes", () => {
  const messages: DataServerMessage[] = [
    { kind: "Info", seqLen: 128, numSequences: 2 ** 40 },
    {
      kind: "Samples",
      batch: { start: 5, end: 6 },
      seqLen: 2,
      tokens: Uint32Array.of(1, 2, 3, 2 ** 32 - 1),
    },
    { kind: "Rejected", batch: { start: 1, end: 1 }, reason: "WrongDataIdForStep", detail: "x" },
    { kind: "Failed", batch: { start: 0, end: 3 }, message: "disk on fire" },
    { kind: "Rejected", batch: { start: 0, end: 5 }, reason: "RateLimited", detail: "slow down" },
    { kind: "Closing", reason: "no request for 30000 ms" },
  ];
  for (const m of messages) {
    assert.deepEqual(decodeDataServerMessage(encodeDataServerMessage(m)), m);
  }
  const request = { kind: "RequestSamples" as const, batch: { start: 3, end: 9 } };
  assert.deepEqual(decodeDataClientMessage(encodeDataClientMessage(request)), request);
  const samples = encodeDataServerMessage(messages[1]);
  assert.throws(
    () => decodeDataServerMessage(samples.subarray(0, samples.length - 1)),
    /2 sequences of 2 tokens need 16 token bytes, found 15/,
  );
  const inverted = encodeDataClientMessage({ kind: "RequestSamples", batch: { start: 9, end: 9 } });
  inverted[16] = 8;
  assert.throws(() => decodeDataClientMessage(inverted), /batch 9\.\.8: end is before start/);
  assert.throws(() => decodeDataClientMessage(new Uint8Array([7])), /unknown tag 7/);
  const rejected = encodeDataServerMessage(messages[2]);
  rejected[17] = 99;
  assert.throws(() => decodeDataServerMessage(rejected), /unknown reason code 99/);
});

Deno.test("TCP provider serves the same sequences as the local provider", async () => {
  await using data = await writeFixtureDataset([90, 64, 41], { npy: [0] });
  const seed = new Uint8Array(32).fill(5);
  const shuffle = { kind: "Seeded" as const, seed };
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes", shuffle }),
  );
  await using server = startDataServer({ provider: local, authorize: () => "Allowed" });
  await using remote = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await checkProviderCompliance(remote, data, 8, shuffle);
});

Deno.test("the server asks authorize() about each request, by the client's key", async () => {
  await using data = await writeFixtureDataset([256]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  const asked: Array<[string, BatchId]> = [];
  const events: DataServerEvent[] = [];
  await using server = startDataServer({
    provider: local,
    authorize: (key, batch) => {
      asked.push([toHex(key), batch]);
      if (toHex(key) !== aliceHex) return "NotInThisRound";
      return batch.start === 4 ? "Allowed" : "WrongDataIdForStep";
    },
    onEvent: (e) => events.push(e),
  });
  await using a = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await using m = closing(await TcpDataProvider.connect(server.address, { secretKey: mallory }));
  const expected = rows(await local.getSamples({ start: 4, end: 7 }));
  assert.deepEqual(rows(await a.getSamples({ start: 4, end: 7 })), expected);
  await assert.rejects(a.getSamples({ start: 0, end: 3 }), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.match(e.message, /rejected batch 0\.\.3: WrongDataIdForStep/);
    return true;
  });
  await assert.rejects(m.getSamples({ start: 4, end: 7 }), /rejected batch 4\.\.7: NotInThisRound/);
  // The connection survives a rejection.
  assert.deepEqual(rows(await a.getSamples({ start: 4, end: 7 })), expected);
  assert.deepEqual(asked.map(([k, b]) => [k === aliceHex, b.start]), [[true, 4], [true, 0], [
    false,
    4,
  ], [true, 4]]);
  assert.deepEqual(events.filter((e) => e.kind === "Served").length, 2);
  assert.deepEqual(events.filter((e) => e.kind === "Rejected").length, 2);
});

Deno.test("out-of-range requests and provider failures are answered, not dropped", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes", vocabSize: 30 }),
  );
  await using server = startDataServer({ provider: local, authorize: () => "Allowed" });
  await using client = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await assert.rejects(client.getSamples({ start: 6, end: 8 }), /OutOfRange.*has 8 sequences/);
  // Token 5 of the first sequence is 36, outside a vocabulary of 30: the server says so.
  await assert.rejects(client.getSamples({ start: 0, end: 0 }), (e: unknown) => {
    assert.ok(e instanceof DataError);
    assert.match(
      e.message,
      /failed to read batch 0\.\.0: .*000\.ds: token id >= vocab size 30 \(36\) at byte offset 10/,
    );
    assert.equal(e.retryable, true);
    return true;
  });
});

Deno.test("a client without a valid handshake gets no data", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  let authorized = 0;
  await using server = startDataServer({
    provider: local,
    authorize: () => (authorized++, "Allowed"),
  });
  const { hostname, port } = parseHostPort(server.address);
  const conn = await Deno.connect({ hostname, port });
  try {
    // Skip the handshake and ask for data straight away.
    const frames = new FrameReader(conn, { maxFrameBytes: 1 << 20 });
    await frames.next(); // the Challenge
    await writeFrame(
      conn,
      encodeDataClientMessage({ kind: "RequestSamples", batch: { start: 0, end: 0 } }),
    );
    // The server closes the connection without serving anything.
    assert.equal(await frames.next(), null);
  } finally {
    conn.close();
  }
  assert.equal(authorized, 0);
});

Deno.test("a malformed request closes the connection; the client reconnects", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  const events: DataServerEvent[] = [];
  await using server = startDataServer({
    provider: local,
    authorize: () => "Allowed",
    onEvent: (e) => events.push(e),
  });
  const { hostname, port } = parseHostPort(server.address);
  const conn = await Deno.connect({ hostname, port });
  try {
    const frames = new FrameReader(conn, { maxFrameBytes: 1 << 20 });
    await clientHandshake(conn, frames, { context: DATA_SERVER_CONTEXT, secretKey: alice });
    await conn.write(encodeFrame(new Uint8Array([1, 0, 0])));
    assert.equal(await frames.next(), null);
  } finally {
    conn.close();
  }
  const dropped = events.find((e) => e.kind === "Disconnected" && e.error);
  assert.match(String((dropped as { error: Error }).error), /ProtocolError: RequestSamples/);

  // A provider whose connection the server cut recovers on the next request.
  await using client = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await server.close();
  await assert.rejects(client.getSamples({ start: 0, end: 0 }), DataError);
  await using again = startDataServer({ provider: local, authorize: () => "Allowed", port });
  assert.deepEqual(
    rows(await client.getSamples({ start: 1, end: 1 })),
    rows(await local.getSamples({ start: 1, end: 1 })),
  );
  assert.equal(again.port, port);
});

Deno.test("parseHostPort accepts host:port and [v6]:port only", () => {
  assert.deepEqual(parseHostPort("127.0.0.1:20001"), { hostname: "127.0.0.1", port: 20001 });
  assert.deepEqual(parseHostPort("[::1]:8"), { hostname: "::1", port: 8 });
  for (const bad of ["localhost", "host:0", "host:70000", ":80", "a:b:1"]) {
    assert.throws(() => parseHostPort(bad), DataError, bad);
  }
});

Deno.test("an authorize() that throws is answered Failed, and the connection lives on", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  let calls = 0;
  await using server = startDataServer({
    provider: local,
    authorize: () => {
      if (calls++ === 0) throw new Error("epoch state unavailable");
      return "Allowed";
    },
  });
  await using client = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await assert.rejects(
    client.getSamples({ start: 0, end: 0 }),
    /failed to read batch 0\.\.0: authorization failed: epoch state unavailable/,
  );
  assert.equal((await client.getSamples({ start: 0, end: 0 })).count, 1);
});

Deno.test("decoding arbitrary bytes either yields a message or throws ProtocolError", () => {
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 64 }),
    // Valid tags with random bodies reach the field checks.
    fc.tuple(fc.integer({ min: 0, max: 4 }), fc.uint8Array({ maxLength: 48 })).map(([t, b]) =>
      Uint8Array.of(t, ...b)
    ),
  );
  const roundTrips = (b: Uint8Array, decodeThenEncode: (b: Uint8Array) => Uint8Array) => {
    try {
      // Anything accepted must re-encode to exactly the same bytes.
      assert.deepEqual(decodeThenEncode(b), b);
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
    }
  };
  fc.assert(
    fc.property(bytes, (b) => {
      roundTrips(b, (x) => encodeDataServerMessage(decodeDataServerMessage(x)));
      roundTrips(b, (x) => encodeDataClientMessage(decodeDataClientMessage(x)));
    }),
    { numRuns: 2000 },
  );
});

Deno.test("the server closes a connection idle for longer than idleTimeoutMs", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  const events: DataServerEvent[] = [];
  await using server = startDataServer({
    provider: local,
    authorize: () => "Allowed",
    idleTimeoutMs: 100,
    onEvent: (e) => events.push(e),
  });
  const { hostname, port } = parseHostPort(server.address);
  const conn = await Deno.connect({ hostname, port });
  try {
    const frames = new FrameReader(conn, { maxFrameBytes: 1 << 20 });
    await clientHandshake(conn, frames, { context: DATA_SERVER_CONTEXT, secretKey: alice });
    // The server says why before it hangs up.
    assert.deepEqual(decodeDataServerMessage((await frames.next())!), {
      kind: "Closing",
      reason: "no request for 100 ms",
    });
    assert.equal(await frames.next(), null);
  } finally {
    conn.close();
  }
  const last = events.at(-1) as { kind: string; error?: Error };
  assert.equal(last.kind, "Disconnected");
  assert.equal(last.error?.name, "TimeoutError");

  // A provider whose kept connection was closed while idle asks again on a fresh one.
  await using client = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await client.getSamples({ start: 2, end: 3 })).count, 2);
  const connected = events.filter((e) => e.kind === "Connected").length;
  assert.equal(connected, 3, "the handshake above, the provider's, and its reconnection");
});

Deno.test("a request is capped at the largest batch, and a client at its sequences per second", async () => {
  await using data = await writeFixtureDataset([256]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  let now = 0;
  await using server = startDataServer({
    provider: local,
    authorize: () => "Allowed",
    maxBatchSequences: 6,
    rateLimit: { sequencesPerSecond: 6, burstSequences: 12 },
    now: () => now,
  });
  await using client = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await assert.rejects(
    client.getSamples({ start: 0, end: 31 }),
    /rejected batch 0\.\.31: TooLarge \(batch 0\.\.31 spans 32 sequences, this server serves at most 6 per request/,
  );
  assert.equal((await client.getSamples({ start: 0, end: 5 })).count, 6);
  assert.equal((await client.getSamples({ start: 6, end: 11 })).count, 6);
  // The burst is spent; a second connection of the same key shares the bucket.
  await using again = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await assert.rejects(
    again.getSamples({ start: 12, end: 17 }),
    /RateLimited \(batch 12\.\.17 needs 6 sequences, 0 are available at 6 sequences\/s per client; retry in 1000 ms\)/,
  );
  await using other = closing(
    await TcpDataProvider.connect(server.address, { secretKey: mallory }),
  );
  assert.equal((await other.getSamples({ start: 12, end: 17 })).count, 6, "others are not slowed");
  now = 1000;
  assert.equal((await client.getSamples({ start: 12, end: 17 })).count, 6);
  assert.throws(
    () =>
      startDataServer({
        provider: local,
        authorize: () => "Allowed",
        maxBatchSequences: 16,
        rateLimit: { sequencesPerSecond: 6, burstSequences: 12 },
      }),
    /burstSequences \(12\) must be at least maxBatchSequences \(16\)/,
  );
});

Deno.test("at the cap the quietest connection makes room; over the per-address cap, a refusal", async () => {
  await using data = await writeFixtureDataset([64]);
  await using local = closing(
    await LocalDataProvider.open(data.dir, { seqLen: 8, tokenSize: "TwoBytes" }),
  );
  const events: DataServerEvent[] = [];
  const start = (limits: { maxConnections?: number; maxConnectionsPerAddress?: number }) =>
    startDataServer({
      provider: local,
      authorize: () => "Allowed",
      onEvent: (e) => events.push(e),
      ...limits,
    });
  {
    await using server = start({ maxConnections: 2 });
    await using a = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
    await using b = closing(await TcpDataProvider.connect(server.address, { secretKey: mallory }));
    await new Promise((r) => setTimeout(r, 20)); // the server's clock counts milliseconds
    assert.equal((await a.getSamples({ start: 0, end: 0 })).count, 1); // a spoke last
    await using c = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
    const malloryHex = toHex(ed25519.getPublicKey(mallory));
    assert.deepEqual(events.filter((e) => e.kind === "EvictedConnection"), [
      { kind: "EvictedConnection", address: "127.0.0.1", client: malloryHex },
    ]);
    await waitUntil(() => events.some((e) => e.kind === "Disconnected" && e.client === malloryHex));
    assert.equal((await a.getSamples({ start: 0, end: 0 })).count, 1, "the others still work");
    assert.equal((await c.getSamples({ start: 0, end: 0 })).count, 1, "the newcomer is served");
    await b.close();
  }
  {
    await using server = start({ maxConnectionsPerAddress: 1 });
    await using a = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
    await assert.rejects(
      TcpDataProvider.connect(server.address, { secretKey: mallory }),
      /Server refused the connection: 127\.0\.0\.1 already has 1 connections \(the most per address\)$/,
    );
    assert.equal((await a.getSamples({ start: 0, end: 0 })).count, 1);
  }
  assert.deepEqual(
    events.filter((e) => e.kind === "RefusedConnection").map((e) => "address" in e && e.address),
    ["127.0.0.1"],
  );
  assert.throws(
    () => start({ maxConnections: 0 }),
    /maxConnections must be a positive integer, found 0/,
  );
});

async function waitUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; !cond(); i++) {
    if (i > 500) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("a batch whose reply would exceed the client's frame limit is refused TooLarge", async () => {
  // 16 sequences of 2^20 u32 tokens = 64 MiB of tokens, plus the header: over the limit.
  await using server = startDataServer({
    provider: new DummyDataProvider(1 << 20),
    authorize: () => "Allowed",
  });
  await using client = closing(await TcpDataProvider.connect(server.address, { secretKey: alice }));
  await assert.rejects(
    client.getSamples({ start: 0, end: 15 }),
    /TooLarge.*67108864-byte frame limit/,
  );
  assert.equal((await client.getSamples({ start: 0, end: 0 })).tokens.length, 1 << 20);
});
