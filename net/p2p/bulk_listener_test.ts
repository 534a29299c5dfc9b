import assert from "node:assert/strict";
import { BulkListener } from "./bulk_listener.ts";
import { TicketBook } from "./bulk_tickets.ts";
import { BULK_STATUSES } from "./bulk_wire.ts";
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
    assert.deepEqual(listener.stats.refused, { BadRequest: 1 });
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
