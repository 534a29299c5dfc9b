/**
 * The client's libp2p node: TCP, noise, yamux, identify and gossipsub, with its identity taken
 * from the client's ed25519 secret key and every connection gated by the epoch's allowlist.
 *
 * Gossip (`gossip.ts`) and payload streams (`payload_service.ts`) attach to a running node; this
 * module only builds, gates, connects and stops it.
 *
 * @module
 */
import "./exit_fix.ts";
import { createLibp2p, type Libp2p } from "libp2p";
import { tcp } from "@libp2p/tcp";
import { noise } from "@libp2p/noise";
import { yamux } from "@libp2p/yamux";
import { type Identify, identify } from "@libp2p/identify";
import { type GossipSub, gossipsub, StrictNoSign } from "@libp2p/gossipsub";
import {
  circuitRelayServer,
  type CircuitRelayService,
  circuitRelayTransport,
} from "@libp2p/circuit-relay-v2";
import { dcutr } from "@libp2p/dcutr";
import { autoNAT } from "@libp2p/autonat";
import { type Multiaddr, multiaddr } from "@multiformats/multiaddr";
import { peerIdFromString } from "@libp2p/peer-id";
import type { Address, IdentifyResult, PeerId } from "@libp2p/interface";
import { Allowlist, allowlistGater } from "./allowlist.ts";
import { describeDialFailure } from "./dial_failure.ts";
import { libp2pPrivateKey, peerIdOf, publicKeyOf } from "./identity.ts";
import { type AddressBook, addressBook } from "./address_book.ts";
import {
  AnswerTimeout,
  probeConnection,
  RELAY_PROBE_TIMES,
  type RelayProbeTimes,
} from "./relay_probe.ts";
import {
  dialRank,
  ipOfAddress,
  isPrivateIp,
  isRelayed,
  type Reachability,
  reachability,
} from "./reachability.ts";
import type { PublicKeyBytes } from "../../common/mod.ts";

/** The services every node runs. */
export interface P2PServices extends Record<string, unknown> {
  pubsub: GossipSub;
  identify: Identify;
  /** Hole punching: upgrades a relayed connection to a direct one when the routers allow. */
  dcutr: unknown;
  /**
   * AutoNAT: asks peers to dial our addresses back. libp2p lists an address on a public IP only
   * once a peer reached it, and our peers' dial-backs of us go through here too.
   */
  autoNAT: unknown;
  /** A circuit relay for the run's members, serving only while we are publicly reachable. */
  relay: CircuitRelayService;
  /** What libp2p's address manager knows of each address: see {@link P2PNode.addresses}. */
  addressBook: AddressBook;
}

/** How long after a failed direct dial of a relayed peer it is tried again. */
export const DIRECT_RETRY_MS = 60_000;

/**
 * While no relay has said where we connect from, identify is asked again this long after a try
 * that learnt nothing, doubling up to {@link OBSERVE_RETRY_MAX_MS}: a busy machine's timed-out
 * identify is retried soon, a relay that never answers is not asked every tick.
 */
export const OBSERVE_RETRY_MIN_MS = 1_000;
/** The longest wait between two identify tries of {@link OBSERVE_RETRY_MIN_MS}'s backoff. */
export const OBSERVE_RETRY_MAX_MS = 60_000;

/** How often libp2p's connection monitor pings each connection. */
export const PING_INTERVAL_MS = 30_000;
/** The shortest wait for a ping's answer before its connection is aborted (adaptive above it). */
export const PING_TIMEOUT_MIN_MS = 30_000;
/** The longest wait for a ping's answer. */
export const PING_TIMEOUT_MAX_MS = 90_000;

/** Reservations a publicly reachable client holds for peers behind NAT, at most. */
export const CLIENT_RELAY_RESERVATIONS = 16;

