/**
 * The client's peer-to-peer transport for one run: the libp2p node (allowlist = the epoch's
 * clients), the run's gossip, payload transfers, dialing and bootstrapping, this client's
 * warmup readiness (announced, and resent while Warmup lasts), and traffic counts. What happens
 * to a round's results (announcements judged, payloads downloaded and checked, lost
 * announcements recovered, witness reports, the apply's gathering) is client/results/'s
 * {@link RoundResults}: the exchange builds it over its gossip and payload service
 * ({@link Exchange.results}) and forwards every announcement but peers' addresses to it.
 *
 * @module
 */
import "../net/p2p/mod.ts";
import { multiaddr } from "@multiformats/multiaddr";
import { peerIdFromString } from "@libp2p/peer-id";
import type { Announcement } from "./p2p/announcement.ts";
import { peersToDial } from "./p2p/bootstrap.ts";
import { RunGossip } from "./p2p/gossip.ts";
import { createP2PNode, type P2PNode } from "../net/p2p/mod.ts";
import { isRelayed } from "../net/p2p/mod.ts";
import { type BulkOptions, PayloadService } from "../net/p2p/mod.ts";
import type { RetryPolicy } from "../net/p2p/mod.ts";
import { RoundResults } from "./results/mod.ts";
import type { ClientLogger } from "./log.ts";
import { currentHeight, epochPeerKeys, isInEpoch, stepOfHeight } from "./round_view.ts";
import { type PublicKeyBytes, toHex } from "../common/mod.ts";
import type { CommitteeProof, CoordinatorState } from "../coordinator/core/mod.ts";

/** How an {@link Exchange} is set up. */
export interface ExchangeOptions {
  readonly runId: string;
  /** The client's 32-byte ed25519 secret key (also its libp2p identity). */
  readonly secretKey: Uint8Array;
  readonly publicKey: PublicKeyBytes;
  /** Interface and port to listen on (port 0: any free one). */
  readonly host?: string;
  readonly port?: number;
  /**
   * Multiaddrs (with `/p2p/<id>`) of participants to reach before gossip tells us more
   * (`--bootstrap-peer`; a Solana run's account may add: {@linkcode Exchange.useBootstrapPeers}).
   */
  readonly bootstrapPeers?: readonly string[];
  /**
   * Circuit relays (with `/p2p/<id>`) to reserve a slot on (`--relay`; the coordinator, or a Solana
   * run's account, may add: {@linkcode Exchange.useRelays}).
   */
  readonly relays?: readonly string[];
  readonly maxConcurrentDownloads?: number;
  /** The plain-TCP bulk path for large payloads (default on; `false` turns it off). */
  readonly bulk?: BulkOptions | false;
  /** Payload retry settings (tests shorten them). */
  readonly retry?: Partial<RetryPolicy>;
  readonly logger: ClientLogger;
  /** Called whenever something the state machine depends on changed. */
  readonly onChange: () => void;
  /** Random u64 bloom keys and a random first nonce: the edge's randomness. */
  readonly random?: { u64(): bigint; u32(): number; index(n: number): number };
  /** Gossipsub heartbeat, ms (tests use less). */
  readonly gossipHeartbeatMs?: number;
  /** Test hooks that make the network misbehave on purpose (none by default). */
  readonly faults?: ExchangeFaults;
}

/** Network faults a test can inflict on one client's exchange. */
export interface ExchangeFaults {
  /** The first arriving copy of every announcement of these kinds is lost (a lossy network). */
  readonly loseFirstCopy?: readonly Announcement["kind"][];
}

const defaultRandom = {
  u64(): bigint {
    return new BigUint64Array(crypto.getRandomValues(new Uint32Array(2)).buffer)[0];
  },
  u32(): number {
    return crypto.getRandomValues(new Uint32Array(1))[0];
  },
  index(n: number): number {
    return crypto.getRandomValues(new Uint32Array(1))[0] % n;
  },
};

/** Most participants a client keeps connections to (payload fetches dial others as needed). */
const MAX_NEIGHBOURS = 8;

/** A default (meaningless) proof for warmup announcements, as in Psyche. */
const WARMUP_PROOF: CommitteeProof = { committee: "Trainer", position: 0, index: 0 };

