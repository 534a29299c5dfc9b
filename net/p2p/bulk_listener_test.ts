import assert from "node:assert/strict";
import { BulkListener } from "./bulk_listener.ts";
import { TicketBook } from "./bulk_tickets.ts";
import {
  BULK_STATUSES,
  decodeBulkResponseHeader,
  encodeBulkRequest,
  encodeBulkResponseHeader,
} from "./bulk_wire.ts";
import { contentHash, hashToBytes } from "./content_store.ts";
import { seededBytes } from "../testing/seeded_bytes.ts";
import { waitFor } from "../../client/testing/p2p.ts";

async function readAll(conn: Deno.Conn): Promise<number[]> {
  const out: number[] = [];
  const buffer = new Uint8Array(64);
  for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
    out.push(...buffer.subarray(0, n));
  }
  return out;
}

const code = (status: typeof BULK_STATUSES[number]) => BULK_STATUSES.indexOf(status);

/** Writes `request` to the listener on `port` and returns everything it answers. */
async function exchange(port: number, request: Uint8Array): Promise<Uint8Array> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    for (let sent = 0; sent < request.length;) sent += await conn.write(request.subarray(sent));
    return Uint8Array.from(await readAll(conn));
  } finally {
    conn.close();
  }
}

Deno.test("the listener serves the rest from a ticket's offset, and refuses other offsets", async () => {
  const content = seededBytes(5000, 1);
  const hash = contentHash(content);
  const tickets = new TicketBook();
  const ticket = (n: number) => new Uint8Array(32).fill(n);
  const now = Date.now();
  tickets.issue({ ticket: ticket(1), peer: "p", hash, offset: 1234, now });
  tickets.issue({ ticket: ticket(2), peer: "p", hash, now }); // whole: version 1, as ever
  tickets.issue({ ticket: ticket(3), peer: "p", hash, offset: 1234, now });
  tickets.issue({ ticket: ticket(4), peer: "p", hash, offset: 5000, now }); // at the end
  tickets.issue({ ticket: ticket(5), peer: "p", hash, offset: 9999, now }); // past it
  const listener = BulkListener.start({
    host: "127.0.0.1",
    tickets,
    content: (h) => (h === hash ? content : undefined),
  });
  const ask = (n: number, offset: number) =>
    exchange(
      listener.port,
      encodeBulkRequest({ ticket: ticket(n), hash: hashToBytes(hash), offset }),
    );
  try {
    const rest = await ask(1, 1234);
    const from = encodeBulkResponseHeader({ status: "OkFrom", length: 5000, offset: 1234 });
    assert.deepEqual(rest.subarray(0, from.length), from);
    assert.deepEqual(rest.subarray(from.length), content.subarray(1234));
    const whole = await ask(2, 0);
    assert.deepEqual(decodeBulkResponseHeader(whole)?.header, { status: "Ok", length: 5000 });
    assert.deepEqual(whole.subarray(9), content);
    assert.deepEqual([...await ask(3, 1000)], [code("WrongOffset")]);
    assert.deepEqual([...await ask(4, 5000)], [code("BadOffset")]);
    assert.deepEqual([...await ask(5, 9999)], [code("BadOffset")]);
    assert.deepEqual(listener.stats, {
      served: 2,
      servedBytes: 5000 - 1234 + 5000,
      resumed: 1,
      refused: { WrongOffset: 1, BadOffset: 2 },
    });
  } finally {
    await listener.close();
  }
});

Deno.test("the listener answers Busy beyond maxConnections and hangs up on silent requesters", async () => {
  const listener = BulkListener.start({
    host: "127.0.0.1",
    tickets: new TicketBook(),
    content: () => undefined,
    maxConnections: 1,
    requestTimeoutMs: 100,
  });
  try {
    const silent = await Deno.connect({ hostname: "127.0.0.1", port: listener.port });
    await waitFor("the first connection", () => listener.openConnections === 1);
    const second = await Deno.connect({ hostname: "127.0.0.1", port: listener.port });
    assert.deepEqual(await readAll(second), [code("Busy")]);
    second.close();
    // The silent one is cut off after requestTimeoutMs without an answer.
    assert.deepEqual(await readAll(silent), []);
    silent.close();
    assert.deepEqual(listener.stats.refused, { Busy: 1, Timeout: 1 });
    assert.equal(listener.openConnections, 0);
  } finally {
    await listener.close();
  }
});

Deno.test("a malformed request is answered BadRequest", async () => {
  const listener = BulkListener.start({
    host: "127.0.0.1",
    tickets: new TicketBook(),
    content: () => undefined,
  });
  try {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: listener.port });
    await conn.write(new Uint8Array(65).fill(9)); // version 9
    assert.deepEqual(await readAll(conn), [code("BadRequest")]);
    conn.close();
    // Version 2 with offset 0: the listener read all 73 bytes, and refuses them.
    const zero = Uint8Array.of(2, ...new Uint8Array(72));
    assert.deepEqual([...await exchange(listener.port, zero)], [code("BadRequest")]);
    assert.deepEqual(listener.stats.refused, { BadRequest: 2 });
  } finally {
    await listener.close();
  }
});

Deno.test("close() hangs up on open connections; bad options are refused", async () => {
  const listener = BulkListener.start({
    host: "127.0.0.1",
    tickets: new TicketBook(),
    content: () => undefined,
  });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: listener.port });
  await waitFor("the connection", () => listener.openConnections === 1);
  await listener.close();
  await listener.close();
  assert.deepEqual(await readAll(conn), []);
  conn.close();
  assert.throws(
    () =>
      BulkListener.start({
        host: "127.0.0.1",
        port: 70_000,
        tickets: new TicketBook(),
        content: () => undefined,
      }),
    /bulk port must be an integer in 0..65535, found 70000/,
  );
});

Deno.test("one address cannot take every slot", async () => {
  const listener = BulkListener.start({
    host: "127.0.0.1",
    tickets: new TicketBook(),
    content: () => undefined,
    maxConnections: 8,
    maxConnectionsPerAddress: 2,
    requestTimeoutMs: 100,
  });
  try {
    const held = [
      await Deno.connect({ hostname: "127.0.0.1", port: listener.port }),
      await Deno.connect({ hostname: "127.0.0.1", port: listener.port }),
    ];
    await waitFor("two connections", () => listener.openConnections === 2);
    const third = await Deno.connect({ hostname: "127.0.0.1", port: listener.port });
    assert.deepEqual(await readAll(third), [code("Busy")]);
    third.close();
    for (const conn of held) {
      assert.deepEqual(await readAll(conn), []); // cut off after requestTimeoutMs
      conn.close();
    }
    // The slots are free again once they are gone.
    const again = await Deno.connect({ hostname: "127.0.0.1", port: listener.port });
    await waitFor("the new connection", () => listener.openConnections === 1);
    again.close();
    assert.deepEqual(listener.stats.refused, { Busy: 1, Timeout: 2 });
  } finally {
    await listener.close();
  }
});
