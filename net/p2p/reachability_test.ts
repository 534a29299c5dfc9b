import assert from "node:assert/strict";
import { ipOfAddress, isRelayed, reachability } from "./reachability.ts";

const relayed = "/ip4/10.77.1.1/tcp/9000/p2p/12D3KooRelay/p2p-circuit";

Deno.test("a client seen from its own address announces itself first, the relay after", () => {
  const own = ["/ip4/10.77.1.10/tcp/4001", relayed];
  const r = reachability(own, ["10.77.1.10", "127.0.0.1"], ["10.77.1.10"]);
  assert.equal(r.behindNat, false);
  assert.deepEqual(r.announce, own);
});

Deno.test("a client seen from its router's address is behind NAT and announces the relay only", () => {
  const r = reachability(["/ip4/10.78.1.2/tcp/4001", relayed], ["10.78.1.2"], ["10.77.1.11"]);
  assert.equal(r.behindNat, true);
  assert.deepEqual(r.announce, [relayed]);
});

Deno.test("behind NAT without a reservation yet, it still announces what it has", () => {
  const r = reachability(["/ip4/10.78.1.2/tcp/4001"], ["10.78.1.2"], ["10.77.1.11"]);
  assert.equal(r.behindNat, true);
  assert.deepEqual(r.announce, ["/ip4/10.78.1.2/tcp/4001"]);
});

Deno.test("nothing observed yet: not known to be behind NAT", () => {
  const r = reachability(["/ip4/10.78.1.2/tcp/4001", relayed], ["10.78.1.2"], []);
  assert.equal(r.behindNat, false);
  assert.deepEqual(r.announce, ["/ip4/10.78.1.2/tcp/4001", relayed]);
});

Deno.test("behind NAT, an external address (a forwarded port) stays, before the relay", () => {
  const own = ["/ip4/10.78.1.2/tcp/4001", "/ip4/203.0.113.7/tcp/4001", relayed];
  const r = reachability(own, ["10.78.1.2"], ["203.0.113.7"]);
  assert.equal(r.behindNat, true);
  assert.deepEqual(r.announce, ["/ip4/203.0.113.7/tcp/4001", relayed]);
});

Deno.test("bound to every interface, loopback comes last, after the relay; behind NAT, never", () => {
  const own = ["/ip4/127.0.0.1/tcp/4001", "/ip4/192.168.1.5/tcp/4001", relayed];
  const ips = ["127.0.0.1", "192.168.1.5"];
  assert.deepEqual(reachability(own, ips, []).announce, [
    "/ip4/192.168.1.5/tcp/4001",
    relayed,
    "/ip4/127.0.0.1/tcp/4001",
  ]);
  assert.deepEqual(reachability(own, ips, ["203.0.113.9"]).announce, [relayed]);
});

Deno.test("a relayed address through the relay's loopback is treated as loopback", () => {
  const throughLoopback = "/ip4/127.0.0.1/tcp/9000/p2p/12D3KooRelay/p2p-circuit";
  const own = ["/ip4/10.78.1.2/tcp/4001", relayed, throughLoopback];
  assert.deepEqual(reachability(own, ["10.78.1.2"], []).announce, [
    "/ip4/10.78.1.2/tcp/4001",
    relayed,
    throughLoopback,
  ]);
  assert.deepEqual(reachability(own, ["10.78.1.2"], ["10.77.1.11"]).announce, [relayed]);
});

Deno.test("addresses are read for their IP and for a relay hop", () => {
  assert.equal(ipOfAddress("/ip4/1.2.3.4/tcp/5"), "1.2.3.4");
  assert.equal(ipOfAddress("/ip6/::1/tcp/5"), "::1");
  assert.equal(ipOfAddress("/dns4/example.org/tcp/5"), undefined);
  assert.equal(isRelayed(relayed), true);
  assert.equal(isRelayed("/ip4/1.2.3.4/tcp/5"), false);
});
