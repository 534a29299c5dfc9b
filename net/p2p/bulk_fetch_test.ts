import assert from "node:assert/strict";
import { bulkFetch, BulkFetchError, bulkWorthwhile } from "./bulk_fetch.ts";
import { BulkListener } from "./bulk_listener.ts";
import { TicketBook } from "./bulk_tickets.ts";
import { encodeBulkResponseHeader } from "./bulk_wire.ts";
import { contentHash, hashToBytes } from "./content_store.ts";
import { PartialContent } from "./partial_content.ts";
import { fakeBulkListener, waitFor } from "../../client/testing/p2p.ts";

function pattern(n: number, seed: number): Uint8Array {
  return new Uint8Array(n).map((_, i) => (Math.imul(i + seed, 2654435761) >>> 24) & 0xff);
}

const TICKET = new Uint8Array(32).fill(7);
/** Where a test's bulk bytes land, as the payload service names them. */
const SOURCE = "provider/bulk";
/** The options every fetch of these tests shares, with a fresh `PartialContent`. */
const fresh = () => ({ into: new PartialContent(), source: SOURCE });

/** A real listener serving `content`, with one ticket issued for it from `offset`. */
function serve(content: Uint8Array, offset = 0): BulkListener & { hash: Uint8Array } {
  const tickets = new TicketBook();
  const hash = contentHash(content);
  tickets.issue({ ticket: TICKET, peer: "fetcher", hash, offset, now: Date.now() });
  const listener = BulkListener.start({
    host: "127.0.0.1",
    tickets,
    content: (h) => (h === hash ? content : undefined),
  });
  return Object.assign(listener, { hash: hashToBytes(hash) });
}

async function rejectsWith(promise: Promise<unknown>, code: string, message: RegExp) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof BulkFetchError, String(error));
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  });
}

Deno.test("a bulk fetch returns the offered bytes, verified, and counts the transfer", async () => {
  const content = pattern(5 * 1024 * 1024 + 3, 1);
  const listener = serve(content);
  try {
    const got = await bulkFetch({
      ...fresh(),
      hostname: "127.0.0.1",
      port: listener.port,
      ticket: TICKET,
      hash: listener.hash,
      length: content.length,
    });
    assert.deepEqual(got, content);
    assert.equal(listener.stats.served, 1);
    assert.equal(listener.stats.servedBytes, content.length);
  } finally {
    await listener.close();
  }
});

Deno.test("a tampered byte, a truncated body or a bigger claim are refused", async () => {
  const content = pattern(300_000, 2);
  const hash = hashToBytes(contentHash(content));
  const header = encodeBulkResponseHeader({ status: "Ok", length: content.length });
  const tampered = content.slice();
  tampered[123_456] ^= 0x40;
  const cases: [Uint8Array[], string, RegExp][] = [
    [[header, tampered], "hash-mismatch", /received bytes hash to [0-9a-f]{64}, expected/],
    [[header, content.subarray(0, 200_000)], "protocol", /ended after 200000 of 300000 bytes/],
    [
      [encodeBulkResponseHeader({ status: "Ok", length: 1 << 30 })],
      "too-large",
      /declares 1073741824 bytes, the offer said 300000/,
    ],
    [[header.subarray(0, 4)], "protocol", /response ended after 4 bytes/],
    [[Uint8Array.of(42)], "protocol", /unknown status code 42/],
  ];
  for (const [answer, code, message] of cases) {
    await using server = fakeBulkListener(answer);
    await rejectsWith(
      bulkFetch({
        ...fresh(),
        hostname: "127.0.0.1",
        port: server.port,
        ticket: TICKET,
        hash,
        length: content.length,
      }),
      code,
      message,
    );
  }
});

Deno.test("a listener that sends past the offered length is read up to it only", async () => {
  const content = pattern(300_000, 4);
  const header = encodeBulkResponseHeader({ status: "Ok", length: content.length });
  await using server = fakeBulkListener([header, content, new Uint8Array(8 * 1024 * 1024)]);
  let received = 0;
  const got = await bulkFetch({
    ...fresh(),
    hostname: "127.0.0.1",
    port: server.port,
    ticket: TICKET,
    hash: hashToBytes(contentHash(content)),
    length: content.length,
    received: (n) => received += n,
  });
  assert.deepEqual(got, content);
  assert.equal(received, content.length, "not a byte past the offered length was read");
});

