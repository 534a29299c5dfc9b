import assert from "node:assert/strict";
import { dialRank, ipOfAddress, isPrivateIp, isRelayed, reachability } from "./reachability.ts";

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

Deno.test("behind NAT with no reservation (its relay died), it announces no address of its own", () => {
  // Its private address would replace its relayed paths in its peers' stores, and their next
  // dial would hang there for libp2p's 6 s.
  const r = reachability(["/ip4/10.78.1.2/tcp/4001"], ["10.78.1.2"], ["10.77.1.11"]);
  assert.equal(r.behindNat, true);
  assert.deepEqual(r.announce, []);
  const forwarded = "/ip4/203.0.113.7/tcp/4001";
  const withPort = reachability(["/ip4/10.78.1.2/tcp/4001", forwarded], ["10.78.1.2"], [
    "10.77.1.11",
  ]);
  assert.deepEqual(withPort.announce, [forwarded], "an external address (a forwarded port) stays");
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

Deno.test("publicly reachable: a direct address on a public IP is announced", () => {
  const relayed = "/ip4/198.51.7.1/tcp/9/p2p/R/p2p-circuit";
  // A public interface address libp2p lists (AutoNAT confirmed it): reachable.
  assert.equal(
    reachability(["/ip4/11.77.5.2/tcp/4001"], ["11.77.5.2"], []).publiclyReachable,
    true,
  );
  // Private, loopback or relayed only: not.
  assert.equal(
    reachability(["/ip4/10.78.1.2/tcp/4001"], ["10.78.1.2"], []).publiclyReachable,
    false,
  );
  assert.equal(reachability(["/ip4/127.0.0.1/tcp/4001"], [], []).publiclyReachable, false);
  assert.equal(reachability([relayed], [], ["11.1.1.1"]).publiclyReachable, false);
  // A forwarded public port given with --announce counts, behind NAT too.
  const forwarded = ["/ip4/203.0.113.7/tcp/4001", relayed];
  assert.equal(reachability(forwarded, ["10.78.1.2"], ["203.0.113.7"]).publiclyReachable, true);
});

Deno.test("private, loopback, link-local and shared addresses are private; others are not", () => {
  for (
    const ip of [
      "10.1.2.3",
      "127.0.0.1",
      "169.254.1.1",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "100.64.0.1",
      "100.127.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "::1",
      "fd00::1",
      "fe80::1",
      "not-an-ip",
      "1.2.3",
    ]
  ) {
    assert.equal(isPrivateIp(ip), true, ip);
  }
  for (
    const ip of ["11.77.5.2", "172.32.0.1", "172.15.0.1", "100.63.0.1", "8.8.8.8", "2001:db8::1"]
  ) {
    assert.equal(isPrivateIp(ip), false, ip);
  }
});

Deno.test("a public listen address AutoNAT has not judged is offered, not counted as reachable", () => {
  const untested = ["/ip4/11.77.5.2/tcp/4001"];
  const r = reachability([relayed], ["11.77.5.2"], ["11.77.5.2"], untested);
  assert.deepEqual(r.announce, [...untested, relayed]);
  assert.equal(r.publiclyReachable, false);
  // Once libp2p lists it (a peer dialled it back), it is reachable, and not offered twice.
  const confirmed = reachability([...untested, relayed], ["11.77.5.2"], ["11.77.5.2"], untested);
  assert.deepEqual(confirmed.announce, [...untested, relayed]);
  assert.equal(confirmed.publiclyReachable, true);
  // Behind NAT, our own interfaces' addresses are never offered.
  const behind = reachability([relayed], ["11.77.5.2"], ["11.77.9.9"], untested);
  assert.deepEqual(behind.announce, [relayed]);
});

Deno.test("a peer's relayed paths are dialled before its private addresses, after public ones", () => {
  const peer = "/p2p/12D3KooWRRq9aG2oc4h1xRQTpuvCkkadBRMQuGRqGh9ezM6phuUC";
  const relay =
    "/ip4/11.77.196.10/tcp/42377/p2p/12D3KooWF5hDsXYak1n8VwPDcKNnWUcWugcGqN3SvkGGvQjePEHP";
  const known = [
    "/ip4/10.78.3.2/tcp/34071", // its own interface, behind a NAT of its own: a dial there hangs
    `${relay}/p2p-circuit${peer}`,
    "/ip4/127.0.0.1/tcp/34071",
    "/dns4/peer.example.org/tcp/4001",
    "/ip4/11.77.196.12/tcp/35288",
  ];
  const ordered = [...known].sort((a, b) => dialRank(a) - dialRank(b));
  assert.deepEqual(ordered, [
    "/dns4/peer.example.org/tcp/4001",
    "/ip4/11.77.196.12/tcp/35288",
    "/ip4/127.0.0.1/tcp/34071",
    `${relay}/p2p-circuit${peer}`,
    "/ip4/10.78.3.2/tcp/34071",
  ]);
});