/** Why libp2p cannot reserve on `address` (a multiaddr ending in `/p2p/<relay id>`), or null. */
function relayProblem(address: string): string | null {
  try {
    const id = multiaddr(address).getComponents().findLast((c) => c.name === "p2p")?.value;
    if (id === undefined || isRelayed(address)) return "must end in /p2p/<relay peer id>";
    peerIdFromString(id);
    return null;
  } catch (e) {
    return `is not a relay's multiaddr: ${(e as Error).message}`;
  }
}

/** One client's p2p exchange. Create with {@link Exchange.start}; `close()` when done. */
export class Exchange {
  readonly node: P2PNode;
  readonly gossip: RunGossip;
  readonly payloads: PayloadService;
  /**
   * The rounds' results: announcements, downloads, recovery, witness reports, the apply's
   * gathering, and the facts the state machine reads (`ExchangeFacts`).
   */
  readonly results: RoundResults;
  readonly #options: ExchangeOptions;
  readonly #random: NonNullable<ExchangeOptions["random"]>;
  #state: CoordinatorState | null = null;
  #bootstrapped = new Set<string>();
  /** The last dial error of each peer that could not be reached (hex key). */
  #dialErrors = new Map<string, string>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #dialing = false;
  /** The epoch whose warmup Finished we announced (resent while Warmup lasts). */
  #warmupAnnounced: number | null = null;
  /** Whether an upgrade of relayed connections is under way. */
  #upgrading = false;
  /** The last reachability logged, to log each change once. */
  #reachabilityLogged = "";
  /** The last relay dial errors logged (relay address -> error). */
  #relayErrors = new Map<string, string>();

  private constructor(node: P2PNode, payloads: PayloadService, options: ExchangeOptions) {
    this.node = node;
    this.payloads = payloads;
    this.#options = options;
    this.#random = options.random ?? defaultRandom;
    this.gossip = new RunGossip(node, {
      runId: options.runId,
      secretKey: options.secretKey,
      firstNonce: this.#random.u32(),
      loseFirstCopy: new Set(options.faults?.loseFirstCopy ?? []),
      onAnnouncement: ({ from, message }) => this.#receive(from, message),
    });
    this.results = new RoundResults({
      publicKey: options.publicKey,
      transport: { gossip: this.gossip, payloads },
      logger: options.logger,
      onChange: options.onChange,
      randomU64: () => this.#random.u64(),
    });
  }

  /** Starts the node, gossip and payload service. */
  static async start(options: ExchangeOptions): Promise<Exchange> {
    const node = await createP2PNode({
      secretKey: options.secretKey,
      host: options.host,
      port: options.port ?? 0,
      gossipHeartbeatMs: options.gossipHeartbeatMs,
    });
    try {
      const payloads = await PayloadService.start(node, {
        maxConcurrentDownloads: options.maxConcurrentDownloads,
        retry: options.retry,
        bulk: options.bulk,
      });
      const exchange = new Exchange(node, payloads, options);
      exchange.#followConnections();
      await exchange.gossip.serve();
      for (const address of options.bootstrapPeers ?? []) await exchange.#addBootstrap(address);
      if ((options.relays ?? []).length > 0) await exchange.useRelays([]);
      exchange.#timer = setInterval(() => exchange.#tick(), 2000);
      return exchange;
    } catch (e) {
      await node.stop();
      throw e;
    }
  }

  /**
   * Follows a coordinator update: {@link RoundResults.update} first (a new epoch's records,
   * the rounds' trackers, old payloads forgotten), before anything is awaited, so an
   * announcement delivered meanwhile finds its tracker; then the allowlist becomes the epoch's
   * clients and missing neighbours are dialled.
   */
  async update(state: CoordinatorState): Promise<void> {
    this.#state = state;
    this.results.update(state);
    if (!isInEpoch(state)) return;
    await this.node.setAllowedPeers(epochPeerKeys(state));
    void this.#dial();
  }

