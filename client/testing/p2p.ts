/**
 * Helpers for this folder's tests: deterministic keys, polling for network conditions and a
 * scripted bulk listener. Not part of the public surface.
 *
 * @module
 */
import {
  BULK_REQUEST_BYTES,
  BULK_REQUEST_FROM_BYTES,
  type BulkRequest,
  bulkRequestBytes,
  decodeBulkRequest,
  publicKeyOf,
} from "../../net/p2p/mod.ts";

/** A deterministic 32-byte secret key for test participant `n`. */
export function testSecret(n: number): Uint8Array {
  return new Uint8Array(32).map((_, i) => (n * 31 + i * 7 + 1) & 0xff);
}

/** The public key of `testSecret(n)`. */
export function testPublic(n: number): Uint8Array {
  return publicKeyOf(testSecret(n));
}

/** Polls `cond` every 10 ms until it holds; throws naming `what` after `ms`. */
export async function waitFor(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A plain TCP server on 127.0.0.1 that reads one bulk request per connection and answers it
 * with the bytes of `answer`, whatever the request said: a provider that can lie, truncate
 * or tamper. With `hold`, it then keeps the connection open without sending another byte until
 * disposed: a transfer that stalls. `requests` lists the well-formed requests it read, in order.
 * Dispose of it to stop it.
 */
export function fakeBulkListener(
  answer: Uint8Array[],
  options: { hold?: boolean } = {},
): { port: number; requests: Required<BulkRequest>[] } & AsyncDisposable {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const requests: Required<BulkRequest>[] = [];
  const stop = new AbortController();
  const stopped = new Promise((resolve) => stop.signal.addEventListener("abort", resolve));
  const serve = async (conn: Deno.Conn) => {
    try {
      // The shortest request, then the rest its version announces: never a byte more.
      const request = new Uint8Array(BULK_REQUEST_FROM_BYTES);
      let size = BULK_REQUEST_BYTES;
      for (let got = 0; got < size;) {
        got += (await conn.read(request.subarray(got, size)))!;
        if (got === BULK_REQUEST_BYTES) size = bulkRequestBytes(request[0]) ?? size;
      }
      try {
        requests.push(decodeBulkRequest(request.subarray(0, size)));
      } catch {
        // Not a request; answered all the same.
      }
      for (const part of answer) {
        for (let off = 0; off < part.length;) off += await conn.write(part.subarray(off));
      }
      if (options.hold === true) await stopped;
    } finally {
      conn.close();
    }
  };
  const done = (async () => {
    const serving: Promise<void>[] = [];
    for await (const conn of listener) serving.push(serve(conn).catch(() => {}));
    await Promise.all(serving);
  })().catch(() => {});
  return {
    port: listener.addr.port,
    requests,
    async [Symbol.asyncDispose]() {
      stop.abort();
      listener.close();
      await done;
    },
  };
}

/**
 * Reads a child's first stdout line (its JSON hello: address and the like) and returns it
 * parsed, with the reader to cancel when stopping the child. Throws, quoting what it printed,
 * when the child exits first.
 */
export async function readHello(
  stdout: ReadableStream<Uint8Array>,
  who: string,
): Promise<{ hello: Record<string, unknown>; reader: ReadableStreamDefaultReader<string> }> {
  const reader = stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${who} exited before printing its address: "${text}"`);
    text += value;
  }
  return { hello: JSON.parse(text.slice(0, text.indexOf("\n"))), reader };
}
