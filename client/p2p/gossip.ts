/**
 * A run's gossip channel: publishes our signed announcements on the run's topic and delivers
 * verified announcements from other participants, each once.
 *
 * Every received message passes gossipsub's topic validator here before it is delivered or
 * forwarded, so a middle node never relays what it cannot verify:
 * - bytes that do not decode (`decodeEnvelope`) are rejected (`malformed`);
 * - a sender not in the node's allowlist is ignored (`unknownSender`; not penalised, since the
 *   allowlist may simply lag an epoch change);
 * - a signature that does not verify for the claimed sender and this topic is rejected
 *   (`badSignature`).
 * Accepted messages are forwarded; a resend of something already delivered (same sender and
 * message, new nonce) is forwarded but not delivered again (`duplicates`).
 *
 * A `PeerAddresses` announcement also records the sender's addresses in the node's peer store,
 * so payloads can later be fetched from participants we never connected to.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { Message } from "@libp2p/gossipsub";
import { TopicValidatorResult } from "@libp2p/gossipsub";
import { multiaddr } from "@multiformats/multiaddr";
import {
  type Announcement,
  type AnnouncementEnvelope,
  decodeEnvelope,
  gossipTopic,
  MAX_ADDRESS_BYTES,
  MAX_PEER_ADDRESSES,
  type RoundAnnouncement,
  signAnnouncement,
  verifyEnvelope,
} from "./announcement.ts";
import type { P2PNode } from "./node.ts";
import { peerIdOf, publicKeyOf } from "./identity.ts";
import { RebroadcastQueue } from "./rebroadcast.ts";
import { RecentSet } from "./recent_set.ts";
import { type PublicKeyBytes, toHex } from "../../common/mod.ts";

/** An announcement delivered to the client. */
export interface ReceivedAnnouncement {
  /** The sender's 32-byte ed25519 public key (verified). */
  from: PublicKeyBytes;
  message: Announcement;
  nonce: number;
}

/** Counters of what arrived on the topic. */
export interface GossipStats {
  /** Delivered to `onAnnouncement`. */
  delivered: number;
  /** Valid resends of something already delivered. */
  duplicates: number;
  /** Bytes that were not a well-formed announcement. */
  malformed: number;
  /** Well-formed, but from a key outside the allowlist. */
  unknownSender: number;
  /** From an allowed key, but the signature does not verify. */
  badSignature: number;
}

/** Options for `RunGossip`. */
export interface RunGossipOptions {
  /** The run id; the topic is `gossipTopic(runId)`. */
  runId: string;
  /** Our 32-byte ed25519 secret key (the node's identity) to sign announcements with. */
  secretKey: Uint8Array;
  /**
   * Called once per distinct verified announcement from another participant, synchronously from
   * gossipsub's event dispatch: it must not throw, and should hand long work off.
   */
  onAnnouncement: (received: ReceivedAnnouncement) => void;
  /**
   * First nonce to use; every send (first or resend) takes the next one. Pass a random u32 so
   * a restarted client does not repeat an earlier envelope. Default 0.
   */
  firstNonce?: number;
  /** How many delivered announcements to remember for deduplication. Default 4096. */
  dedupCapacity?: number;
  /** How many steps back our announcements are resent by `rebroadcast`. Default 2. */
  rebroadcastSteps?: number;
}

