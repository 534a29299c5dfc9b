import assert from "node:assert/strict";
import type { Stream } from "@libp2p/interface";
import { createP2PNode } from "./node.ts";
import { sendChunked } from "./payload_stream.ts";
import { StreamReader } from "./stream_reader.ts";
import { testPublic, testSecret, waitFor } from "../../client/testing/p2p.ts";

const PROTOCOL = "/psyche-test/reader/1";

async function pair(send: (stream: Stream) => Promise<void>) {
  const keys = [testPublic(1), testPublic(2)];
  const a = await createP2PNode({ secretKey: testSecret(1), allowedPeers: keys });
  const b = await createP2PNode({ secretKey: testSecret(2), allowedPeers: keys });
  await a.libp2p.handle(PROTOCOL, send);
  await b.connect(a.addresses()[0]);
  const stream = await b.libp2p.dialProtocol(a.peerId, PROTOCOL);
  return {
    stream,
    async [Symbol.asyncDispose]() {
      await Promise.all([a.stop(), b.stop()]);
    },
  };
}

async function drain(reader: StreamReader): Promise<number[]> {
  const sizes: number[] = [];
  for (let chunk = await reader.next(); chunk !== undefined; chunk = await reader.next()) {
    sizes.push(chunk.length);
  }
  return sizes;
}

Deno.test("data and the end that arrive before the first read are not lost", async () => {
  await using p = await pair(async (stream) => {
    stream.send(Uint8Array.of(1, 2, 3));
    await stream.close();
  });
  const reader = new StreamReader(p.stream);
  await p.stream.close();
  await new Promise((r) => setTimeout(r, 100)); // everything, including the end, arrives now
  assert.deepEqual((await drain(reader)).reduce((a, b) => a + b, 0), 3);
  assert.equal(await reader.next(), undefined, "stays ended");
});

Deno.test("a slow reader pauses the stream and still gets every byte in order", async () => {
  const size = 24 * 1024 * 1024; // above the 16 MiB high-water mark
  const payload = new Uint8Array(size).map((_, i) => i % 251);
  await using p = await pair(async (stream) => {
    await sendChunked(stream, [payload], 1024 * 1024);
    await stream.close();
  });
  const reader = new StreamReader(p.stream);
  await p.stream.close();
  await waitFor("the queue to pass the high-water mark", () => reader.queuedBytes > 16 << 20);
  assert.equal(p.stream.readStatus, "paused");
  const out = new Uint8Array(size);
  let filled = 0;
  for (let chunk = await reader.next(); chunk !== undefined; chunk = await reader.next()) {
    out.set(chunk, filled);
    filled += chunk.length;
  }
  assert.equal(filled, size);
  assert.ok(out.every((v, i) => v === i % 251));
});

Deno.test("a reset from the remote rejects the next read", async () => {
  await using p = await pair((stream) => {
    stream.abort(new Error("no"));
    return Promise.resolve();
  });
  const reader = new StreamReader(p.stream);
  await assert.rejects(() => drain(reader));
});
