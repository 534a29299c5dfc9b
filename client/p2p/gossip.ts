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
 * so payloads can later be fetched from participants we never connected to. Its latest list
 * replaces the one before (`P2PNode.setAnnouncedAddresses`): an address the sender dropped is
 * not dialled again.
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
import type { P2PNode } from "../../net/p2p/mod.ts";
import { peerIdOf, publicKeyOf } from "../../net/p2p/mod.ts";
import { RebroadcastQueue } from "./rebroadcast.ts";
import { RecentSet } from "../../net/p2p/mod.ts";
import { AnnouncementArchive } from "./announcement_archive.ts";
import {
  pullAnnouncements,
  type PullOptions,
  serveAnnouncements,
  unserveAnnouncements,
} from "./announcement_sync.ts";
import { MAX_SYNC_ENVELOPES } from "./sync_wire.ts";
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
  /** Lost on purpose by the `loseFirstCopy` test hook. */
  lostOnPurpose: number;
  /** Delivered through a pull (also counted in `delivered`). */
  pulled: number;
  /** Pulled envelopes that were not a valid, signed announcement of the step asked for. */
  badPulled: number;
}

/** What one pull brought. */
export interface PullReport {
  /** Envelopes in the answer. */
  received: number;
  /** New announcements delivered from them. */
  delivered: number;
  /** Envelopes refused: malformed, another step, a stranger's, or a bad signature. */
  refused: number;
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
  /**
   * Test hook: the first copy of each announcement of these kinds to arrive is lost, as on a
   * lossy network (neither delivered nor relayed; gossipsub has already marked its message id
   * seen, so only a resend or a pull brings it). Default none.
   */
  loseFirstCopy?: ReadonlySet<Announcement["kind"]>;
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
    lostOnPurpose: 0,
    pulled: 0,
    badPulled: 0,
  };
  /** Round announcements delivered or sent, for peers that pull them. */
  readonly #archive = new AnnouncementArchive();
  /** Announcements the `loseFirstCopy` hook already lost once. */
  readonly #lost = new RecentSet(4096);
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
    const { recipients, bytes } = await this.#send(message);
    this.#queue.record(message);
    if (isPullable(message)) this.#archive.record(toHex(this.#node.publicKey), message.step, bytes);
    return recipients;
  }

  /** Starts answering peers' pulls from what this node delivered and sent. */
  async serve(): Promise<void> {
    await serveAnnouncements(this.#node, (step) => this.#archive.envelopes(step), {
      maxEnvelopes: MAX_SYNC_ENVELOPES,
    });
  }

  /**
   * Asks `peer` for the announcements of `step` it holds, and delivers those not delivered yet
   * exactly as if gossip had brought them (each checked first as the topic validator would).
   * Throws when the peer cannot be reached or answers out of format.
   */
  async pull(peer: PublicKeyBytes, step: number, options: PullOptions): Promise<PullReport> {
    const envelopes = await pullAnnouncements(this.#node, peer, step, options);
    const report: PullReport = { received: envelopes.length, delivered: 0, refused: 0 };
    for (const bytes of envelopes) {
      const outcome = this.#offer(bytes, step);
      if (outcome === "delivered") report.delivered++;
      else if (outcome === "refused") report.refused++;
    }
    this.#stats.pulled += report.delivered;
    this.#stats.badPulled += report.refused;
    return report;
  }

  /** Forgets the announcements kept for peers' pulls below `step`. */
  forgetBefore(step: number): void {
    this.#archive.forgetBefore(step);
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
    return (await this.#send({ kind: "PeerAddresses", addresses })).recipients;
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

  /** Leaves the topic and stops delivering and answering pulls. */
  close(): void {
    unserveAnnouncements(this.#node).catch(() => {}); // only fails when the node is stopping
    const pubsub = this.#node.libp2p.services.pubsub;
    pubsub.removeEventListener("message", this.#onMessage);
    pubsub.topicValidators.delete(this.topic);
    if (this.#node.libp2p.status === "started") pubsub.unsubscribe(this.topic);
  }

  async #send(message: Announcement): Promise<{ recipients: number; bytes: Uint8Array }> {
    const nonce = this.#nonce;
    this.#nonce = (this.#nonce + 1) >>> 0;
    const bytes = signAnnouncement(message, {
      secretKey: this.#options.secretKey,
      topic: this.topic,
      nonce,
    });
    const result = await this.#node.libp2p.services.pubsub.publish(this.topic, bytes);
    return { recipients: result.recipients.length, bytes };
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
    this.#node.setAnnouncedAddresses(from, parsed).catch(() => {
      // the peer store only fails when the node is stopping; the addresses are then moot
    });
  }

  /** Decodes and checks an envelope's sender and signature; says what is wrong otherwise. */
  #check(
    bytes: Uint8Array,
  ): AnnouncementEnvelope | "malformed" | "unknownSender" | "badSignature" {
    let envelope: AnnouncementEnvelope;
    try {
      envelope = decodeEnvelope(bytes);
    } catch {
      return "malformed";
    }
    if (!this.#node.allowlist.has(peerIdOf(envelope.from))) return "unknownSender";
    if (!verifyEnvelope(envelope, this.topic)) return "badSignature";
    return envelope;
  }

  #validate(msg: Message): TopicValidatorResult {
    const envelope = this.#check(msg.data);
    if (typeof envelope === "string") {
      this.#stats[envelope]++;
      return envelope === "unknownSender"
        ? TopicValidatorResult.Ignore
        : TopicValidatorResult.Reject;
    }
    if (
      this.#options.loseFirstCopy?.has(envelope.message.kind) && this.#lost.add(dedupKey(envelope))
    ) {
      this.#stats.lostOnPurpose++;
      return TopicValidatorResult.Ignore;
    }
    this.#verified.set(msg, envelope);
    return TopicValidatorResult.Accept;
  }

  #deliver(msg: Message): void {
    if (msg.topic !== this.topic) return;
    const envelope = this.#verified.get(msg);
    if (envelope === undefined) return; // not validated by us: never deliver it
    this.#verified.delete(msg);
    this.#admit(envelope, msg.data);
  }

  /** A pulled envelope: delivered when it is a valid round announcement of `step` and new. */
  #offer(bytes: Uint8Array, step: number): "delivered" | "duplicate" | "refused" {
    const envelope = this.#check(bytes);
    if (typeof envelope === "string") return "refused";
    const message = envelope.message;
    if (message.kind === "PeerAddresses" || !isPullable(message) || message.step !== step) {
      return "refused";
    }
    return this.#admit(envelope, bytes) ? "delivered" : "duplicate";
  }

  /** Delivers a checked envelope once (false for a resend already delivered) and keeps it. */
  #admit(envelope: AnnouncementEnvelope, bytes: Uint8Array): boolean {
    if (!this.#seen.add(dedupKey(envelope))) {
      this.#stats.duplicates++;
      return false;
    }
    this.#stats.delivered++;
    const message = envelope.message;
    if (message.kind === "PeerAddresses") this.#remember(envelope.from, message.addresses);
    else if (isPullable(message)) {
      // A copy: gossip's bytes may be a view into a larger buffer.
      this.#archive.record(toHex(envelope.from), message.step, bytes.slice());
    }
    this.#options.onAnnouncement({
      from: envelope.from,
      message: envelope.message,
      nonce: envelope.nonce,
    });
    return true;
  }
}

/**
 * Whether peers may pull this announcement: a round's result or Finished. Warmup readiness is
 * resent every tick while Warmup lasts, so it needs no pull (and would fill the archive).
 */
function isPullable(message: RoundAnnouncement): boolean {
  return message.kind === "TrainingResult" || !message.warmup;
}

/** Multiaddr protocol code of `/p2p/<peer id>`. */
const P2P_PROTOCOL_CODE = 421;

/** sha256 of sender and message (not nonce): one short key per distinct announcement. */
function dedupKey(envelope: AnnouncementEnvelope): string {
  return createHash("sha256").update(envelope.from).update(envelope.messageBytes).digest("hex");
}
