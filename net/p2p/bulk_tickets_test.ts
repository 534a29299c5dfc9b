import assert from "node:assert/strict";
import fc from "fast-check";
import { TicketBook } from "./bulk_tickets.ts";

const ticket = (n: number) => new Uint8Array(32).fill(n);
const HASH = "aa".repeat(32);
const OTHER = "bb".repeat(32);

Deno.test("a ticket is redeemed once, for its hash, before it expires", () => {
  const book = new TicketBook({ lifetimeMs: 1000 });
  assert.equal(book.issue({ ticket: ticket(1), peer: "p", hash: HASH, now: 0 }), true);
  assert.deepEqual(book.redeem({ ticket: ticket(1), hash: HASH, now: 999 }), {
    ok: true,
    peer: "p",
    hash: HASH,
  });
  assert.deepEqual(book.redeem({ ticket: ticket(1), hash: HASH, now: 999 }), {
    ok: false,
    reason: "used",
  });
});

Deno.test("unknown, expired and wrong-hash tickets are refused, and a refusal spends it", () => {
  const book = new TicketBook({ lifetimeMs: 1000 });
  book.issue({ ticket: ticket(1), peer: "p", hash: HASH, now: 0 });
  book.issue({ ticket: ticket(2), peer: "p", hash: HASH, now: 0 });
  assert.deepEqual(book.redeem({ ticket: ticket(9), hash: HASH, now: 1 }), {
    ok: false,
    reason: "unknown",
  });
  assert.deepEqual(book.redeem({ ticket: ticket(1), hash: OTHER, now: 1 }), {
    ok: false,
    reason: "wrong-hash",
  });
  // The wrong-hash presentation spent it: the right hash is now too late.
  assert.deepEqual(book.redeem({ ticket: ticket(1), hash: HASH, now: 2 }), {
    ok: false,
    reason: "used",
  });
  assert.deepEqual(book.redeem({ ticket: ticket(2), hash: HASH, now: 1000 }), {
    ok: false,
    reason: "expired",
  });
  assert.deepEqual(book.redeem({ ticket: new Uint8Array(5), hash: HASH, now: 1 }), {
    ok: false,
    reason: "unknown",
  });
});

Deno.test("a ticket for the rest of the content is redeemed from its offset only", () => {
  const book = new TicketBook();
  book.issue({ ticket: ticket(1), peer: "p", hash: HASH, offset: 4096, now: 0 });
  book.issue({ ticket: ticket(2), peer: "p", hash: HASH, offset: 4096, now: 0 });
  book.issue({ ticket: ticket(3), peer: "p", hash: HASH, now: 0 });
  assert.deepEqual(book.redeem({ ticket: ticket(1), hash: HASH, offset: 4096, now: 1 }), {
    ok: true,
    peer: "p",
    hash: HASH,
  });
  // Another offset, or the whole content, is not what the ticket was issued for; it is spent.
  assert.deepEqual(book.redeem({ ticket: ticket(2), hash: HASH, now: 1 }), {
    ok: false,
    reason: "wrong-offset",
  });
  assert.equal(book.redeem({ ticket: ticket(2), hash: HASH, offset: 4096, now: 1 }).ok, false);
  assert.deepEqual(book.redeem({ ticket: ticket(3), hash: HASH, offset: 1, now: 1 }), {
    ok: false,
    reason: "wrong-offset",
  });
  assert.throws(
    () => book.issue({ ticket: ticket(4), peer: "p", hash: HASH, offset: -1, now: 0 }),
    /ticket offset must be a non-negative safe integer, found -1/,
  );
});

Deno.test("expired tickets are remembered for one more lifetime, then forgotten", () => {
  const book = new TicketBook({ lifetimeMs: 1000 });
  book.issue({ ticket: ticket(1), peer: "p", hash: HASH, now: 0 });
  book.issue({ ticket: ticket(2), peer: "p", hash: HASH, now: 0 });
  assert.equal(book.redeem({ ticket: ticket(1), hash: HASH, now: 1999 }).ok, false);
  assert.equal(book.size, 2);
  assert.deepEqual(book.redeem({ ticket: ticket(2), hash: HASH, now: 2000 }), {
    ok: false,
    reason: "unknown",
  });
  assert.equal(book.size, 0);
});

