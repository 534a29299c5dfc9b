import assert from "node:assert/strict";
import {
  MAX_MEETING_ADDRESS_BYTES,
  MAX_MEETING_ADDRESSES,
  type MeetingAddress,
  meetingAddressesProblem,
  meetingAddressProblem,
} from "./meeting_addresses.ts";

const PEER = "12D3KooWHFrmLWTTDD4NodngtRMEVYgxrsDMp4F9iSwYntZ9WjHa";

Deno.test("meeting addresses: relay and bootstrap multiaddrs ending in /p2p/<id> pass", () => {
  for (
    const ok of [
      `/ip4/203.0.113.7/tcp/4001/p2p/${PEER}`,
      `/ip6/2001:db8::1/tcp/4001/p2p/${PEER}`,
      `/dns4/relay.example.org/tcp/443/wss/p2p/${PEER}`,
      `/ip4/10.0.0.1/tcp/1/p2p/${PEER}/p2p-circuit/p2p/${PEER}`,
      `/p2p/${PEER}`,
      "/p2p/bafzbeigai3eoy2ccc7ybwjfz5r3rdxqrinwi4rwytly24tdbh6yk7zslrm",
    ]
  ) {
    assert.equal(meetingAddressProblem(ok), null, ok);
  }
  const longest = `/dns4/${"a".repeat(MAX_MEETING_ADDRESS_BYTES - 6 - 11 - PEER.length)}` +
    `/tcp/1/p2p/${PEER}`;
  assert.equal(new TextEncoder().encode(longest).length, MAX_MEETING_ADDRESS_BYTES);
  assert.equal(meetingAddressProblem(longest), null);
});

Deno.test("meeting addresses: each malformed address is named with what is wrong", () => {
  const cases: [string, RegExp][] = [
    ["", /is empty/],
    [`/dns4/${"a".repeat(200)}/p2p/${PEER}`, /is 263 bytes, at most 192 allowed/],
    [`/ip4/1.2.3.4/tcp/1 /p2p/${PEER}`, /byte 0x20 at 18: not printable ASCII/],
    [`/dns4/réseau/p2p/${PEER}`, /byte 0xc3 at 7: not printable ASCII/],
    [`/ip4/1.2.3.4/tcp/1/p2p/${PEER}\n`, /byte 0xa at/],
    [`ip4/1.2.3.4/tcp/1/p2p/${PEER}`, /must start with \//],
    [`/ip4//tcp/1/p2p/${PEER}`, /empty component/],
    [`/ip4/1.2.3.4/tcp/1/p2p/${PEER}/`, /empty component/],
    ["/ip4/1.2.3.4/tcp/4001", /must end in \/p2p\/<peer id>/],
    [`/ip4/1.2.3.4/tcp/1/p2p/${PEER}/p2p-circuit`, /must end in \/p2p\/<peer id>/],
    [`/ip4/1.2.3.4/tcp/1/xp2p/${PEER}`, /must end in \/p2p\/<peer id>/],
    [`/ip4/1.2.3.4/tcp/1/p2p/12D3-KooW`, /must end in \/p2p\/<peer id>/],
    ["/", /empty component/],
  ];
  for (const [address, expected] of cases) {
    assert.match(meetingAddressProblem(address) ?? "accepted", expected, JSON.stringify(address));
  }
});

Deno.test("meeting addresses: a list is refused past its capacity or at its first bad entry", () => {
  const relay: MeetingAddress = { kind: "Relay", address: `/ip4/1.2.3.4/tcp/1/p2p/${PEER}` };
  assert.equal(meetingAddressesProblem([]), null);
  const full = Array.from({ length: MAX_MEETING_ADDRESSES }, () => relay);
  assert.equal(meetingAddressesProblem(full), null);
  assert.match(meetingAddressesProblem([...full, relay])!, /at most 4 meeting addresses, found 5/);
  assert.match(
    meetingAddressesProblem([relay, { kind: "Bootstrap", address: "/ip4/1.2.3.4" }])!,
    /^meeting address 1 \("\/ip4\/1\.2\.3\.4"\) must end in/,
  );
  assert.match(
    meetingAddressesProblem([{ kind: "Gateway" as never, address: relay.address }])!,
    /meeting address 0 has an unknown kind "Gateway"/,
  );
});
