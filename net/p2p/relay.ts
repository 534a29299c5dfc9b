/**
 * The run's circuit relay (libp2p circuit relay v2): the meeting point of clients that no peer
 * can dial, such as volunteers behind a home router's NAT. Such a client keeps one connection
 * open to the relay and holds a reservation there; a peer reaches it through
 * `<relay address>/p2p-circuit/p2p/<client>`, and the relay pipes the bytes between them.
 *
 * A relay is a server anyone could find, so it serves members of the run only. Its connection
 * gater refuses every peer whose ed25519 key `isMember` does not know, right after the noise
 * handshake; reservations are capped; and libp2p's connection manager caps connections,
 * handshakes in flight (64, each given 5 s) and the rate at which one address may open them.
 *
 * Those caps alone let a flood of idle connections from many addresses hold every handshake
 * slot, locking members out: measured with libp2p's defaults (16 slots, each held 10 s), 300
 * idle sockets from 300 loopback addresses kept a member from reserving for as long as they
 * stayed. So a relay
 * may also be told which addresses are worth a handshake at all (`allowAddress`; the TCP
 * coordinator allows the addresses its authenticated clients connect from): any other socket
 * is closed the moment it is accepted, before it costs a handshake slot.
 *
 * js-libp2p's defaults end a relayed connection after 128 KiB or 2 minutes, too little for one
 * DisTrO result. Here relayed connections carry no data or time limit: they are opened only
 * between members, so what they move is bounded by what the run itself moves. (A limited
 * connection would also make every protocol opt in to it, gossip included.)
 *
 * @module
 */
import { createLibp2p, type Libp2p } from "libp2p";
import { tcp } from "@libp2p/tcp";
import { noise } from "@libp2p/noise";
import { yamux } from "@libp2p/yamux";
import { identify } from "@libp2p/identify";
import { circuitRelayServer, type CircuitRelayService } from "@libp2p/circuit-relay-v2";
import { generateKeyPair } from "@libp2p/crypto/keys";
import type { ConnectionGater, PeerId } from "@libp2p/interface";
import { toHex } from "../../common/mod.ts";
import { type AddressBook, addressBook } from "./address_book.ts";

/** Options of {@link startRelay}. */
export interface RelayOptions {
  /** Interface to listen on (IPv4). */
  readonly host: string;
  /** TCP port; 0 picks a free one. */
  readonly port: number;
  /** Whether the holder of this ed25519 public key (hex) is a member of the run. */
  readonly isMember: (publicKeyHex: string) => boolean;
  /** Clients that may hold a reservation at once: the run's `max_clients`. */
  readonly maxReservations: number;
  /** Addresses to announce instead of the listen addresses (a public IP behind a forward). */
  readonly announce?: readonly string[];
  /**
   * Whether a connection from this IP may even start a handshake (default: every IP). Sockets
   * from other addresses are closed at once, so they cannot hold handshake slots.
   */
  readonly allowAddress?: (ip: string) => boolean;
}

/** Counters a relay keeps, for logs and tests. */
export interface RelayStats {
  /** Connections refused because their peer is not a member. */
  refusedNonMembers: number;
  /** Sockets closed on accept because `allowAddress` refused their IP. */
  refusedAddresses: number;
}

/** A running relay. */
export interface Relay {
  /** Its addresses, each ending in `/p2p/<relay peer id>`: what clients are told. */
  addresses(): string[];
  /** Its libp2p peer id. */
  readonly peerId: PeerId;
  /** Clients holding a reservation now. */
  reservations(): number;
  /** Peers connected now (members only: others are refused). */
  connections(): number;
  readonly stats: Readonly<RelayStats>;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/**
 * Starts a relay listening on `host:port`, serving members only.
 *
 * @example
 * ```ts
 * import { startRelay } from "./relay.ts";
 * const relay = await startRelay({
 *   host: "127.0.0.1",
 *   port: 0,
 *   isMember: () => false,
 *   maxReservations: 4,
 * });
 * console.assert(relay.addresses()[0].includes("/p2p/"));
 * await relay.close();
 * ```
 */
export async function startRelay(options: RelayOptions): Promise<Relay> {
  if (!Number.isInteger(options.maxReservations) || options.maxReservations < 1) {
    throw new RangeError(
      `maxReservations must be a positive integer, found ${options.maxReservations}`,
    );
  }
  const stats: RelayStats = { refusedNonMembers: 0, refusedAddresses: 0 };
  const allowAddress = options.allowAddress;
  const denyNonMember = (peer: PeerId): boolean => {
    const member = peer.type === "Ed25519" && options.isMember(toHex(peer.publicKey.raw));
    if (!member) stats.refusedNonMembers++;
    return !member;
  };
  const gater: ConnectionGater = {
    // The relay dials nobody: it answers members, and relays over their own connections.
    denyDialPeer: () => true,
    denyInboundConnection: (connection) => {
      if (allowAddress === undefined) return false;
      const ip = connection.remoteAddr.getComponents()
        .find((c) => c.name === "ip4" || c.name === "ip6")?.value;
      const allowed = ip !== undefined && allowAddress(ip);
      if (!allowed) stats.refusedAddresses++;
      return !allowed;
    },
    denyInboundEncryptedConnection: denyNonMember,
    denyInboundRelayReservation: (peer) => denyNonMember(peer),
    denyOutboundRelayedConnection: (source, destination) =>
      denyNonMember(source) || denyNonMember(destination),
  };
  const libp2p: Libp2p<{ relay: CircuitRelayService; addressBook: AddressBook }> =
    await createLibp2p({
      privateKey: await generateKeyPair("Ed25519"),
      addresses: {
        listen: [`/ip4/${options.host}/tcp/${options.port}`],
        ...(options.announce ? { announce: [...options.announce] } : {}),
      },
      transports: [tcp()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      connectionGater: gater,
      connectionManager: {
        // Each reserving client holds one connection; each relayed pair adds none (streams).
        maxConnections: options.maxReservations * 2 + 16,
        maxIncomingPendingConnections: 64,
        // A member completes its handshake in milliseconds; a silent socket is let go sooner
        // than libp2p's 10 s.
        inboundUpgradeTimeout: 5_000,
      },
      services: {
        identify: identify(),
        addressBook,
        relay: circuitRelayServer({
          reservations: {
            maxReservations: options.maxReservations,
            applyDefaultLimit: false,
          },
        }),
      },
    });
  // libp2p lists an address on a public IP only once AutoNAT confirmed it, and the relay runs
  // none: it lists where it listens (or `announce`), which is what its operator chose.
  const book = libp2p.services.addressBook;
  const addresses = () => {
    const listed = libp2p.getMultiaddrs().map((a) => a.toString());
    if (options.announce !== undefined) return listed;
    const self = libp2p.peerId.toString();
    const listening = book.listening().map((r) => `${r.multiaddr.toString()}/p2p/${self}`);
    return [...new Set([...listed, ...listening])];
  };
  return {
    peerId: libp2p.peerId,
    addresses,
    reservations: () => libp2p.services.relay.reservations.size,
    connections: () => libp2p.getConnections().length,
    stats,
    close: async () => await libp2p.stop(),
  };
}
