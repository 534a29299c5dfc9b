/**
 * Who may talk to us: the epoch's participants, by their 32-byte ed25519 public keys.
 *
 * Psyche's `AllowlistHook` refuses connections from endpoints outside the current epoch's client
 * list and is updated on every coordinator state. `Allowlist` holds that set (keyed by libp2p
 * peer id string) and `allowlistGater` turns it into a libp2p connection gater that refuses
 * dials to, and inbound connections from, anyone not in it. Pure: no I/O.
 *
 * @module
 */
import type { ConnectionGater, PeerId } from "@libp2p/interface";
import { peerIdOf } from "./identity.ts";
import type { PublicKeyBytes } from "../../common/mod.ts";
import { isAcceptablePublicKey } from "../mod.ts";

/** The current set of allowed peers; replaced wholesale each epoch with `set`. */
export class Allowlist {
  #keys = new Map<string, PublicKeyBytes>();
  /** The run's relays (peer id strings): always let through, never participants. */
  readonly #relays = new Set<string>();

  /** Starts with the given public keys allowed (none by default: refuse everyone). */
  constructor(publicKeys: Iterable<PublicKeyBytes> = []) {
    this.set(publicKeys);
  }

  /**
   * Replaces the allowed set. Returns the peer ids that were allowed before and are not any
   * more, so the caller can close their connections. A key no secret key stands behind
   * (small-order or non-canonical, net/ed25519_strict.ts) is never allowed, even when the
   * coordinator lists it: anyone could forge its signatures, so whoever holds it proves nothing.
   */
  set(publicKeys: Iterable<PublicKeyBytes>): string[] {
    const next = new Map<string, PublicKeyBytes>();
    for (const key of publicKeys) {
      if (isAcceptablePublicKey(key)) next.set(peerIdOf(key).toString(), key.slice());
    }
    const removed = [...this.#keys.keys()].filter((id) => !next.has(id));
    this.#keys = next;
    return removed;
  }

  /** Whether a peer (peer id or its string form) is allowed. */
  has(peer: PeerId | string): boolean {
    return this.#keys.has(typeof peer === "string" ? peer : peer.toString());
  }

  /** The public key of an allowed peer, or `undefined` when the peer is not allowed. */
  publicKey(peer: PeerId | string): PublicKeyBytes | undefined {
    return this.#keys.get(typeof peer === "string" ? peer : peer.toString());
  }

  /** Lets a relay through the gate (for its reservation and the connections it carries). */
  addRelay(peer: PeerId | string): void {
    this.#relays.add(typeof peer === "string" ? peer : peer.toString());
  }

  /** Takes a relay off the gate (the run no longer names it). */
  removeRelay(peer: PeerId | string): void {
    this.#relays.delete(typeof peer === "string" ? peer : peer.toString());
  }

  /** Whether a peer is one of the run's relays. */
  isRelay(peer: PeerId | string): boolean {
    return this.#relays.has(typeof peer === "string" ? peer : peer.toString());
  }

  /** Number of allowed peers. */
  get size(): number {
    return this.#keys.size;
  }

  /** Peer id strings of all allowed peers. */
  peerIds(): string[] {
    return [...this.#keys.keys()];
  }
}

/**
 * A libp2p connection gater that consults `allowlist` on every dial and on every inbound or
 * outbound connection once the remote's identity is known (after the noise handshake).
 * Addresses are not filtered: identity, not location, decides.
 */
export function allowlistGater(
  allowlist: Allowlist,
  servesRelay: () => boolean = () => false,
): ConnectionGater {
  const deny = (peer: PeerId) => !allowlist.has(peer) && !allowlist.isRelay(peer);
  return {
    denyDialPeer: deny,
    denyInboundEncryptedConnection: deny,
    denyOutboundEncryptedConnection: deny,
    denyInboundUpgradedConnection: deny,
    denyOutboundUpgradedConnection: deny,
    // A client relays for participants only, and only while `servesRelay` (publicly reachable).
    denyInboundRelayReservation: (peer) => !servesRelay() || !allowlist.has(peer),
    denyOutboundRelayedConnection: (source, destination) =>
      !servesRelay() || !allowlist.has(source) || !allowlist.has(destination),
    // A relayed connection comes through one of the run's relays or a participant serving as
    // one, from a participant.
    denyInboundRelayedConnection: (relay, remote) =>
      !(allowlist.isRelay(relay) || allowlist.has(relay)) || !allowlist.has(remote),
  };
}