/** Options for `createP2PNode`. */
export interface P2PNodeOptions {
  /** The client's 32-byte ed25519 secret key: the same key it authenticates to the coordinator with. */
  secretKey: Uint8Array;
  /** Interface to listen on. Default `127.0.0.1`; use `0.0.0.0` to accept remote peers. */
  host?: string;
  /** TCP port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /**
   * Addresses to advertise instead of the listen addresses (e.g. `/ip4/<public ip>/tcp/<port>`
   * behind NAT or port forwarding). Default: the listen addresses.
   */
  publicAddresses?: string[];
  /** Peers allowed from the start (usually none until the first coordinator update). */
  allowedPeers?: Iterable<PublicKeyBytes>;
  /** Gossipsub heartbeat in ms (mesh maintenance). Default 1000; tests use less. */
  gossipHeartbeatMs?: number;
  /** How often relays are probed, and how long they may take to answer (relay_probe.ts). */
  relayProbe?: RelayProbeTimes;
}

/** A running libp2p node owned by one client. */
export class P2PNode {
  /** The underlying libp2p node, for the services in this folder. */
  readonly libp2p: Libp2p<P2PServices>;
  /** The allowlist the connection gater consults. Change it with `setAllowedPeers`. */
  readonly allowlist: Allowlist;
  /** This node's 32-byte ed25519 public key. */
  readonly publicKey: PublicKeyBytes;
  /** The interface it listens on (services such as the bulk listener bind to it too). */
  readonly host: string;
  readonly #onStop: (() => Promise<void> | void)[] = [];
  readonly #sight: Sight;
  /** The run's relays we reserve a slot on, by peer id. */
  readonly #relays = new Map<string, { peer: PeerId; addresses: string[] }>();
  /** `<relay>/p2p-circuit` of each relay we held a reservation on, once its paths were added. */
  readonly #reservedRelayPaths = new Set<string>();
  /** Addresses given with `addPeerAddresses` (an operator's), kept whatever the peer announces. */
  readonly #pinned = new Map<string, Set<string>>();
  /** When a direct dial of a peer we reach through a relay last failed, by peer id. */
  readonly #directTriedAt = new Map<string, number>();
  /** When identify may next be asked where we connect from, and the wait after a fruitless try. */
  #observeRetry = { at: -Infinity, delayMs: OBSERVE_RETRY_MIN_MS };
  /** Ids of the relay connections a probe is waiting on. */
  readonly #probing = new Set<string>();
  /** The wait for each relay's next answer, learnt from its answers, by peer id. */
  readonly #answerTimeouts = new Map<string, AnswerTimeout>();
  /** Relays whose connection a probe gave up on, not yet taken by `takeSilentRelays`. */
  #silentRelays: { relay: string; waitedMs: number }[] = [];

  /** Use `createP2PNode`; this constructor wraps an already started node. */
  constructor(
    libp2p: Libp2p<P2PServices>,
    allowlist: Allowlist,
    publicKey: PublicKeyBytes,
    host = "127.0.0.1",
    sight: Sight = new Sight(host),
    relayProbe: RelayProbeTimes = RELAY_PROBE_TIMES,
  ) {
    this.libp2p = libp2p;
    this.allowlist = allowlist;
    this.publicKey = publicKey;
    this.host = host;
    this.#sight = sight;
    const probes = setInterval(
      () => this.#probeRelays(relayProbe),
      relayProbe.intervalMs,
    );
    this.#onStop.push(() => clearInterval(probes));
    sight.servesRelay = () => this.reachability().publiclyReachable;
    // A participant that opened a direct connection to us from a public address dialled one of
    // our addresses: we are publicly reachable. AutoNAT would learn it from a dial-back, but it
    // takes one verdict per network segment, and in a small run its first dial-back often
    // reuses the relayed connection already open and fails; this is the same proof, passively.
    libp2p.addEventListener("connection:open", (event) => {
      const connection = event.detail;
      const remote = connection.remoteAddr.toString();
      const ip = ipOfAddress(remote);
      if (
        connection.direction !== "inbound" || isRelayed(remote) || ip === undefined ||
        isPrivateIp(ip) || sight.isOwn(ip) || !allowlist.has(connection.remotePeer)
      ) return;
      for (const record of libp2p.services.addressBook.listening()) {
        const own = ipOfAddress(record.multiaddr.toString());
        if (!record.verified && own !== undefined && !isPrivateIp(own)) {
          libp2p.services.addressBook.confirm(record.multiaddr);
        }
      }
    });
    // A reservation on a relay the run did not name (a public client, once the run's relay
    // died): the other participants behind NAT may reserve there too, so try them through it
    // at once, not only once their new addresses come round on the gossip.
    libp2p.addEventListener("self:peer:update", () => {
      const fresh = this.#reservations().filter((path) => !this.#reservedRelayPaths.has(path));
      if (fresh.length === 0) return;
      for (const path of fresh) this.#reservedRelayPaths.add(path);
      this.#addRelayPaths(this.allowlist.peerIds(), fresh).catch(() => {});
    });
    // What a relay saw our connection come from says whether a router stands between us.
    libp2p.addEventListener("peer:identify", (event: CustomEvent<IdentifyResult>) => {
      const { peerId, observedAddr } = event.detail;
      if (!allowlist.isRelay(peerId) || observedAddr === undefined) return;
      const ip = ipOfAddress(observedAddr.toString());
      if (ip !== undefined) sight.observed.add(ip);
    });
  }

