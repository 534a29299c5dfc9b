import assert from "node:assert/strict";
import { ConnectionTable } from "./connection_table.ts";

const key = (n: number) => new Uint8Array(32).fill(n);
const membersOf = (...ns: number[]) => (k: Uint8Array) => ns.includes(k[0]);

Deno.test("one address may hold at most maxPerAddress connections", () => {
  const table = new ConnectionTable<string>({ maxConnections: 10, maxPerAddress: 2 });
  const none = membersOf();
  for (const name of ["a", "b"]) {
    assert.deepEqual(table.admit("10.0.0.1", none), { kind: "Admit" });
    table.add(name, "10.0.0.1", 0);
  }
  assert.deepEqual(table.admit("10.0.0.1", none), {
    kind: "Refuse",
    reason: "10.0.0.1 already has 2 connections (the most per address)",
  });
  assert.deepEqual(table.admit("10.0.0.2", none), { kind: "Admit" }, "other addresses may");
  table.remove(table.entries()[0]);
  assert.equal(table.countFrom("10.0.0.1"), 1);
  assert.deepEqual(table.admit("10.0.0.1", none), { kind: "Admit" });
});

Deno.test("at the cap, a new connection evicts the quietest non-member, never a member", () => {
  const table = new ConnectionTable<string>({ maxConnections: 3, maxPerAddress: 3 });
  const member = table.add("member", "10.0.0.1", 0);
  member.key = key(1);
  const quiet = table.add("quiet", "10.0.0.2", 5);
  quiet.key = key(2);
  const handshaking = table.add("handshaking", "10.0.0.3", 9);
  const admission = table.admit("10.0.0.4", membersOf(1));
  assert.deepEqual(admission, { kind: "Evict", victim: quiet });
  assert.equal(table.size, 2, "the victim left the table");
  assert.equal(table.countFrom("10.0.0.2"), 0);
  assert.equal(table.remove(quiet), false, "removing it again is a no-op");
  table.add("new", "10.0.0.4", 10);
  assert.deepEqual(table.admit("10.0.0.5", membersOf(1)), { kind: "Evict", victim: handshaking });
});

Deno.test("a cap full of members refuses new connections", () => {
  const table = new ConnectionTable<string>({ maxConnections: 2, maxPerAddress: 2 });
  table.add("a", "10.0.0.1", 0).key = key(1);
  table.add("b", "10.0.0.1", 0).key = key(2);
  assert.deepEqual(table.admit("10.0.0.9", membersOf(1, 2)), {
    kind: "Refuse",
    reason: "the server already has 2 connections, all of members",
  });
});

Deno.test("idle authenticated non-members are taken out; members and handshakes are not", () => {
  const table = new ConnectionTable<string>({ maxConnections: 10, maxPerAddress: 10 });
  const member = table.add("member", "a", 0);
  member.key = key(1);
  const stranger = table.add("stranger", "a", 0);
  stranger.key = key(2);
  const talker = table.add("talker", "a", 0);
  talker.key = key(3);
  table.add("handshaking", "a", 0);
  talker.lastActiveMs = 900;
  assert.deepEqual(table.takeIdle(999, 1000, membersOf(1)), []);
  assert.deepEqual(table.takeIdle(1000, 1000, membersOf(1)).map((e) => e.handle), ["stranger"]);
  assert.equal(table.size, 3);
  assert.equal(member.lastActiveMs, 1000, "a member's idle clock stays at zero");
  // The member leaves the run: it gets the whole timeout from its last membership.
  assert.deepEqual(table.takeIdle(1999, 1000, membersOf()).map((e) => e.handle), ["talker"]);
  assert.deepEqual(table.takeIdle(2000, 1000, membersOf()).map((e) => e.handle), ["member"]);
});

Deno.test("limits below 1 are refused", () => {
  assert.throws(
    () => new ConnectionTable({ maxConnections: 0, maxPerAddress: 1 }),
    /maxConnections must be a whole number >= 1, found 0/,
  );
});