Deno.test("wrong, replayed and expired tickets are refused with the listener's reason", async () => {
  const content = pattern(10_000, 3);
  const hash = contentHash(content);
  let now = 0;
  const tickets = new TicketBook({ lifetimeMs: 1000 });
  const listener = BulkListener.start({
    host: "127.0.0.1",
    tickets,
    content: () => content,
    now: () => now,
  });
  const fetch = (ticket: Uint8Array, forHash = hash) =>
    bulkFetch({
      ...fresh(),
      hostname: "127.0.0.1",
      port: listener.port,
      ticket,
      hash: hashToBytes(forHash),
      length: content.length,
    });
  try {
    const [a, b, c] = [1, 2, 3].map((n) => new Uint8Array(32).fill(n));
    for (const t of [a, b, c]) tickets.issue({ ticket: t, peer: "p", hash, now });
    await rejectsWith(fetch(new Uint8Array(32)), "refused", /answered UnknownTicket/);
    await rejectsWith(fetch(a, "00".repeat(32)), "refused", /answered WrongHash/);
    assert.deepEqual(await fetch(b), content);
    await rejectsWith(fetch(b), "refused", /answered UsedTicket/);
    now = 1000;
    await rejectsWith(fetch(c), "refused", /answered ExpiredTicket/);
    assert.deepEqual(listener.stats.refused, {
      UnknownTicket: 1,
      WrongHash: 1,
      UsedTicket: 1,
      ExpiredTicket: 1,
    });
  } finally {
    await listener.close();
  }
});

Deno.test("content forgotten after the offer is refused as NotFound", async () => {
  const tickets = new TicketBook();
  const hash = "cd".repeat(32);
  tickets.issue({ ticket: TICKET, peer: "p", hash, now: Date.now() });
  const listener = BulkListener.start({ host: "127.0.0.1", tickets, content: () => undefined });
  try {
    await rejectsWith(
      bulkFetch({
        ...fresh(),
        hostname: "127.0.0.1",
        port: listener.port,
        ticket: TICKET,
        hash: hashToBytes(hash),
        length: 5,
      }),
      "refused",
      /answered NotFound/,
    );
  } finally {
    await listener.close();
  }
});

Deno.test("an unreachable or silent listener and an aborted fetch fail cleanly", async () => {
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const closedPort = probe.addr.port;
  probe.close();
  const options = {
    ...fresh(),
    hostname: "127.0.0.1",
    ticket: TICKET,
    hash: new Uint8Array(32),
    length: 1,
  };
  await rejectsWith(
    bulkFetch({ ...options, port: closedPort }),
    "unreachable",
    new RegExp(`cannot connect to 127.0.0.1:${closedPort}`),
  );
  // A listener that accepts and then says nothing: the caller's signal ends the wait.
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of silent) held.push(conn);
  })();
  try {
    const controller = new AbortController();
    const fetching = bulkFetch({ ...options, port: silent.addr.port, signal: controller.signal });
    setTimeout(() => controller.abort(new Error("round ended")), 50);
    await assert.rejects(fetching, /round ended/);
    // Without one, the answer timeout ends it (a firewall dropping packets looks the same).
    await rejectsWith(
      bulkFetch({ ...options, port: silent.addr.port, answerTimeoutMs: 100 }),
      "unreachable",
      /no answer from 127.0.0.1:\d+ within 100 ms/,
    );
  } finally {
    silent.close();
    await accepting;
    for (const conn of held) conn.close();
  }
});

Deno.test("a bulk fetch goes on from the bytes held; the listener sends only the rest", async () => {
  const content = pattern(3 * 1024 * 1024 + 11, 5);
  const prefix = 1024 * 1024 + 3;
  const listener = serve(content, prefix);
  try {
    const into = new PartialContent();
    into.begin("A", { hash: listener.hash, length: content.length, offset: 0 });
    into.append("A", content.subarray(0, prefix)); // in-band from A, which then stalled
    let received = 0;
    const got = await bulkFetch({
      hostname: "127.0.0.1",
      port: listener.port,
      ticket: TICKET,
      hash: listener.hash,
      length: content.length,
      into,
      source: SOURCE,
      received: (n) => received += n,
    });
    assert.deepEqual(got, content);
    assert.equal(received, content.length - prefix);
    assert.deepEqual([...into.sources], ["A", SOURCE]);
    assert.equal(into.resumes, 1);
    assert.equal(listener.stats.servedBytes, content.length - prefix);
    assert.equal(listener.stats.resumed, 1);
  } finally {
    await listener.close();
  }
});

