import assert from "node:assert/strict";
import { addressKey, ConnectionTable } from "./connection_table.ts";

const key = (n: number) => `key-${n}`;
const membersOf = (...ns: number[]) => (k: string) => ns.map(key).includes(k);

Deno.test("one address may hold at most maxPerAddress connections", () => {
  const table = new ConnectionTable<string>({
    maxConnections: 10,
    maxPerAddress: 2,
    connectsPerSecond: 1000,
  });
  const none = membersOf();
  for (const name of ["a", "b"]) {
    assert.deepEqual(table.admit("10.0.0.1", 0, none), { kind: "Admit" });
    table.add(name, "10.0.0.1", 0);
  }
  assert.deepEqual(table.admit("10.0.0.1", 0, none), {
    kind: "Refuse",
    reason: "10.0.0.1 already has 2 connections (the most per address)",
  });
  assert.deepEqual(table.admit("10.0.0.2", 0, none), { kind: "Admit" }, "other addresses may");
  table.remove(table.entries()[0]);
  assert.equal(table.countFrom("10.0.0.1"), 1);
  assert.deepEqual(table.admit("10.0.0.1", 10, none), { kind: "Admit" });
});

Deno.test("at the cap, a new connection evicts the quietest non-member, never a member", () => {
  const table = new ConnectionTable<string>({ maxConnections: 3, maxPerAddress: 3 });
  const member = table.add("member", "10.0.0.1", 0);
  member.key = key(1);
  const quiet = table.add("quiet", "10.0.0.2", 5);
  quiet.key = key(2);
  const handshaking = table.add("handshaking", "10.0.0.3", 9);
  const admission = table.admit("10.0.0.4", 0, membersOf(1));
  assert.deepEqual(admission, { kind: "Evict", victim: quiet });
  assert.equal(table.size, 2, "the victim left the table");
  assert.equal(table.countFrom("10.0.0.2"), 0);
  assert.equal(table.remove(quiet), false, "removing it again is a no-op");
  table.add("new", "10.0.0.4", 10);
  assert.deepEqual(table.admit("10.0.0.5", 0, membersOf(1)), {
    kind: "Evict",
    victim: handshaking,
  });
});

Deno.test("a cap full of members refuses new connections", () => {
  const table = new ConnectionTable<string>({ maxConnections: 2, maxPerAddress: 2 });
  table.add("a", "10.0.0.1", 0).key = key(1);
  table.add("b", "10.0.0.1", 0).key = key(2);
  assert.deepEqual(table.admit("10.0.0.9", 0, membersOf(1, 2)), {
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

Deno.test("an address may open connections at its rate, in bursts of its cap", () => {
  const table = new ConnectionTable<string>({
    maxConnections: 100,
    maxPerAddress: 3,
    connectsPerSecond: 2,
  });
  const none = membersOf();
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(table.admit("a", 0, none), { kind: "Admit" });
    table.remove(table.add(`c${i}`, "a", 0)); // opened and closed at once
  }
  assert.deepEqual(table.admit("a", 0, none), {
    kind: "Refuse",
    reason: "a opens connections too fast (at most 2 a second)",
  });
  assert.deepEqual(table.admit("a", 400, none).kind, "Refuse", "a refusal costs nothing");
  assert.deepEqual(table.admit("a", 500, none), { kind: "Admit" }, "one more after 1/2 s");
  assert.deepEqual(table.admit("b", 500, none), { kind: "Admit" }, "other addresses may");
  // Budgets of addresses with no connection left are forgotten once full again.
  assert.equal(table.trackedAddresses, 2);
  table.takeIdle(500, 1000, none);
  assert.equal(table.trackedAddresses, 2, "not yet full");
  table.takeIdle(10_000, 1000, none);
  assert.equal(table.trackedAddresses, 0);
});

Deno.test("limits apply per IPv4 address and per IPv6 /64", () => {
  assert.equal(addressKey("10.1.2.3"), "10.1.2.3");
  assert.equal(addressKey("::ffff:10.1.2.3"), "10.1.2.3");
  assert.equal(addressKey("2001:db8:aa:bb:1:2:3:4"), "2001:db8:aa:bb::/64");
  assert.equal(addressKey("2001:db8:aa:bb::9"), "2001:db8:aa:bb::/64");
  assert.equal(addressKey("2001:0db8::1"), "2001:db8:0:0::/64");
  assert.equal(addressKey("::1"), "0:0:0:0::/64");
  assert.equal(addressKey("[fe80::1%eth0]"), "fe80:0:0:0::/64");
});