/** One run's gossip on one node. Create with `new RunGossip(node, options)`; `close()` to leave. */
export class RunGossip {
  /** The topic string: hex sha256("psyche gossip" || run id). */
  readonly topic: string;
  readonly #node: P2PNode;
  readonly #options: RunGossipOptions;
  readonly #verified = new WeakMap<Message, AnnouncementEnvelope>();
  readonly #seen: RecentSet;
  readonly #queue: RebroadcastQueue;
  #nonce: number;
  #stats: GossipStats = {
    delivered: 0,
    duplicates: 0,
    malformed: 0,
    unknownSender: 0,
    badSignature: 0,
  };
  readonly #onMessage = (event: CustomEvent<Message>) => this.#deliver(event.detail);

  /** Subscribes `node` to the run's topic and starts validating what arrives on it. */
  constructor(node: P2PNode, options: RunGossipOptions) {
    this.#node = node;
    this.#options = options;
    this.topic = gossipTopic(options.runId);
    this.#nonce = options.firstNonce ?? 0;
    if (!Number.isInteger(this.#nonce) || this.#nonce < 0 || this.#nonce > 0xffff_ffff) {
      throw new RangeError(`firstNonce must be a u32, found ${options.firstNonce}`);
    }
    if (toHex(publicKeyOf(options.secretKey)) !== toHex(node.publicKey)) {
      throw new RangeError("secretKey is not the key of this node's identity");
    }
    this.#seen = new RecentSet(options.dedupCapacity ?? 4096);
    this.#queue = new RebroadcastQueue(options.rebroadcastSteps);
    const pubsub = node.libp2p.services.pubsub;
    if (pubsub.topicValidators.has(this.topic)) {
      throw new Error(`node already has gossip attached for run "${options.runId}"`);
    }
    pubsub.topicValidators.set(this.topic, (_source, msg) => this.#validate(msg));
    pubsub.addEventListener("message", this.#onMessage);
    pubsub.subscribe(this.topic);
  }

  /** A snapshot of the counters. */
  get stats(): GossipStats {
    return { ...this.#stats };
  }

  /** Public keys of connected peers subscribed to this topic. */
  topicPeers(): PublicKeyBytes[] {
    const peers = this.#node.libp2p.services.pubsub.getSubscribers(this.topic);
    return peers.flatMap((p) => (p.type === "Ed25519" ? [p.publicKey.raw] : []));
  }

  /**
   * Signs and publishes a round announcement, and remembers it for `rebroadcast`. Returns how
   * many peers it was sent to directly (0 when alone: gossip does not fail for that).
   */
  async publish(message: RoundAnnouncement): Promise<number> {
    const sent = await this.#send(message);
    this.#queue.record(message);
    return sent;
  }

  /**
   * Tells the run where this node listens (its first `MAX_PEER_ADDRESSES` addresses, without
   * the `/p2p/...` suffix). Call it after joining and then now and again (e.g. with each
   * rebroadcast), so participants that join later learn it too. Returns the direct recipients.
   */
  async announceAddresses(): Promise<number> {
    const addresses = this.#node.addresses()
      .map((a) => a.decapsulateCode(P2P_PROTOCOL_CODE).bytes)
      .filter((bytes) => bytes.length <= MAX_ADDRESS_BYTES)
      .slice(0, MAX_PEER_ADDRESSES);
    if (addresses.length === 0) return 0;
    return await this.#send({ kind: "PeerAddresses", addresses });
  }

  /**
   * Resends one of our announcements from the last `rebroadcastSteps` steps (round-robin) with
   * a fresh nonce. Call it on a timer (Psyche: every 10 s). Returns false when none qualifies.
   */
  async rebroadcast(currentStep: number): Promise<boolean> {
    const message = this.#queue.next(currentStep);
    if (message === undefined) return false;
    await this.#send(message);
    return true;
  }

  /** Leaves the topic and stops delivering. */
  close(): void {
    const pubsub = this.#node.libp2p.services.pubsub;
    pubsub.removeEventListener("message", this.#onMessage);
    pubsub.topicValidators.delete(this.topic);
    if (this.#node.libp2p.status === "started") pubsub.unsubscribe(this.topic);
  }

  async #send(message: Announcement): Promise<number> {
    const nonce = this.#nonce;
    this.#nonce = (this.#nonce + 1) >>> 0;
    const bytes = signAnnouncement(message, {
      secretKey: this.#options.secretKey,
      topic: this.topic,
      nonce,
    });
    const result = await this.#node.libp2p.services.pubsub.publish(this.topic, bytes);
    return result.recipients.length;
  }

  #remember(from: Uint8Array, addresses: Uint8Array[]): void {
    const parsed = addresses.flatMap((bytes) => {
      try {
        return [multiaddr(bytes)];
      } catch {
        return []; // an address we cannot parse is useless to us, not an attack
      }
    });
    if (parsed.length === 0) return;
    this.#node.addPeerAddresses(from, parsed).catch(() => {
      // the peer store only fails when the node is stopping; the addresses are then moot
    });
  }

  #validate(msg: Message): TopicValidatorResult {
    let envelope: AnnouncementEnvelope;
    try {
      envelope = decodeEnvelope(msg.data);
    } catch {
      this.#stats.malformed++;
      return TopicValidatorResult.Reject;
    }
    if (!this.#node.allowlist.has(peerIdOf(envelope.from))) {
      this.#stats.unknownSender++;
      return TopicValidatorResult.Ignore;
    }
    if (!verifyEnvelope(envelope, this.topic)) {
      this.#stats.badSignature++;
      return TopicValidatorResult.Reject;
    }
    this.#verified.set(msg, envelope);
    return TopicValidatorResult.Accept;
  }

  #deliver(msg: Message): void {
    if (msg.topic !== this.topic) return;
    const envelope = this.#verified.get(msg);
    if (envelope === undefined) return; // not validated by us: never deliver it
    this.#verified.delete(msg);
    if (!this.#seen.add(dedupKey(envelope))) {
      this.#stats.duplicates++;
      return;
    }
    this.#stats.delivered++;
    if (envelope.message.kind === "PeerAddresses") {
      this.#remember(envelope.from, envelope.message.addresses);
    }
    this.#options.onAnnouncement({
      from: envelope.from,
      message: envelope.message,
      nonce: envelope.nonce,
    });
  }
}

/** Multiaddr protocol code of `/p2p/<peer id>`. */
const P2P_PROTOCOL_CODE = 421;

/** sha256 of sender and message (not nonce): one short key per distinct announcement. */
function dedupKey(envelope: AnnouncementEnvelope): string {
  return createHash("sha256").update(envelope.from).update(envelope.messageBytes).digest("hex");
}