Deno.test("bytes read before a failure stay for the next attempt, which asks for the rest", async () => {
  const content = pattern(400_000, 6);
  const hash = hashToBytes(contentHash(content));
  const header = encodeBulkResponseHeader({ status: "Ok", length: content.length });
  const into = new PartialContent();
  const options = {
    hostname: "127.0.0.1",
    ticket: TICKET,
    hash,
    length: content.length,
    into,
    source: SOURCE,
  };
  // A listener that sends 150 000 bytes and hangs up, then one that stalls after 100 000 more.
  {
    await using cut = fakeBulkListener([header, content.subarray(0, 150_000)]);
    await rejectsWith(
      bulkFetch({ ...options, port: cut.port }),
      "protocol",
      /response ended after 150000 of 400000 bytes/,
    );
    assert.deepEqual(cut.requests.map((r) => r.offset), [0]);
  }
  assert.equal(into.offset, 150_000);
  {
    const from = encodeBulkResponseHeader({
      status: "OkFrom",
      length: content.length,
      offset: 150_000,
    });
    await using stalls = fakeBulkListener([from, content.subarray(150_000, 250_000)], {
      hold: true,
    });
    const controller = new AbortController();
    const fetching = bulkFetch({ ...options, port: stalls.port, signal: controller.signal });
    await waitFor("100 000 more bytes", () => into.offset === 250_000);
    controller.abort(new Error("stalled"));
    await assert.rejects(fetching, /stalled/);
    assert.deepEqual(stalls.requests.map((r) => r.offset), [150_000]);
  }
  assert.equal(into.offset, 250_000);
  const listener = serve(content, 250_000);
  try {
    assert.deepEqual(await bulkFetch({ ...options, port: listener.port }), content);
    assert.equal(listener.stats.servedBytes, 150_000);
  } finally {
    await listener.close();
  }
});

Deno.test("an answer from another offset than the one asked is refused, the prefix kept", async () => {
  const content = pattern(100_000, 7);
  const hash = hashToBytes(contentHash(content));
  const answers: [Uint8Array, RegExp][] = [
    [
      encodeBulkResponseHeader({ status: "Ok", length: content.length }),
      /serves from byte 0, we asked from 1000/,
    ],
    [
      encodeBulkResponseHeader({ status: "OkFrom", length: content.length, offset: 999 }),
      /serves from byte 999, we asked from 1000/,
    ],
    [encodeBulkResponseHeader({ status: "BadOffset" }), /answered BadOffset/],
    [encodeBulkResponseHeader({ status: "WrongOffset" }), /answered WrongOffset/],
  ];
  for (const [header, message] of answers) {
    const into = new PartialContent();
    into.begin("A", { hash, length: content.length, offset: 0 });
    into.append("A", content.subarray(0, 1000));
    await using server = fakeBulkListener([header, content]);
    await rejectsWith(
      bulkFetch({
        hostname: "127.0.0.1",
        port: server.port,
        ticket: TICKET,
        hash,
        length: content.length,
        into,
        source: SOURCE,
      }),
      header.length === 1 ? "refused" : "protocol",
      message,
    );
    assert.equal(into.offset, 1000);
    assert.deepEqual([...into.sources], ["A"]);
  }
});

Deno.test("content mixed from a prefix and a bulk rest that fails its hash blames nobody", async () => {
  const content = pattern(200_000, 8);
  const listener = serve(content, 50_000);
  try {
    const into = new PartialContent();
    const corrupted = content.slice(0, 50_000);
    corrupted[42] ^= 1;
    into.begin("A", { hash: listener.hash, length: content.length, offset: 0 });
    into.append("A", corrupted);
    await assert.rejects(
      bulkFetch({
        hostname: "127.0.0.1",
        port: listener.port,
        ticket: TICKET,
        hash: listener.hash,
        length: content.length,
        into,
        source: SOURCE,
      }),
      (error: unknown) => {
        assert.ok(error instanceof BulkFetchError);
        assert.equal(error.code, "hash-mismatch");
        assert.equal(error.mixed, true);
        assert.match(error.message, /from 2 sources: nobody to blame/);
        return true;
      },
    );
    // Discarded, and never resumed again: the next attempt fetches the whole content.
    assert.equal(into.offset, 0);
    into.begin("B", { hash: listener.hash, length: content.length, offset: 0 });
    into.append("B", content.subarray(0, 10));
    assert.equal(into.offset, 0);
  } finally {
    await listener.close();
  }
});

Deno.test("bulkWorthwhile weighs the size against two extra round trips", () => {
  const MiB = 1024 * 1024;
  assert.equal(bulkWorthwhile(MiB, 1, MiB), true);
  assert.equal(bulkWorthwhile(MiB - 1, 1, MiB), false);
  assert.equal(bulkWorthwhile(100 * MiB, 50, MiB), true);
  assert.equal(bulkWorthwhile(10 * MiB, 50, MiB), false);
  assert.equal(bulkWorthwhile(undefined, 50, MiB), true);
  assert.equal(bulkWorthwhile(1, undefined, MiB), true);
  assert.equal(bulkWorthwhile(1, 50, 0), true);
});
