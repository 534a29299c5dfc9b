/**
 * A run's meeting addresses: the circuit relays and bootstrap peers its clients meet at, set by the
 * main authority (the update instruction's meeting part) and kept in the coordinator account, so a
 * client of a Solana run needs no `--relay` or `--bootstrap-peer` flag (the TCP coordinator tells
 * its clients the same with its `Relays` message). This module holds their capacities and the rule
 * every address must pass; the program's `program/meeting.c` applies the same rule byte for byte,
 * and the differential tests hold the two together.
 *
 * An address is "multiaddr-ish", not parsed: 1..192 bytes of printable ASCII (no space), starting
 * with `/`, with no empty component, ending in `/p2p/<peer id>` (letters and digits). A full
 * multiaddr parser has no place on chain; the client parses each address and skips, saying so,
 * one that libp2p cannot use.
 *
 * @example
 * ```ts
 * import { meetingAddressProblem } from "./meeting_addresses.ts";
 * const relay = { kind: "Relay" as const, address: "/ip4/203.0.113.7/tcp/4001/p2p/12D3KooWabc" };
 * if (meetingAddressProblem(relay.address) !== null) throw new Error("a relay's address");
 * if (meetingAddressProblem("/ip4/203.0.113.7/tcp/4001") === null) throw new Error("no peer id");
 * ```
 *
 * @module
 */

/**
 * Most meeting addresses a run holds. A client needs one relay it can reach; four leave room for a
 * relay on two transports (an IP and a DNS name) plus two bootstrap peers, and publicly reachable
 * clients relay for the rest once the run is under way (docs/p2p.md). Four is also what one update
 * transaction carries at the full length (below).
 */
export const MAX_MEETING_ADDRESSES = 4;

/**
 * Longest meeting address, in bytes: Psyche's URL cap (`SOLANA_MAX_URL_STRING_LEN`). A relay named
 * by DNS over websockets with its peer id (`/dns4/<name>/tcp/443/wss/p2p/12D3KooW…`, a 52-character
 * id) takes about 80 bytes plus the name, so 192 leaves a 110-byte host name. Four full entries are
 * 3 + 4 × (2 + 192) = 779 bytes of update data, which with the signature, the account keys, the
 * blockhash and a compute-budget instruction stays under Solana's 1,232-byte transaction
 * (compute_units_test.ts measures it; the TCP coordinator's 16 × 256 would not fit one). In the
 * account they take 784 bytes (about 0.0055 SOL of rent).
 */
export const MAX_MEETING_ADDRESS_BYTES = 192;

/** What a client does with a meeting address, in wire order (index = code). */
export const MEETING_ADDRESS_KINDS = ["Relay", "Bootstrap"] as const;
/** One of {@linkcode MEETING_ADDRESS_KINDS}. */
export type MeetingAddressKind = typeof MEETING_ADDRESS_KINDS[number];

/**
 * Where a run's clients meet: a circuit relay to hold a reservation on (`Relay`, as `--relay`), or
 * a participant to dial first (`Bootstrap`, as `--bootstrap-peer`).
 */
export interface MeetingAddress {
  kind: MeetingAddressKind;
  /** A multiaddr ending in `/p2p/<peer id>`. */
  address: string;
}

const SLASH = 0x2f;
const P2P_TAIL = "/p2p/";

function isAlphanumeric(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

/**
 * What is wrong with `address` as a meeting address, or null when nothing is. The program refuses
 * the same addresses (`InvalidMeetingAddress`).
 */
export function meetingAddressProblem(address: string): string | null {
  const bytes = new TextEncoder().encode(address);
  const n = bytes.length;
  if (n === 0) return "is empty";
  if (n > MAX_MEETING_ADDRESS_BYTES) {
    return `is ${n} bytes, at most ${MAX_MEETING_ADDRESS_BYTES} allowed`;
  }
  const odd = bytes.findIndex((c) => c < 0x21 || c > 0x7e);
  if (odd >= 0) return `has byte 0x${bytes[odd].toString(16)} at ${odd}: not printable ASCII`;
  if (bytes[0] !== SLASH) return "must start with /";
  if (bytes[n - 1] === SLASH || address.includes("//")) return "has an empty component";
  const last = address.lastIndexOf("/");
  const id = bytes.subarray(last + 1);
  if (last < 4 || address.slice(last - 4, last + 1) !== P2P_TAIL || !id.every(isAlphanumeric)) {
    return "must end in /p2p/<peer id>";
  }
  return null;
}

/**
 * What is wrong with `list` as a run's meeting addresses (too many, or the first bad address,
 * named by index), or null when nothing is.
 */
export function meetingAddressesProblem(list: readonly MeetingAddress[]): string | null {
  if (list.length > MAX_MEETING_ADDRESSES) {
    return `at most ${MAX_MEETING_ADDRESSES} meeting addresses, found ${list.length}`;
  }
  for (const [i, entry] of list.entries()) {
    if (!MEETING_ADDRESS_KINDS.includes(entry.kind)) {
      return `meeting address ${i} has an unknown kind ${JSON.stringify(entry.kind)}`;
    }
    const problem = meetingAddressProblem(entry.address);
    if (problem !== null) {
      return `meeting address ${i} (${JSON.stringify(entry.address)}) ${problem}`;
    }
  }
  return null;
}