  /**
   * Makes these the relays we reserve a slot on (multiaddrs ending in `/p2p/<relay>`; a relay on
   * several interfaces comes once per address): a new relay is let through the gate, dialled,
   * and once identify shows it relays, libp2p's circuit relay transport reserves there and
   * our `/p2p-circuit` address appears among our addresses. A relay no longer named (a
   * coordinator restarted with a new one) leaves the gate and is hung up on. Relays already
   * connected are not dialled again. Resolves with the relays that could not be reached, and
   * why.
   */
  async setRelays(addresses: readonly string[]): Promise<{ relay: string; error: string }[]> {
    const next = new Map<string, { peer: PeerId; addresses: string[] }>();
    for (const address of addresses) {
      const ma = multiaddr(address);
      const id = ma.getComponents().findLast((c) => c.name === "p2p")?.value;
      if (id === undefined || isRelayed(address)) {
        throw new TypeError(`relay "${address}" must end in /p2p/<relay peer id>`);
      }
      const peer = peerIdFromString(id);
      const known = next.get(peer.toString());
      if (known === undefined) next.set(peer.toString(), { peer, addresses: [address] });
      else if (!known.addresses.includes(address)) known.addresses.push(address);
    }
    const gone = [...this.#relays.values()].filter((r) => !next.has(r.peer.toString()));
    this.#relays.clear();
    for (const [id, relay] of next) {
      this.#relays.set(id, relay);
      this.allowlist.addRelay(relay.peer);
      await this.libp2p.peerStore.merge(relay.peer, {
        multiaddrs: relay.addresses.map((a) => multiaddr(a)),
      });
    }
    for (const relay of gone) {
      this.allowlist.removeRelay(relay.peer);
      await this.libp2p.hangUp(relay.peer).catch(() => {});
    }
    await this.#addRelayPaths(this.allowlist.peerIds());
    return await this.dialRelays();
  }

  /**
   * Every participant can be reached at `<relay>/p2p-circuit/p2p/<its peer id>` if it holds a
   * reservation there, and its peer id follows from the key the coordinator lists: so a peer
   * behind NAT is found without any address of its own. libp2p dials them after public and
   * loopback addresses, before private ones (`dialRank`). Recorded for `peers` (peer id
   * strings): every participant when the relays change or we reserve on a new one, the newly
   * allowed ones when the participants do. The relays are the run's and those we hold a
   * reservation on (`circuits`, by default all).
   */
  async #addRelayPaths(
    peers: readonly string[],
    circuits: readonly string[] = [...this.#relayCircuits(), ...this.#reservations()],
  ): Promise<void> {
    const unique = [...new Set(circuits)];
    if (unique.length === 0) return;
    const self = this.peerId.toString();
    for (const id of peers.filter((id) => id !== self)) {
      const paths = this.#relayPathsTo(id, unique);
      if (paths.length === 0) continue;
      await this.libp2p.peerStore.merge(peerIdFromString(id), {
        multiaddrs: paths.map((c) => multiaddr(c)),
      });
    }
  }

  /** Paths to peer `id` through `circuits`; a participant that relays is not reached through itself. */
  #relayPathsTo(
    id: string,
    circuits: readonly string[] = [...this.#relayCircuits(), ...this.#reservations()],
  ): string[] {
    return [...new Set(circuits)].filter((c) => !c.endsWith(`/p2p/${id}/p2p-circuit`));
  }

  /** `<relay>/p2p-circuit` for each address of the run's relays. */
  #relayCircuits(): string[] {
    return [...this.#relays.values()].flatMap((r) => r.addresses.map((a) => `${a}/p2p-circuit`));
  }

  /** `<relay>/p2p-circuit` of each relay we hold a reservation on: our relayed addresses. */
  #reservations(): string[] {
    const own = `/p2p/${this.peerId.toString()}`;
    return this.libp2p.getMultiaddrs().map((a) => a.toString())
      .filter((a) => isRelayed(a) && a.endsWith(own))
      .map((a) => a.slice(0, -own.length));
  }

