import assert from "node:assert/strict";
import { startDelayProxy } from "./delay_proxy.ts";
import { seededBytes } from "./seeded_bytes.ts";

/** An echo server on 127.0.0.1 that writes back everything, then ends when its client does. */
function echoServer(): { port: number; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  void (async () => {
    for await (const conn of listener) {
      void (async () => {
        const buffer = new Uint8Array(16 * 1024);
        try {
          while (true) {
            const n = await conn.read(buffer);
            if (n === null) break;
            for (let off = 0; off < n;) off += await conn.write(buffer.subarray(off, n));
          }
          await conn.closeWrite();
        } catch { /* the test closed it */ }
      })();
    }
  })().catch(() => {});
  return { port: (listener.addr as Deno.NetAddr).port, close: () => listener.close() };
}

async function readExactly(conn: Deno.Conn, n: number): Promise<Uint8Array> {
  const out = new Uint8Array(n);
  for (let off = 0; off < n;) {
    const got = await conn.read(out.subarray(off));
    if (got === null) throw new Error(`ended after ${off} of ${n} bytes`);
    off += got;
  }
  return out;
}

Deno.test("a delay proxy holds every byte for its delay each way, in order, and passes the end on", async () => {
  const echo = echoServer();
  const delayMs = 60;
  await using proxy = startDelayProxy({
    listen: { hostname: "127.0.0.1", port: 0 },
    target: { hostname: "127.0.0.1", port: echo.port },
    delayMs,
    maxBufferedBytes: 256 * 1024, // smaller than the payload: backpressure is exercised
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  try {
    // A round trip crosses the proxy twice: at least twice the delay (a lower bound only).
    const started = performance.now();
    await conn.write(new Uint8Array([7]));
    assert.deepEqual(await readExactly(conn, 1), new Uint8Array([7]));
    const rtt = performance.now() - started;
    assert.ok(rtt >= 2 * delayMs - 2, `round trip ${rtt.toFixed(1)} ms, under 2 x ${delayMs}`);
    // 2 MiB both ways, unchanged and in order, while the reply streams back.
    const payload = seededBytes(2 * 1024 * 1024, 11);
    const [, echoed] = await Promise.all([
      (async () => {
        for (let off = 0; off < payload.length;) off += await conn.write(payload.subarray(off));
        await conn.closeWrite();
      })(),
      readExactly(conn, payload.length),
    ]);
    assert.deepEqual(echoed, payload);
    // Our end reached the server through the proxy; its end comes back.
    assert.equal(await conn.read(new Uint8Array(1)), null);
    assert.equal(proxy.accepted, 1);
  } finally {
    conn.close();
    echo.close();
  }
});

Deno.test("a delay proxy whose target refuses closes the connection, and close() ends it all", async () => {
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  // The proxy binds while the dead port is still held: given the port just freed, it would
  // proxy to itself, a chain of connections that never ends (it hung once).
  const proxy = startDelayProxy({
    listen: { hostname: "127.0.0.1", port: 0 },
    target: { hostname: "127.0.0.1", port },
    delayMs: 5,
  });
  closed.close(); // nothing listens there now
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  const ended = await conn.read(new Uint8Array(1)).catch(() => null);
  assert.equal(ended, null);
  conn.close();
  // A connection left open is closed by close(), and the port stops answering.
  const echo = echoServer();
  const second = startDelayProxy({
    listen: { hostname: "127.0.0.1", port: 0 },
    target: { hostname: "127.0.0.1", port: echo.port },
    delayMs: 5,
  });
  const open = await Deno.connect({ hostname: "127.0.0.1", port: second.port });
  await open.write(new Uint8Array([1]));
  assert.deepEqual(await readExactly(open, 1), new Uint8Array([1]));
  await Promise.all([proxy.close(), second.close()]);
  assert.equal(await open.read(new Uint8Array(1)).catch(() => null), null);
  open.close();
  await assert.rejects(Deno.connect({ hostname: "127.0.0.1", port: second.port }));
  echo.close();
  assert.throws(
    () =>
      startDelayProxy({
        listen: { hostname: "127.0.0.1", port: 0 },
        target: { hostname: "127.0.0.1", port: 1 },
        delayMs: -1,
      }),
    /delayMs must be/,
  );
});

Deno.test("a frozen proxy answers nothing and closes nothing, old connections or new, until close()", async () => {
  const echo = echoServer();
  const proxy = startDelayProxy({
    listen: { hostname: "127.0.0.1", port: 0 },
    target: { hostname: "127.0.0.1", port: echo.port },
    delayMs: 0,
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  await conn.write(new Uint8Array([1]));
  assert.deepEqual(await readExactly(conn, 1), new Uint8Array([1]));
  proxy.freeze();
  const late = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
  const silent = (c: Deno.Conn) => {
    const read = c.read(new Uint8Array(1)).then((n) => n === null ? "closed" : "answered");
    const quiet = new Promise<string>((r) => setTimeout(() => r("silent"), 300));
    return { read, first: Promise.race([read, quiet]) };
  };
  await conn.write(new Uint8Array([2]));
  await late.write(new Uint8Array([3]));
  const [old, fresh] = [silent(conn), silent(late)];
  assert.equal(await old.first, "silent", "an open connection gets no answer, and no reset");
  assert.equal(await fresh.first, "silent", "a new connection is accepted and left hanging");
  await proxy.close();
  assert.equal(await old.read.catch(() => "closed"), "closed");
  assert.equal(await fresh.read.catch(() => "closed"), "closed");
  conn.close();
  late.close();
  echo.close();
});
