/**
 * Which of its addresses a client tells its peers, and whether it sits behind NAT.
 *
 * A client listens on its own interface, and may hold a reservation on the run's relay (a
 * `/p2p-circuit` address). The relay tells it, through identify, the address its connection
 * arrived from. When that address is none of the client's own, a router rewrote it on the way:
 * the client is behind NAT, and no peer can dial its own addresses (they are private, or the
 * router drops what it did not ask for). Then it leaves its own interfaces' addresses out, even
 * while it holds no reservation, so peers do not spend a dial timeout on addresses that cannot
 * answer; DCUtR may later upgrade a relayed connection to a direct one. Otherwise it announces
 * its own addresses first and the relayed ones after them, as a fallback. Pure: no I/O.
 *
 * @module
 */

/** A client's reachability, as its peers are told. */
export interface Reachability {
  /** True when a relay saw us from an address that is none of ours. */
  readonly behindNat: boolean;
  /**
   * True when a direct address on a public IP is among those announced: libp2p lists a public
   * address only once AutoNAT had a peer dial it back (or the operator gave it, `--announce`).
   */
  readonly publiclyReachable: boolean;
  /** The addresses to announce, best first. */
  readonly announce: string[];
}

/**
 * Whether an IPv4 or IPv6 address is private, loopback, link-local or shared (CGNAT) space:
 * not reachable from the internet as it is (libp2p's AutoNAT never tests such addresses).
 */
export function isPrivateIp(ip: string): boolean {
  if (ip.includes(":")) {
    const lower = ip.toLowerCase();
    return lower === "::1" || lower.startsWith("fc") || lower.startsWith("fd") ||
      lower.startsWith("fe80");
  }
  const octets = ip.split(".").map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255)) {
    return true; // not an address we can judge: never treat it as public
  }
  const [a, b] = octets;
  return a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127) || a >= 224;
}

/** Whether a multiaddr goes through a circuit relay. */
export function isRelayed(address: string): boolean {
  return address.includes("/p2p-circuit");
}

/**
 * Whether a multiaddr starts on the loopback interface (127.0.0.0/8 or ::1); for a relayed
 * address, whether the relay is reached over loopback.
 */
export function isLoopback(address: string): boolean {
  const ip = ipOfAddress(address);
  return ip !== undefined && (ip.startsWith("127.") || ip === "::1");
}

/**
 * Where a peer's address goes in the order libp2p dials them, lowest first: public direct
 * addresses (and DNS names), loopback ones, relayed ones, then private ones. libp2p dials one address after
 * another, waiting up to 6 s on each, and puts relayed ones last; but a peer behind another NAT
 * may still be listed at its private address (it announced it before it knew, or while it had
 * no relay), and a dial there hangs the full 6 s before the relayed path is tried: in the NAT
 * lab, two clients behind NAT met again only 4.5 s after both held a reservation on a new
 * relay. A relayed dial answers at once, yes or no; a peer on our own LAN met through a relay
 * is upgraded to a direct connection afterwards (`P2PNode.upgradeRelayed`).
 *
 * @example
 * ```ts
 * import { dialRank } from "./reachability.ts";
 * console.assert(dialRank("/ip4/10.1.2.3/tcp/1") > dialRank("/ip4/8.8.8.8/tcp/1/p2p-circuit"));
 * ```
 */
export function dialRank(address: string): number {
  if (isRelayed(address)) return 2;
  if (isLoopback(address)) return 1;
  const ip = ipOfAddress(address);
  return ip !== undefined && isPrivateIp(ip) ? 3 : 0; // a DNS name counts as public
}

/** The IP of a multiaddr (`/ip4/<ip>/...` or `/ip6/<ip>/...`), or undefined. */
export function ipOfAddress(address: string): string | undefined {
  const match = /^\/ip[46]\/([^/]+)/.exec(address);
  return match === null ? undefined : match[1];
}

/**
 * Decides what to announce from our addresses (`own`: what libp2p lists, listen, relayed and
 * any external ones), the IPs of our own interfaces, the IPs relays observed our connections
 * coming from, and `untested`: listen addresses on public IPs that AutoNAT has not judged (offered
 * after the direct ones, so a peer can dial one and AutoNAT can test it; never counted as
 * reachable). Behind NAT, addresses on our own interfaces are left out; external addresses (a
 * forwarded port given with `--announce`, or one AutoNAT confirmed) and relayed ones stay.
 *
 * @example
 * ```ts
 * import { reachability } from "./reachability.ts";
 * const r = reachability(
 *   ["/ip4/10.78.1.2/tcp/4001", "/ip4/10.77.1.1/tcp/9/p2p/R/p2p-circuit"],
 *   ["10.78.1.2", "127.0.0.1"],
 *   ["10.77.1.11"],
 * );
 * console.assert(r.behindNat && r.announce.length === 1);
 * ```
 */
export function reachability(
  own: readonly string[],
  interfaceIps: readonly string[],
  observedIps: readonly string[],
  untested: readonly string[] = [],
): Reachability {
  const local = new Set(interfaceIps);
  // Loopback (our own, or a relay's that listens on every interface) serves only peers on
  // this machine: last, so a PeerAddresses message (at most 8 addresses) cut short loses it,
  // not a relayed address; and behind NAT, not at all.
  const loopback = own.filter(isLoopback);
  const relayed = own.filter((a) => isRelayed(a) && !isLoopback(a));
  const direct = own.filter((a) => !isRelayed(a) && !isLoopback(a));
  const behindNat = observedIps.some((ip) => !local.has(ip));
  // Only what libp2p lists counts as reachable; untested addresses are offered, after those.
  const publiclyReachable = own.some((a) =>
    !isRelayed(a) && !isPrivateIp(ipOfAddress(a) ?? "") &&
    (!behindNat || !local.has(ipOfAddress(a) ?? ""))
  );
  const offered = untested.filter((a) => !own.includes(a));
  if (!behindNat) {
    return {
      behindNat,
      publiclyReachable,
      announce: [...direct, ...offered, ...relayed, ...loopback],
    };
  }
  // Even with no relay left (ours died; no new reservation yet) our own addresses stay out:
  // announced then, they would replace our relayed paths in every peer's store (identify-push
  // replaces, and so does gossip), and a peer's next dial would hang on them for libp2p's 6 s
  // while the path through our next relay waited behind it. Nothing announced costs no dial.
  const external = direct.filter((a) => !local.has(ipOfAddress(a) ?? ""));
  return { behindNat, publiclyReachable, announce: [...external, ...relayed] };
}