  /**
   * Reserves a slot on the circuit relays the run names (the TCP coordinator on each connection,
   * where a restarted coordinator may name a new one; a Solana run's account whenever its
   * meeting addresses change), besides those of `--relay`, so peers that cannot dial us reach
   * us through one. An address libp2p cannot use as a relay is skipped, saying so, and the
   * rest are used. A relay that cannot be reached is said once and dialled again every tick.
   */
  async useRelays(named: readonly string[]): Promise<void> {
    const all = [...new Set([...(this.#options.relays ?? []), ...named])].filter((address) => {
      const problem = relayProblem(address);
      if (problem !== null) {
        this.#options.logger.log("error", { what: "relay", error: `"${address}" ${problem}` });
      }
      return problem === null;
    });
    let failures;
    try {
      failures = await this.node.setRelays(all);
    } catch (e) {
      this.#options.logger.log("error", { what: "relay", error: (e as Error).message });
      return;
    }
    this.#noteRelays(failures);
  }

  /**
   * Adds participants to dial first, besides those of `--bootstrap-peer` (a Solana run's
   * bootstrap peers, from its account): their addresses join the peer store, so dials reach
   * them. An address that does not end in `/p2p/<ed25519 peer id>` is skipped, saying so.
   */
  async useBootstrapPeers(addresses: readonly string[]): Promise<void> {
    for (const address of addresses) {
      try {
        await this.#addBootstrap(address);
      } catch (e) {
        const message = (e as Error).message;
        const error = message.includes(address) ? message : `"${address}" ${message}`;
        this.#options.logger.log("error", { what: "bootstrap peer", error });
      }
    }
    void this.#dial();
  }

  /** Gossips `Finished{warmup}` and counts ourselves ready. */
  async announceWarmupFinished(): Promise<void> {
    this.#warmupAnnounced = this.results.noteOwnWarmupFinished();
    await this.gossip.announceAddresses();
    await this.#publishWarmup();
    this.#options.onChange();
  }

  /**
   * Warmup readiness carries the epoch's start step (Psyche sends 0), so one epoch's
   * announcement is not taken for a resend of the previous epoch's.
   */
  #publishWarmup(): Promise<number> {
    return this.gossip.publish({
      kind: "Finished",
      step: this.results.epochStartStep ?? 0,
      proof: WARMUP_PROOF,
      merkleRoot: new Uint8Array(32),
      warmup: true,
    });
  }

  /** Bytes served and fetched, and gossip deliveries, since start; peers connected now. */
  traffic(): { bytesSent: number; bytesReceived: number; gossipDelivered: number; peers: number } {
    const s = this.payloads.stats;
    return {
      bytesSent: s.servedBytes,
      bytesReceived: s.fetchedBytes,
      gossipDelivered: this.gossip.stats.delivered,
      peers: this.node.connectedPeers().length,
    };
  }

  /** Stops downloads, timers, gossip and the node. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.results.close();
    this.gossip.close();
    await this.payloads.close();
    await this.node.stop();
  }

  /**
   * Logs each participant connection as it opens, direct or through a relay: the network lab
   * (and a person) reads from them which peers could reach each other.
   */
  #followConnections(): void {
    this.node.libp2p.addEventListener("connection:open", (event) => {
      const connection = event.detail;
      const peer = connection.remotePeer;
      if (!this.node.allowlist.has(peer) || peer.type !== "Ed25519") return;
      const address = connection.remoteAddr.toString();
      this.#options.logger.log("peer_connected", {
        peer: toHex(peer.publicKey.raw),
        via: isRelayed(address) ? "relay" : "direct",
        address,
      });
    });
  }

  #noteRelays(failures: { relay: string; error: string }[]): void {
    const failed = new Set(failures.map((f) => f.relay));
    for (const relay of [...this.#relayErrors.keys()]) {
      if (!failed.has(relay)) this.#relayErrors.delete(relay);
    }
    for (const { relay, error } of failures) {
      if (this.#relayErrors.get(relay) === error) continue;
      this.#relayErrors.set(relay, error);
      this.#options.logger.log("relay_unreachable", { relay, error });
    }
  }

  /** Says when we learn we are behind NAT, or our announced addresses change. */
  #noteReachability(): void {
    const { behindNat, publiclyReachable, announce } = this.node.reachability();
    const relays = this.node.relays();
    const reservations = this.node.relayReservations();
    const key = JSON.stringify([
      behindNat,
      publiclyReachable,
      announce,
      relays.connected,
      reservations,
    ]);
    if (key === this.#reachabilityLogged) return;
    this.#reachabilityLogged = key;
    this.#options.logger.log("reachability", {
      behind_nat: behindNat,
      public: publiclyReachable,
      relays: relays.count,
      relays_connected: relays.connected,
      relaying_for: reservations,
      addresses: announce,
    });
  }

  /** A peer's addresses make us dial; every other announcement is the results'. */
  #receive(from: PublicKeyBytes, message: Announcement): void {
    if (message.kind === "PeerAddresses") {
      void this.#dial();
      return;
    }
    this.results.receive(from, message);
  }

  async #addBootstrap(address: string): Promise<void> {
    const ma = multiaddr(address);
    const id = ma.getComponents().find((c) => c.name === "p2p")?.value;
    if (id === undefined) {
      throw new TypeError(`bootstrap peer "${address}" must end in /p2p/<peer id>`);
    }
    const peer = peerIdFromString(id);
    if (peer.type !== "Ed25519") throw new TypeError(`bootstrap peer "${address}" is not ed25519`);
    await this.node.addPeerAddresses(peer.publicKey.raw, [ma]);
    this.#bootstrapped.add(toHex(peer.publicKey.raw));
  }

  async #dial(): Promise<void> {
    const state = this.#state;
    if (this.#dialing || state === null) return;
    this.#dialing = true;
    try {
      const participants = epochPeerKeys(state);
      const reachable = new Set<string>();
      for (const key of participants) {
        if (await this.node.knowsAddresses(key)) reachable.add(toHex(key));
      }
      const targets = peersToDial({
        participants,
        self: this.#options.publicKey,
        connected: this.node.connectedPeers(),
        reachable: (k) => reachable.has(toHex(k)),
        // No epoch clients yet (WaitingForMembers): nobody to dial.
        target: Math.max(0, Math.min(participants.length - 1, MAX_NEIGHBOURS)),
        randomIndex: (n) => this.#random.index(n),
      });
      const dials = await Promise.allSettled(targets.map((k) => this.node.connectTo(k)));
      for (const [i, dial] of dials.entries()) this.#noteDial(toHex(targets[i]), dial);
    } finally {
      this.#dialing = false;
    }
  }

  /**
   * Says when a participant cannot be reached (a wrong address, a peer listening only on
   * 127.0.0.1), once per peer and error: dials are retried every tick.
   */
  #noteDial(peer: string, dial: PromiseSettledResult<unknown>): void {
    if (dial.status === "fulfilled") {
      this.#dialErrors.delete(peer);
      return;
    }
    const error = dial.reason instanceof Error ? dial.reason.message : String(dial.reason);
    if (this.#dialErrors.get(peer) === error) return;
    this.#dialErrors.set(peer, error);
    this.#options.logger.log("peer_unreachable", { peer, error });
  }

  /** Trades relayed connections for direct ones where a peer announced a direct address. */
  #upgrade(): void {
    if (this.#upgrading) return;
    this.#upgrading = true;
    // The direct connection is logged as it opens (`peer_connected`), like any other.
    this.node.upgradeRelayed().catch(() => {}).finally(() => this.#upgrading = false);
  }

  #tick(): void {
    for (const { relay, waitedMs } of this.node.takeSilentRelays()) {
      this.#options.logger.log("relay_silent", { relay, waited_ms: waitedMs });
    }
    if (this.node.relays().addresses.length > 0) {
      this.node.dialRelays().then((failures) => this.#noteRelays(failures), () => {});
      this.#noteReachability();
    }
    // Dialing is best effort and retried every tick; a failure must not take the client down.
    this.#dial().catch((e) =>
      this.#options.logger.log("error", { what: "dial peers", error: (e as Error).message })
    );
    this.#upgrade();
    const state = this.#state;
    if (state === null) return;
    if (state.runState === "RoundTrain" || state.runState === "RoundWitness") {
      const step = stepOfHeight(state, currentHeight(state));
      this.gossip.rebroadcast(step).catch(() => {});
      this.results.seekMissing(state);
    } else if (state.runState === "Warmup" && this.#warmupAnnounced === state.progress.epoch) {
      // Readiness gates the epoch's start: resend it on every tick (receivers deduplicate).
      this.#publishWarmup().catch(() => {});
    }
    this.gossip.announceAddresses().catch(() => {});
  }
}
