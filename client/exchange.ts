/**
 * The client's peer-to-peer exchange for one run: the libp2p node (allowlist = the epoch's
 * clients), the run's gossip, and payload transfers. It turns announcements into
 * {@link RoundTracker} records, downloads every accepted result from any peer that has it
 * (the announcer first, then the other participants; retries and fallback in
 * client/p2p), checks the bytes against the announced commitment, decodes them for this
 * model, and answers the state machine's questions ({@link ExchangeFacts}).
 *
 * What is refused (and logged, never fatal): announcements the tracker rejects (wrong
 * step, stranger, stolen proof, wrong batch, equivocation), announced sizes other than the
 * model's payload size and peers past their byte budget for the round (both before a byte is
 * fetched), payloads whose commitment hash does not match, payloads that do not decode for
 * the model. Forged signatures never get here: the gossip layer drops them before delivery
 * or relay.
 *
 * @module
 */
import "./p2p/exit_fix.ts";
import { multiaddr } from "@multiformats/multiaddr";
import { peerIdFromString } from "@libp2p/peer-id";
import type { Announcement } from "./p2p/announcement.ts";
import { peersToDial } from "./p2p/bootstrap.ts";
import { hashFromBytes, hashToBytes } from "./p2p/content_store.ts";
import { RunGossip } from "./p2p/gossip.ts";
import { createP2PNode, type P2PNode } from "./p2p/node.ts";
import { type BulkOptions, PayloadService } from "./p2p/payload_service.ts";
import type { RetryPolicy } from "./p2p/fallback.ts";
import {
  type BloomSetup,
  bloomSetup,
  checkAnnouncedResult,
  checkResultPayload,
  EarlyBuffer,
  emptyWitness,
  expectedResultBytes,
  PullLedger,
  RoundTracker,
} from "./results/mod.ts";
import type { ClientLogger } from "./log.ts";
import {
  currentHeight,
  epochPeerKeys,
  isEpochPeer,
  isInEpoch,
  roundView,
  stepOfHeight,
} from "./round_view.ts";
import type { ExchangeFacts } from "./state/intent.ts";
import { equalBytes, type PublicKeyBytes, toHex } from "../common/mod.ts";
import type {
  CommitteeProof,
  CoordinatorState,
  Witness,
  WitnessProof,
} from "../coordinator/core/mod.ts";
import {
  commitmentHash,
  decodePayload,
  type DistroResult,
  encodePayload,
  type PayloadExpectation,
} from "../optimizer/mod.ts";