  /**
   * Dials every relay we have no connection to (after a relay restarted, or a cut link), and asks
   * a connected relay again where our connection comes from while no relay has said.
   */
  async dialRelays(): Promise<{ relay: string; error: string }[]> {
    await this.#observeThroughRelays();
    const missing = [...this.#relays.values()].filter((r) => !this.#connectedTo(r.peer));
    const dials = await Promise.allSettled(missing.map((r) => this.libp2p.dial(r.peer)));
    return dials.flatMap((d, i) =>
      d.status === "fulfilled" ? [] : [{
        relay: missing[i].peer.toString(),
        error: describeDialFailure(missing[i].addresses, d.reason),
      }]
    );
  }

  /**
   * Whether a router stands between us and the relays is learnt from identify's `observedAddr`
   * when a relay connection opens; an identify that timed out on a busy machine says nothing,
   * and then the node would never learn it is behind NAT. So while nothing was observed, identify
   * runs again on the relay connections open, backing off ({@link OBSERVE_RETRY_MIN_MS}) while the
   * relays keep saying nothing.
   */
  async #observeThroughRelays(): Promise<void> {
    if (this.#sight.observed.size > 0 || Date.now() < this.#observeRetry.at) return;
    const connections = [...this.#relays.values()].flatMap((r) =>
      this.libp2p.getConnections(r.peer).filter((c) => !isRelayed(c.remoteAddr.toString()))
    );
    if (connections.length === 0) return;
    await Promise.allSettled(connections.map(async (c) => {
      const { observedAddr } = await this.libp2p.services.identify.identify(c);
      const ip = observedAddr === undefined ? undefined : ipOfAddress(observedAddr.toString());
      if (ip !== undefined) this.#sight.observed.add(ip);
    }));
    if (this.#sight.observed.size > 0) return;
    const { delayMs } = this.#observeRetry;
    this.#observeRetry = {
      at: Date.now() + delayMs,
      delayMs: Math.min(2 * delayMs, OBSERVE_RETRY_MAX_MS),
    };
  }

  /** The relays we use (their addresses) and how many of them we are connected to now. */
  relays(): { count: number; addresses: string[]; connected: number } {
    const relays = [...this.#relays.values()];
    return {
      count: relays.length,
      addresses: relays.flatMap((r) => r.addresses),
      connected: relays.filter((r) => this.#connectedTo(r.peer)).length,
    };
  }

  /**
   * Opens a direct connection to each participant we reach only through a relay, at a direct
   * address it announced (a public client whose address AutoNAT has not confirmed yet is known
   * only from the run's gossip, so DCUtR cannot offer it), and closes the relayed connections
   * to it once that works, so payloads stop crossing the relay. A peer whose direct addresses
   * failed is tried again after {@link DIRECT_RETRY_MS}. Resolves with the peers upgraded.
   */
  async upgradeRelayed(now = Date.now()): Promise<string[]> {
    const upgraded: string[] = [];
    for (const peer of this.libp2p.getPeers()) {
      const id = peer.toString();
      if (!this.allowlist.has(peer) || this.#connectedTo(peer)) continue;
      if ((this.#directTriedAt.get(id) ?? -Infinity) > now - DIRECT_RETRY_MS) continue;
      const known = await this.libp2p.peerStore.get(peer).then((p) => p.addresses, () => []);
      const direct = known.map((a) => a.multiaddr).filter((a) => !isRelayed(a.toString()));
      if (direct.length === 0) continue;
      this.#directTriedAt.set(id, now);
      try {
        await this.libp2p.dial(direct, { force: true, signal: AbortSignal.timeout(10_000) });
      } catch {
        continue; // behind a firewall after all: the relayed connection stays
      }
      this.#directTriedAt.delete(id);
      const relayed = this.libp2p.getConnections(peer)
        .filter((c) => isRelayed(c.remoteAddr.toString()));
      await Promise.allSettled(relayed.map((c) => c.close()));
      upgraded.push(id);
    }
    return upgraded;
  }

  /**
   * Probes every direct connection to a relay we use, the run's or one we hold a reservation
   * on, and aborts one that does not answer in time: its machine or link died without a reset
   * (relay_probe.ts). A connection is probed once at a time.
   */
  #probeRelays(times: RelayProbeTimes): void {
    const reserved = this.#reservations().map((c) => multiaddr(c).getComponents())
      .map((parts) => parts.findLast((p) => p.name === "p2p")?.value);
    const relays = new Set([...this.#relays.keys(), ...reserved]);
    for (const connection of this.libp2p.getConnections()) {
      const id = connection.id;
      const relay = connection.remotePeer.toString();
      if (
        this.#probing.has(id) || !relays.has(relay) ||
        isRelayed(connection.remoteAddr.toString()) || connection.status !== "open"
      ) continue;
      let wait = this.#answerTimeouts.get(relay);
      if (wait === undefined) {
        wait = new AnswerTimeout(times.minTimeoutMs, times.maxTimeoutMs);
        this.#answerTimeouts.set(relay, wait);
      }
      const timeoutMs = wait.ms();
      this.#probing.add(id);
      probeConnection(connection, timeoutMs).then(async (tookMs) => {
        if (tookMs !== undefined) return wait.observe(tookMs);
        if (connection.status !== "open") return;
        // libp2p looks for a new relay among the peers known to relay, the one dialled last
        // first: this one, whose dial would hang 6 s. It is a relay again once identify,
        // on a connection that works, says so.
        await forgetRelaying(this.libp2p, connection.remotePeer).catch(() => {});
        connection.abort(new Error(`relay did not answer a probe within ${timeoutMs} ms`));
        this.#silentRelays = [...this.#silentRelays.slice(-15), { relay, waitedMs: timeoutMs }];
        // A relay that comes back is learnt afresh.
        this.#answerTimeouts.delete(relay);
      }).finally(() => this.#probing.delete(id));
    }
  }

  /** The relays given up on since the last call (at most the last 16), oldest first. */
  takeSilentRelays(): { relay: string; waitedMs: number }[] {
    const taken = this.#silentRelays;
    this.#silentRelays = [];
    return taken;
  }

  /** Whether a direct (not relayed) connection to this peer is open. */
  #connectedTo(peer: PeerId): boolean {
    return this.libp2p.getConnections(peer).some((c) => !isRelayed(c.remoteAddr.toString()));
  }

  /**
   * Whether we are behind NAT, whether AutoNAT found us reachable, and the addresses our peers
   * are told (see reachability.ts).
   */
  reachability(): Reachability {
    return this.#sight.judge(this.#rawAddresses(), this.#untestedAddresses());
  }

  /**
   * Our listen addresses on public IPs that AutoNAT has not judged yet. libp2p lists such an
   * address only once a peer dialled it back, and a peer dials it only once it knows it: so the
   * run's gossip carries it meanwhile (an address AutoNAT found unreachable is left out until
   * its verdict expires).
   */
  #untestedAddresses(): string[] {
    const now = Date.now();
    const self = this.peerId.toString();
    return this.libp2p.services.addressBook.listening()
      .filter((r) => !r.verified && !(r.expires > now))
      .map((r) => `${r.multiaddr.toString()}/p2p/${self}`);
  }

  /** Peers holding a reservation on our relay now (0 unless we are publicly reachable). */
  relayReservations(): number {
    return this.libp2p.services.relay.reservations.size;
  }

  #rawAddresses(): string[] {
    return this.libp2p.getMultiaddrs().map(String);
  }

  /**
   * Runs `hook` when the node stops, before libp2p does: services that own resources outside
   * libp2p (the payload service's bulk listener) close with the node that carries them.
   */
  onStop(hook: () => Promise<void> | void): void {
    this.#onStop.push(hook);
  }

  /** This node's libp2p peer id. */
  get peerId(): PeerId {
    return this.libp2p.peerId;
  }

  /**
   * The addresses peers are told, each ending in `/p2p/<peer id>`: where this node listens
   * (public ones AutoNAT has not judged yet included), and its relayed addresses; behind NAT,
   * the relayed (and external) ones only.
   */
  addresses(): Multiaddr[] {
    return this.reachability().announce.map((a) => multiaddr(a));
  }

  /**
   * Replaces the set of peers this node talks to (the epoch's participants, by public key) and
   * closes connections to peers that are no longer in it. Our own key may be included.
   */
  async setAllowedPeers(publicKeys: Iterable<PublicKeyBytes>): Promise<void> {
    // Called on every coordinator update: only peers new to the list need their relay paths.
    const before = new Set(this.allowlist.peerIds());
    const removed = this.allowlist.set(publicKeys);
    await this.#addRelayPaths(this.allowlist.peerIds().filter((id) => !before.has(id)));
    if (removed.length === 0) return;
    const gone = new Set(removed);
    const peers = this.libp2p.getPeers().filter((peer) => gone.has(peer.toString()));
    await Promise.allSettled(peers.map((peer) => this.libp2p.hangUp(peer)));
  }

  /**
   * Connects to a peer at an address (a multiaddr ending in `/p2p/<peer id>`). The peer must be
   * in the allowlist, or the dial is refused.
   */
  async connect(
    address: Multiaddr | string,
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    const addr = typeof address === "string" ? multiaddr(address) : address;
    await this.libp2p.dial(addr, { signal: options.signal });
  }

  /**
   * Records where a participant can be reached, so payload fetches can dial it by key even
   * when no connection is open (libp2p otherwise learns addresses only from peers it connected
   * to). Addresses may omit the `/p2p/<peer id>` suffix.
   */
  async addPeerAddresses(
    publicKey: PublicKeyBytes,
    addresses: Iterable<Multiaddr | string>,
  ): Promise<void> {
    const multiaddrs = [...addresses].map((a) => (typeof a === "string" ? multiaddr(a) : a));
    const id = peerIdOf(publicKey);
    const pinned = this.#pinned.get(id.toString()) ?? new Set<string>();
    for (const a of multiaddrs) pinned.add(a.toString());
    this.#pinned.set(id.toString(), pinned);
    await this.libp2p.peerStore.merge(id, { multiaddrs });
  }

  /**
   * Records the addresses a participant announced itself (a signed `PeerAddresses`). They
   * replace those held for it, as identify's do: an address it no longer announces (its
   * private one, from before it knew it was behind NAT; a path through a relay it lost) is not
   * dialled again, to hang there for libp2p's 6 s. Kept besides: the paths through the run's
   * relays and ours, which it never announces, and the addresses given to `addPeerAddresses`.
   */
  async setAnnouncedAddresses(
    publicKey: PublicKeyBytes,
    addresses: Iterable<Multiaddr | string>,
  ): Promise<void> {
    const peer = peerIdOf(publicKey);
    const id = peer.toString();
    const kept = new Set([
      ...[...addresses].map(String),
      ...this.#relayPathsTo(id),
      ...(this.#pinned.get(id) ?? []),
    ]);
    await this.libp2p.peerStore.patch(peer, { multiaddrs: [...kept].map((a) => multiaddr(a)) });
  }

  /**
   * Connects to a participant by public key, using the addresses the node knows for it (from a
   * previous connection, `addPeerAddresses` or a `PeerAddresses` announcement). A failure says
   * where it dialled and why, in words ({@linkcode describeDialFailure}).
   */
  async connectTo(
    publicKey: PublicKeyBytes,
    options: { signal?: AbortSignal } = {},
  ): Promise<void> {
    const id = peerIdOf(publicKey);
    try {
      await this.libp2p.dial(id, { signal: options.signal });
    } catch (e) {
      options.signal?.throwIfAborted();
      const known = await this.libp2p.peerStore.get(id).then(
        (peer) => peer.addresses.map((a) => a.multiaddr.toString()),
        () => [],
      );
      throw new Error(describeDialFailure(known, e), { cause: e });
    }
  }

  /** Whether the node knows at least one address for this participant. */
  async knowsAddresses(publicKey: PublicKeyBytes): Promise<boolean> {
    const id = peerIdOf(publicKey);
    if (!(await this.libp2p.peerStore.has(id))) return false;
    return (await this.libp2p.peerStore.get(id)).addresses.length > 0;
  }

  /** Public keys of the peers this node has open connections to. */
  connectedPeers(): PublicKeyBytes[] {
    return this.libp2p.getPeers().flatMap((p) => (p.type === "Ed25519" ? [p.publicKey.raw] : []));
  }

  /** Whether an open connection to the peer with this public key exists. */
  isConnected(publicKey: PublicKeyBytes): boolean {
    return this.libp2p.getConnections(peerIdOf(publicKey)).length > 0;
  }

  /** Stops the node: closes all connections and the listener. Safe to call twice. */
  async stop(): Promise<void> {
    const hooks = this.#onStop.splice(0);
    await Promise.allSettled(hooks.map((hook) => hook()));
    await this.libp2p.stop();
  }

  /** Stops the node (for `await using`). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/**
 * What this node knows about where it sits: its own interfaces' IPs, and the IPs relays saw
 * its connections come from. libp2p's address manager asks it which addresses to announce
 * (to identify and to `getMultiaddrs`), so gossip and identify tell peers the same thing.
 */
class Sight {
  readonly observed = new Set<string>();
  /** Whether our relay serves now: publicly reachable (set once the node exists). */
  servesRelay: () => boolean = () => false;
  readonly #interfaceIps: string[];

  constructor(host: string) {
    const ips = new Set([host, "127.0.0.1"]);
    if (host === "0.0.0.0") {
      for (const i of Deno.networkInterfaces()) if (i.family === "IPv4") ips.add(i.address);
    }
    this.#interfaceIps = [...ips];
  }

  /** Whether `ip` is one of this machine's. */
  isOwn(ip: string): boolean {
    return this.#interfaceIps.includes(ip);
  }

  judge(own: readonly string[], untested: readonly string[] = []): Reachability {
    return reachability(own, this.#interfaceIps, [...this.observed], untested);
  }

  filter(addresses: Multiaddr[]): Multiaddr[] {
    const keep = new Set(this.judge(addresses.map(String)).announce);
    return addresses.filter((a) => keep.has(a.toString()));
  }
}

/** The circuit relay's hop protocol: a peer that lists it serves reservations. */
const RELAY_HOP_PROTOCOL = "/libp2p/circuit/relay/0.2.0/hop";

/** Takes the hop protocol off what the peer store says `peer` speaks. */
async function forgetRelaying(libp2p: Libp2p<P2PServices>, peer: PeerId): Promise<void> {
  const { protocols } = await libp2p.peerStore.get(peer);
  if (!protocols.includes(RELAY_HOP_PROTOCOL)) return;
  await libp2p.peerStore.patch(peer, {
    protocols: protocols.filter((p) => p !== RELAY_HOP_PROTOCOL),
  });
}

/** libp2p's address sorter: a peer's addresses in {@link dialRank} order (stable within a rank). */
function byDialRank(a: Address, b: Address): -1 | 0 | 1 {
  const d = dialRank(a.multiaddr.toString()) - dialRank(b.multiaddr.toString());
  return d < 0 ? -1 : d > 0 ? 1 : 0;
}

/**
 * Builds and starts a node listening on `host:port`, identified by `secretKey`, refusing every
 * peer not in its allowlist.
 *
 * @example
 * ```ts
 * import { createP2PNode } from "./node.ts";
 * const node = await createP2PNode({ secretKey: new Uint8Array(32).fill(9) });
 * console.assert(node.addresses().length > 0);
 * await node.stop();
 * ```
 */
export async function createP2PNode(options: P2PNodeOptions): Promise<P2PNode> {
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new RangeError(`port must be an integer in 0..65535, found ${port}`);
  }
  if (!/^(\d{1,3})(\.\d{1,3}){3}$/.test(host) || host.split(".").some((o) => Number(o) > 255)) {
    throw new RangeError(`host must be an IPv4 address such as 127.0.0.1, found "${host}"`);
  }
  const privateKey = await libp2pPrivateKey(options.secretKey);
  const allowlist = new Allowlist(options.allowedPeers ?? []);
  const sight = new Sight(host);
  const libp2p = await createLibp2p<P2PServices>({
    privateKey,
    addresses: {
      // `/p2p-circuit`: reserve a slot on every relay we connect to (the gater lets through
      // only the run's relays), so peers can reach us through it.
      listen: [`/ip4/${host}/tcp/${port}`, "/p2p-circuit"],
      ...(options.publicAddresses ? { announce: options.publicAddresses } : {}),
      announceFilter: (addresses) => sight.filter(addresses),
    },
    transports: [tcp(), circuitRelayTransport()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionGater: allowlistGater(allowlist, () => sight.servesRelay()),
    connectionManager: { addressSorter: byDialRank },
    // libp2p pings every connection each 10 s and aborts it when a ping takes over 5 s (less
    // once it has seen fast ones). A busy machine's event loop or a link saturated by a model
    // download answers later than that: the connection was closed, redialled and closed again,
    // and at 32 clients on 2 cores the redials' handshakes were most of the run's work. Dead
    // peers still go: a ping that fails outright, or one that takes over a minute.
    connectionMonitor: {
      pingInterval: PING_INTERVAL_MS,
      pingTimeout: { minTimeout: PING_TIMEOUT_MIN_MS, maxTimeout: PING_TIMEOUT_MAX_MS },
    },
    services: {
      identify: identify(),
      dcutr: dcutr(),
      autoNAT: autoNAT(),
      // A peer behind NAT reserves here only over a direct connection, and the gater lets it
      // only while AutoNAT says we are reachable: a client behind NAT relays for nobody.
      addressBook,
      relay: circuitRelayServer({
        reservations: {
          maxReservations: CLIENT_RELAY_RESERVATIONS,
          // As the run's relay (relay.ts): between members, a DisTrO result is more than
          // libp2p's default 128 KiB per relayed connection.
          applyDefaultLimit: false,
        },
      }),
      pubsub: gossipsub({
        // Announcements carry their own ed25519 signature (see announcement.ts), so gossipsub's
        // own signing is off and message ids are content hashes: a resend with a new nonce is a
        // new message, an exact duplicate is dropped by gossipsub's seen cache.
        globalSignaturePolicy: StrictNoSign,
        allowPublishToZeroTopicPeers: true,
        emitSelf: false,
        heartbeatInterval: options.gossipHeartbeatMs ?? 1000,
      }),
    },
  });
  return new P2PNode(
    libp2p,
    allowlist,
    publicKeyOf(options.secretKey),
    host,
    sight,
    options.relayProbe,
  );
}
