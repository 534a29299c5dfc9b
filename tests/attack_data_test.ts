/**
 * A client the standalone data server allows, turned against it: the `deno task data-server`
 * process of the README (config/llama-tiny's data.toml and state.toml: the bundled Brown corpus,
 * 6 sequences per step), over real TCP. Before the limits, one 17-byte request fetched the
 * whole 5.1 MB split, any number of connections were served, and an idle one lived 300 s.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { closing } from "../data/testing/fixtures.ts";
import {
  DATA_SERVER_CONTEXT,
  decodeDataServerMessage,
  parseHostPort,
  TcpDataProvider,
} from "../data/mod.ts";
import { toHex } from "../common/mod.ts";
import { clientHandshake, FrameReader, identityFromSecretKey } from "../net/mod.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const allowed = identityFromSecretKey(new Uint8Array(32).fill(3));

/** Starts the README's data server (on a free port, with tighter caps) and returns its address. */
async function startReadmeDataServer(extra: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    cwd: root,
    args: [
      "run",
      "--allow-read",
      "--allow-net",
      "data/data_server_main.ts",
      "--config",
      "config/llama-tiny/data.toml",
      "--state",
      "config/llama-tiny/state.toml",
      "--allow",
      toHex(allowed.publicKey),
      "--port",
      "0",
      ...extra,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!/on (\S+:\d+)\n/.test(out)) {
    const { value, done } = await lines.read();
    if (done) throw new Error(`data-server exited early: ${out}`);
    out += value;
  }
  const log = { text: out };
  const draining = (async () => {
    for (;;) {
      const { value, done } = await lines.read();
      if (done) return;
      log.text += value;
    }
  })();
  return {
    banner: out,
    log,
    address: /on (\S+:\d+)\n/.exec(out)![1],
    async [Symbol.asyncDispose]() {
      child.kill("SIGTERM");
      await draining;
      assert.equal((await child.status).code, 0);
    },
  };
}

Deno.test("a whole-dataset request is refused; an honest batch is served; the rate is capped", async () => {
  await using server = await startReadmeDataServer([]);
  assert.match(server.banner, /10058 sequences of 128 tokens, at most 6 per request/);
  await using client = closing(
    await TcpDataProvider.connect(server.address, { secretKey: allowed.secretKey }),
  );
  assert.equal(client.numSequences, 10058);
  await assert.rejects(
    client.getSamples({ start: 0, end: 10057 }),
    /rejected batch 0\.\.10057: TooLarge \(batch 0\.\.10057 spans 10058 sequences, this server serves at most 6 per request/,
  );
  const batch = await client.getSamples({ start: 6, end: 11 });
  assert.equal(batch.count, 6);
  assert.equal(batch.tokens.length, 6 * 128);
  // A burst of two batches, then about one per second: the next one is refused at once.
  assert.equal((await client.getSamples({ start: 12, end: 17 })).count, 6);
  await assert.rejects(
    client.getSamples({ start: 18, end: 23 }),
    /RateLimited \(batch 18\.\.23 needs 6 sequences, \d are available at 6 sequences\/s per client/,
  );
  // A key not on the list gets nothing at all.
  await using stranger = closing(
    await TcpDataProvider.connect(server.address, { secretKey: new Uint8Array(32).fill(4) }),
  );
  await assert.rejects(stranger.getSamples({ start: 0, end: 5 }), /NotInThisRound/);
});

Deno.test("at a cap of members' connections the extra one is refused; an idle one is closed", async () => {
  await using server = await startReadmeDataServer([
    "--max-connections",
    "2",
    "--idle-timeout",
    "0.5",
  ]);
  const { hostname, port } = parseHostPort(server.address);
  // Two connections of the allowed key (a member of this server's run, never evicted) that
  // complete the handshake and then say nothing.
  const idle = await Promise.all([0, 1].map(async () => {
    const conn = await Deno.connect({ hostname, port });
    const frames = new FrameReader(conn, { maxFrameBytes: 1 << 20 });
    await clientHandshake(conn, frames, {
      context: DATA_SERVER_CONTEXT,
      secretKey: allowed.secretKey,
    });
    return { conn, frames, since: Date.now() };
  }));
  try {
    await assert.rejects(
      TcpDataProvider.connect(server.address, { secretKey: allowed.secretKey }),
      /Server refused the connection: the server already has 2 connections, all of members/,
    );
    for (const { frames, since } of idle) {
      // Closed after the timeout, with the reason first.
      assert.deepEqual(decodeDataServerMessage((await frames.next())!), {
        kind: "Closing",
        reason: "no request for 500 ms",
      });
      assert.equal(await frames.next(), null);
      const waited = Date.now() - since;
      assert.ok(waited >= 450, `closed after ${waited} ms, before the 500 ms timeout`);
    }
  } finally {
    for (const { conn } of idle) conn.close();
  }
  // Their slots are free again.
  await using client = closing(
    await TcpDataProvider.connect(server.address, { secretKey: allowed.secretKey }),
  );
  assert.equal((await client.getSamples({ start: 0, end: 5 })).count, 6);
  assert.match(server.log.text, /refused 127\.0\.0\.1: the server already has 2 connections/);
});

Deno.test("at the cap a stranger's idle connection makes room for the run's key", async () => {
  await using server = await startReadmeDataServer(["--max-connections", "1"]);
  const { hostname, port } = parseHostPort(server.address);
  // A key the server does not serve completes its handshake and sits on the only slot.
  const conn = await Deno.connect({ hostname, port });
  const frames = new FrameReader(conn, { maxFrameBytes: 1 << 20 });
  await clientHandshake(conn, frames, {
    context: DATA_SERVER_CONTEXT,
    secretKey: new Uint8Array(32).fill(9),
  });
  try {
    await using client = closing(
      await TcpDataProvider.connect(server.address, { secretKey: allowed.secretKey }),
    );
    assert.equal((await client.getSamples({ start: 0, end: 1 })).count, 2);
    assert.equal(await frames.next(), null, "the stranger's connection was closed");
    assert.match(
      server.log.text,
      /closed the quietest connection \([0-9a-f]{64} from 127\.0\.0\.1\)/,
    );
  } finally {
    conn.close();
  }
});