/** How an {@link Exchange} is set up. */
export interface ExchangeOptions {
  readonly runId: string;
  /** The client's 32-byte ed25519 secret key (also its libp2p identity). */
  readonly secretKey: Uint8Array;
  readonly publicKey: PublicKeyBytes;
  /** Interface and port to listen on (port 0: any free one). */
  readonly host?: string;
  readonly port?: number;
  /** Multiaddrs (with `/p2p/<id>`) of participants to reach before gossip tells us more. */
  readonly bootstrapPeers?: readonly string[];
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
/** Most peers an apply's last-resort recovery pulls from at once. */
const RECOVERY_FANOUT = 16;

/** A default (meaningless) proof for warmup announcements, as in Psyche. */
const WARMUP_PROOF: CommitteeProof = { committee: "Trainer", position: 0, index: 0 };

interface EpochRecord {
  epoch: number;
  /** When the epoch began (`epochState.startTimestamp`). */
  started: number;
  startStep: number;
  trackers: Map<number, RoundTracker>;
  warmupFinished: Set<string>;
}

/** One client's p2p exchange. Create with {@link Exchange.start}; `close()` when done. */
export class Exchange implements ExchangeFacts {
  readonly node: P2PNode;
  readonly gossip: RunGossip;
  readonly payloads: PayloadService;
  readonly #options: ExchangeOptions;
  readonly #random: NonNullable<ExchangeOptions["random"]>;
  readonly #downloads = new AbortController();
  #epoch: EpochRecord | null = null;
  #state: CoordinatorState | null = null;
  #expectation: PayloadExpectation | null = null;
  #bootstrapped = new Set<string>();
  /** The last dial error of each peer that could not be reached (hex key). */
  #dialErrors = new Map<string, string>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #dialing = false;
  /** The epoch whose warmup Finished we announced (resent while Warmup lasts). */
  #warmupAnnounced: number | null = null;
  /** Announcements for steps this client has not reached yet. */
  readonly #early = new EarlyBuffer<{ from: PublicKeyBytes; message: Announcement }>();
  /** Pulls of lost announcements started, so that none is asked for forever. */
  readonly #pulls = new PullLedger();

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
      await exchange.gossip.serve();
      for (const address of options.bootstrapPeers ?? []) await exchange.#addBootstrap(address);
      exchange.#timer = setInterval(() => exchange.#tick(), 2000);
      return exchange;
    } catch (e) {
      await node.stop();
      throw e;
    }
  }

  /** The decode expectation of payloads (set once the model is loaded). */
  setExpectation(expectation: PayloadExpectation): void {
    this.#expectation = expectation;
  }

  /**
   * Follows a coordinator update: a new epoch resets the records; the allowlist becomes the
   * epoch's clients; trackers exist for every round in the ring buffer; old payloads are
   * forgotten; missing neighbours are dialled.
   */
  async update(state: CoordinatorState): Promise<void> {
    this.#state = state;
    const epoch = state.progress.epoch;
    if (!isInEpoch(state)) return;
    // An epoch is its number and start: a restarted coordinator begins the same number anew.
    const started = state.epochState.startTimestamp;
    if (this.#epoch === null || this.#epoch.epoch !== epoch || this.#epoch.started !== started) {
      this.#epoch = {
        epoch,
        started,
        startStep: state.epochState.startStep,
        trackers: new Map(),
        warmupFinished: new Set(),
      };
      this.payloads.clearBadProviders();
      this.#replay(state.epochState.startStep);
    }
    this.#early.dropBefore(state.epochState.startStep);
    // The round's trackers exist before anything is awaited: an announcement delivered while
    // the allowlist updates finds its tracker. Found under load: one delivered in that window
    // was taken for a resend of a past round and dropped, and gossip deduplicates the
    // announcement's resends, so the result never reached this client and it diverged.
    if (state.runState === "RoundTrain" || state.runState === "RoundWitness") {
      const height = currentHeight(state);
      for (let h = Math.max(0, height - 3); h <= height; h++) this.#ensureTracker(state, h);
      for (const h of this.#epoch.trackers.keys()) {
        if (h < height - 3) this.#epoch.trackers.delete(h);
      }
      const oldest = stepOfHeight(state, height) - 2;
      this.payloads.forgetBefore(oldest);
      this.gossip.forgetBefore(oldest);
      this.#pulls.forgetBefore(oldest);
    }
    await this.node.setAllowedPeers(epochPeerKeys(state));
    void this.#dial();
  }

  /** The tracker of round `height` of the current epoch, if the round was seen. */
  tracker(height: number): RoundTracker | undefined {
    return this.#epoch?.trackers.get(height);
  }

  /** {@inheritDoc ExchangeFacts.warmupFinishedBy} */
  warmupFinishedBy(peers: readonly PublicKeyBytes[]): boolean {
    const set = this.#epoch?.warmupFinished;
    return set !== undefined && peers.every((p) => set.has(toHex(p)));
  }

  /** {@inheritDoc ExchangeFacts.downloadsSettled} */
  downloadsSettled(height: number): boolean {
    if (height < 0) return true;
    return this.tracker(height)?.downloadsSettled() ?? true;
  }

  /** {@inheritDoc ExchangeFacts.finishedBy} */
  finishedBy(height: number, peers: readonly PublicKeyBytes[]): boolean {
    return this.tracker(height)?.finishedBy(peers) ?? false;
  }

  /** Gossips `Finished{warmup}` and counts ourselves ready. */
  async announceWarmupFinished(): Promise<void> {
    const record = this.#epoch;
    record?.warmupFinished.add(toHex(this.#options.publicKey));
    this.#warmupAnnounced = record?.epoch ?? null;
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
      step: this.#epoch?.startStep ?? 0,
      proof: WARMUP_PROOF,
      merkleRoot: new Uint8Array(32),
      warmup: true,
    });
  }

  /**
   * Publishes our result of round `height`: encodes it, serves the bytes, gossips the
   * TrainingResult, and records it in our own tracker exactly as a peer's (decoded from the
   * bytes, so we apply what everyone else applies). Returns the payload size.
   */
  async publishResult(
    height: number,
    proof: CommitteeProof,
    result: DistroResult,
  ): Promise<number> {
    const expectation = this.#need();
    const bytes = encodePayload(result, expectation);
    const commitment = commitmentHash({ step: result.step, batch: result.batch, payload: bytes });
    const hash = this.payloads.provide(bytes, { step: result.step });
    const message = {
      kind: "TrainingResult" as const,
      step: result.step,
      proof,
      batch: result.batch,
      commitment,
      contentHash: hashToBytes(hash),
      payloadSize: bytes.length,
    };
    const tracker = this.tracker(height);
    if (tracker !== undefined) {
      const verdict = tracker.acceptResult(this.#options.publicKey, message);
      if (verdict.accepted) tracker.recordVerified(commitment, decodePayload(bytes, expectation));
    }
    await this.gossip.publish(message);
    this.#options.onChange();
    return bytes.length;
  }

  /** Gossips Finished for round `height` (Merkle root over round `height − 1`) and counts us. */
  async announceFinished(height: number, step: number, proof: CommitteeProof): Promise<void> {
    const merkleRoot = this.tracker(height - 1)?.merkleRoot() ?? new Uint8Array(32);
    const message = { kind: "Finished" as const, step, proof, merkleRoot, warmup: false };
    this.tracker(height)?.acceptFinished(this.#options.publicKey, message);
    await this.gossip.publish(message);
    this.#options.onChange();
  }

  /** Our witness report of round `height`: blooms and Merkle root over round `height − 1`. */
  witnessReport(height: number, proof: WitnessProof): Witness {
    const previous = this.tracker(height - 1);
    return previous === undefined ? emptyWitness(proof, this.#blooms()) : previous.witness(proof);
  }

  /** A warmup report (empty blooms of the run's size). */
  warmupReport(proof: WitnessProof): Witness {
    return emptyWitness(proof, this.#blooms());
  }

  /**
   * The verified result for `commitment` of round `height`; fetched now (from anyone
   * serving it) when the announcement was accepted but the download had not finished.
   */
  async resultFor(height: number, commitment: Uint8Array): Promise<DistroResult | undefined> {
    const tracker = this.tracker(height);
    if (tracker === undefined) return undefined;
    const have = tracker.result(commitment);
    if (have !== undefined) return have;
    const announced = tracker.announced(commitment);
    if (announced === undefined) return undefined;
    await this.#download(tracker, announced.commitment);
    return tracker.result(commitment);
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
    this.#downloads.abort(new Error("exchange closed"));
    this.gossip.close();
    await this.payloads.close();
    await this.node.stop();
  }

  #need(): PayloadExpectation {
    if (this.#expectation === null) throw new Error("the model is not loaded yet");
    return this.#expectation;
  }

  #blooms(): BloomSetup {
    return bloomSetup(this.#state?.config.maxClients ?? 256, () => this.#random.u64());
  }

  #ensureTracker(state: CoordinatorState, height: number): void {
    const record = this.#epoch;
    if (record === null || record.trackers.has(height)) return;
    const view = roundView(state, height, this.#options.publicKey);
    if (view === null) return;
    const tracker = new RoundTracker(view, this.#blooms());
    record.trackers.set(height, tracker);
    this.#replay(view.step);
  }

  /** Delivers the announcements kept for `step` now that it is live. */
  #replay(step: number): void {
    for (const { from, message } of this.#early.take(step)) this.#receive(from, message);
  }

  /** Keeps an announcement for a step this client has not reached (a peer is ahead). */
  #keepEarly(from: PublicKeyBytes, message: Announcement & { step: number }): void {
    if (!this.#early.keep(message.step, { from, message })) {
      this.#refused(message.kind, from, "WrongStep", `step ${message.step} is too far ahead`);
    }
  }

  #receive(from: PublicKeyBytes, message: Announcement): void {
    const record = this.#epoch;
    const state = this.#state;
    if (message.kind === "PeerAddresses") {
      void this.#dial();
      return;
    }
    if (record === null || state === null) {
      this.#keepEarly(from, message);
      return;
    }
    if (message.kind === "Finished" && message.warmup) {
      if (message.step > record.startStep) this.#keepEarly(from, message);
      if (message.step !== record.startStep) return; // ahead (kept) or an old epoch's
      if (isEpochPeer(state, from)) record.warmupFinished.add(toHex(from));
      else this.#refused("warmup Finished", from, "UnknownSender", "not a client of this epoch");
      this.#options.onChange();
      return;
    }
    const height = message.step - record.startStep;
    const tracker = record.trackers.get(height);
    if (tracker === undefined) {
      const current = ["RoundTrain", "RoundWitness", "Cooldown"].includes(state.runState)
        ? currentHeight(state)
        : -1;
      // A resend from a round already past is dropped; one for the current round or a peer
      // ahead of us is kept for when its tracker exists (gossip delivers each announcement once).
      if (height >= 0 && height >= current) this.#keepEarly(from, message);
      return;
    }
    if (message.kind === "Finished") {
      const verdict = tracker.acceptFinished(from, message);
      if (!verdict.accepted && verdict.reason !== "Duplicate") {
        this.#refused("Finished", from, verdict.reason, verdict.detail);
      }
      if (verdict.accepted) this.#seekAfterFinished(height, from, message.merkleRoot);
      this.#options.onChange();
      return;
    }
    const verdict = tracker.acceptResult(from, message);
    if (!verdict.accepted) {
      if (verdict.reason !== "Duplicate") {
        this.#refused("TrainingResult", from, verdict.reason, verdict.detail);
      }
      return;
    }
    void this.#download(tracker, message.commitment).then(() => this.#options.onChange());
    this.#options.onChange();
  }

  /**
   * The apply's last resort when it lacks results a quorum of witnesses saw: pulls round
   * `height`'s announcements from every peer of the epoch once, and returns how many new ones
   * came (their payloads download as for any announcement; `resultFor` waits for them).
   */
  async recoverRound(height: number): Promise<number> {
    const tracker = this.tracker(height);
    const state = this.#state;
    if (tracker === undefined || state === null) return 0;
    const self = this.#options.publicKey;
    const peers = epochPeerKeys(state).filter((k) => !equalBytes(k, self));
    let delivered = 0;
    for (let i = 0; i < peers.length; i += RECOVERY_FANOUT) {
      const batch = peers.slice(i, i + RECOVERY_FANOUT);
      const counts = await Promise.all(
        batch.map((peer) => this.#pullNow(peer, tracker.view.step, "the apply lacks a result")),
      );
      delivered += counts.reduce((a, b) => a + b, 0);
    }
    return delivered;
  }

  /**
   * A peer's Finished says what it holds: a trainer that finished has published its result,
   * and a Merkle root over the previous round other than ours means it heard results we did
   * not (or we heard some it did not: then it pulls from us). Pull what we lack from it.
   */
  #seekAfterFinished(height: number, from: PublicKeyBytes, merkleRoot: Uint8Array): void {
    const tracker = this.tracker(height);
    if (tracker === undefined) return;
    if (tracker.unheardTrainers().some((k) => equalBytes(k, from))) {
      this.#pull(from, tracker.view.step, "its Finished came without its result");
    }
    const previous = this.tracker(height - 1);
    if (
      previous !== undefined && previous.unheardTrainers().length > 0 &&
      !equalBytes(merkleRoot, previous.merkleRoot())
    ) {
      this.#pull(from, previous.view.step, "it heard results of the round before we did not");
    }
  }

  /**
   * Every tick, what should have arrived by now: the last round's results, and, once ours is
   * out, the peers' Finished of this round (a lost one holds the witnesses until the round's
   * timer). Each is pulled from the peer that sent it. A peer merely slower than us answers
   * with what it has (a few hundred bytes), and the ledger stops asking after three tries;
   * nothing cheaper tells a slow peer from a lost Finished, since the Finisheds that would
   * show how far the round has come may be lost too.
   */
  #seekMissing(state: CoordinatorState): void {
    const height = currentHeight(state);
    const previous = this.tracker(height - 1);
    for (const trainer of previous?.unheardTrainers() ?? []) {
      this.#pull(trainer, previous!.view.step, "its result of the last round is missing");
    }
    const current = this.tracker(height);
    if (current === undefined || !current.hasFinished(this.#options.publicKey)) return;
    for (const client of current.view.clients) {
      const peer = client.id.p2pIdentity;
      if (!current.hasFinished(peer)) {
        this.#pull(peer, current.view.step, "its Finished is missing");
      }
    }
  }

  /** Pulls `step` from `peer` in the background, unless the ledger says not now. */
  #pull(peer: PublicKeyBytes, step: number, why: string): void {
    const state = this.#state;
    if (equalBytes(peer, this.#options.publicKey) || state === null) return;
    // Only between members: a peer refuses anyone outside the epoch's allowlist.
    if (!isEpochPeer(state, peer) || !isEpochPeer(state, this.#options.publicKey)) return;
    const key = toHex(peer);
    if (!this.#pulls.begin(key, step, performance.now())) return;
    void this.#pullNow(peer, step, why).finally(() => this.#pulls.end(key, step));
  }

  /** Pulls `step` from `peer` now; returns how many new announcements it delivered. */
  async #pullNow(peer: PublicKeyBytes, step: number, why: string): Promise<number> {
    const peers = this.#state === null ? 1 : epochPeerKeys(this.#state).length;
    try {
      // Per peer and step: one result and one Finished; twice that leaves room for resends.
      const report = await this.gossip.pull(peer, step, {
        maxEnvelopes: Math.max(8, 4 * peers),
        signal: this.#downloads.signal,
      });
      if (report.refused > 0) {
        this.#refused(
          "pulled announcements",
          peer,
          "BadEnvelope",
          `${report.refused} of ${report.received} for step ${step} were not valid`,
        );
      }
      if (report.delivered > 0) {
        this.#options.logger.log("announcements_recovered", {
          step,
          from: toHex(peer),
          count: report.delivered,
          why,
        });
      }
      return report.delivered;
    } catch (e) {
      // Unreachable, gone or out of format: the ledger bounds the retries; an apply that
      // still lacks a result pulls once more from everyone.
      if (!this.#downloads.signal.aborted) {
        this.#options.logger.log("pull_failed", {
          step,
          from: toHex(peer),
          error: (e as Error).message,
        });
      }
      return 0;
    }
  }

  async #download(tracker: RoundTracker, commitment: Uint8Array): Promise<void> {
    const announced = tracker.announced(commitment);
    if (announced === undefined || tracker.result(commitment) !== undefined) return;
    const step = tracker.view.step;
    const others = (this.#state === null ? [] : epochPeerKeys(this.#state))
      .filter((k) => !equalBytes(k, announced.from));
    try {
      const expectedBytes = expectedResultBytes(this.#need());
      // Twice the round's results per peer: a result may be fetched twice (on announcement and
      // again when applied while the first fetch runs or after it failed).
      const budget = {
        round: step,
        bytesPerPeer: 2 * expectedBytes * tracker.view.assignments.length,
      };
      const spent = this.payloads.budgetSpent(announced.from, step);
      const verdict = checkAnnouncedResult(announced, {
        expectedBytes,
        budgetLeft: budget.bytesPerPeer - spent,
      });
      if (!verdict.ok) {
        tracker.recordFailed(commitment);
        this.#refused("TrainingResult", announced.from, verdict.reason, verdict.detail);
        return;
      }
      const bytes = await this.payloads.fetch(hashFromBytes(announced.contentHash), {
        providers: [announced.from, ...others],
        expectedSize: announced.payloadSize,
        provideAs: { step },
        signal: this.#downloads.signal,
        budget,
      });
      const check = checkResultPayload(bytes, announced, step, this.#need());
      if (!check.ok) {
        tracker.recordFailed(commitment);
        this.#refused("payload", announced.from, check.reason, check.detail);
        return;
      }
      const result = check.result;
      tracker.recordVerified(commitment, result);
    } catch (e) {
      if (this.#downloads.signal.aborted) return;
      tracker.recordFailed(commitment);
      this.#options.logger.log("download_failed", {
        step,
        from: toHex(announced.from),
        error: (e as Error).message,
      });
    }
  }

  #refused(what: string, from: PublicKeyBytes, reason: string, detail: string): void {
    this.#options.logger.log("refused", { what, reason, from: toHex(from), detail });
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

  #tick(): void {
    // Dialing is best effort and retried every tick; a failure must not take the client down.
    this.#dial().catch((e) =>
      this.#options.logger.log("error", { what: "dial peers", error: (e as Error).message })
    );
    const state = this.#state;
    if (state === null) return;
    if (state.runState === "RoundTrain" || state.runState === "RoundWitness") {
      const step = stepOfHeight(state, currentHeight(state));
      this.gossip.rebroadcast(step).catch(() => {});
      this.#seekMissing(state);
    } else if (state.runState === "Warmup" && this.#warmupAnnounced === state.progress.epoch) {
      // Readiness gates the epoch's start: resend it on every tick (receivers deduplicate).
      this.#publishWarmup().catch(() => {});
    }
    this.gossip.announceAddresses().catch(() => {});
  }
}