Deno.test("outstanding tickets are capped per peer and in total", () => {
  const book = new TicketBook({ lifetimeMs: 1000, maxPerPeer: 2, maxTotal: 3 });
  const issue = (n: number, peer: string, now = 0) =>
    book.issue({ ticket: ticket(n), peer, hash: HASH, now });
  assert.equal(issue(1, "a"), true);
  assert.equal(issue(2, "a"), true);
  assert.equal(issue(3, "a"), false); // a is at its cap
  assert.equal(issue(4, "b"), true);
  assert.equal(issue(5, "c"), false); // the book is at its cap
  // Spending one frees a place; expiry frees the rest.
  assert.equal(book.redeem({ ticket: ticket(1), hash: HASH, now: 1 }).ok, true);
  assert.equal(issue(6, "a", 1), true);
  assert.equal(issue(7, "c", 1000), true);
  assert.equal(issue(8, "c", 1000), true);
  assert.equal(issue(9, "c", 1000), false);
});

Deno.test("bad tickets and limits are refused with the name of what is wrong", () => {
  const book = new TicketBook();
  assert.throws(
    () => book.issue({ ticket: new Uint8Array(16), peer: "p", hash: HASH, now: 0 }),
    /ticket must be 32 bytes, found 16/,
  );
  book.issue({ ticket: ticket(1), peer: "p", hash: HASH, now: 0 });
  assert.throws(
    () => book.issue({ ticket: ticket(1), peer: "q", hash: HASH, now: 0 }),
    /already issued/,
  );
  assert.throws(() => new TicketBook({ lifetimeMs: 0 }), /lifetimeMs must be a positive integer/);
  assert.throws(() => new TicketBook({ maxPerPeer: 1.5 }), /maxPerPeer/);
});

Deno.test("memory stays bounded when tickets turn over fast", () => {
  const book = new TicketBook({ lifetimeMs: 1_000_000, maxTotal: 4 });
  for (let n = 0; n < 200; n++) {
    const t = new Uint8Array(32);
    new DataView(t.buffer).setUint32(0, n);
    assert.equal(book.issue({ ticket: t, peer: "p", hash: HASH, now: n }), true);
    assert.equal(book.redeem({ ticket: t, hash: HASH, now: n }).ok, true);
  }
  assert.ok(book.size <= 17, `remembered ${book.size} tickets`);
});

Deno.test("property: a ticket admits once, only before expiry, only for its hash; caps hold", () => {
  type Op =
    | { kind: "issue"; peer: number; hash: number; dt: number }
    | { kind: "redeem"; which: number; hash: number; dt: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant("issue" as const),
      peer: fc.nat(2),
      hash: fc.nat(1),
      dt: fc.nat(400),
    }),
    fc.record({
      kind: fc.constant("redeem" as const),
      which: fc.nat(40),
      hash: fc.nat(1),
      dt: fc.nat(400),
    }),
  );
  fc.assert(fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
    const lifetimeMs = 1000;
    const [maxPerPeer, maxTotal] = [3, 5];
    const book = new TicketBook({ lifetimeMs, maxPerPeer, maxTotal });
    const model: { peer: string; hash: string; expiresAt: number; spent: boolean }[] = [];
    const hashes = [HASH, OTHER];
    let now = 0;
    for (const o of ops) {
      now += o.dt;
      if (o.kind === "issue") {
        const peer = `p${o.peer}`;
        const live = model.filter((e) => !e.spent && e.expiresAt > now);
        const expected = live.length < maxTotal &&
          live.filter((e) => e.peer === peer).length < maxPerPeer;
        const t = new Uint8Array(32);
        new DataView(t.buffer).setUint32(0, model.length + 1);
        const issued = book.issue({ ticket: t, peer, hash: hashes[o.hash], now });
        assert.equal(issued, expected);
        model.push({ peer, hash: hashes[o.hash], expiresAt: now + lifetimeMs, spent: !issued });
      } else {
        const t = new Uint8Array(32);
        new DataView(t.buffer).setUint32(0, o.which + 1);
        const entry = model[o.which];
        const result = book.redeem({ ticket: t, hash: hashes[o.hash], now });
        const expected = entry !== undefined && !entry.spent && now < entry.expiresAt &&
          entry.hash === hashes[o.hash];
        assert.equal(result.ok, expected);
        if (entry !== undefined) entry.spent = true;
      }
    }
  }));
});
