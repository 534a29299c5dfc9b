/**
 * The life of a round's results on one client, from the announcement to the apply. A result is
 * **announced** (a peer's TrainingResult on the run's gossip, or our own), **judged** by the
 * round's {@link RoundTracker} before a byte is fetched, **fetched** from any peer that has it
 * (the announcer first, then the other participants; retries and fallback in client/p2p),
 * **checked** against the announced commitment and decoded for this model
 * (client/results/payload_check.ts), **recorded** in the tracker as verified (or failed),
 * **witnessed** (the tracker's blooms and Merkle root make the round's witness report) and
 * finally **chosen for the apply** (client/results/apply_decision.ts: the commitment a quorum of witnesses received,
 * per batch). Announcements lost on the way are pulled back from peers, and the state machine's
 * questions about results are answered here ({@link ExchangeFacts}).
 *
 * What is refused (and logged, never fatal): announcements the tracker rejects (wrong step,
 * stranger, stolen proof, wrong batch, equivocation), announced sizes other than the model's
 * payload size and peers past their byte budget for the round (both before a byte is fetched),
 * payloads whose commitment hash does not match, payloads that do not decode for the model.
 * Forged signatures never get here: the gossip layer drops them before delivery or relay.
 *
 * Beside the rounds' records, the epoch's record keeps who announced warmup readiness (the
 * warmup Finished travels on the same gossip and waits in the same early buffer). It reaches
 * the network only through the narrow {@link ResultsTransport} it is given (the run's gossip and
 * payload service); client/exchange.ts owns those and forwards every announcement.
 *
 * @module
 */
import type { RoundAnnouncement } from "../p2p/announcement.ts";
import { hashFromBytes, hashToBytes } from "../../net/p2p/mod.ts";
import { abortableSleep } from "../../net/mod.ts";
import type { RunGossip } from "../p2p/gossip.ts";
import type { PayloadService } from "../../net/p2p/mod.ts";
import type { ClientLogger } from "../log.ts";
import {
  currentHeight,
  epochPeerKeys,
  isEpochPeer,
  isInEpoch,
  roundView,
  stepOfHeight,
} from "../round_view.ts";
import type { ExchangeFacts } from "../state/intent.ts";
import { attestedButMissing, decideApply } from "./apply_decision.ts";
import { EarlyBuffer } from "./early_buffer.ts";
import {
  checkAnnouncedResult,
  checkResultPayload,
  expectedResultBytes,
  type PayloadDecoder,
} from "./payload_check.ts";
import { PullLedger } from "./pull_ledger.ts";
import { type BloomSetup, bloomSetup, emptyWitness, RoundTracker } from "./round_tracker.ts";
import { type BatchId, equalBytes, type PublicKeyBytes, toHex } from "../../common/mod.ts";
import {
  type ApplyPlan,
  type CommitteeProof,
  type CoordinatorState,
  roundAssignments,
  roundClients,
  type Witness,
  type WitnessProof,
} from "../../coordinator/core/mod.ts";
import {
  commitmentHash,
  decodePayload,
  type DistroResult,
  encodePayload,
  type PayloadExpectation,
} from "../../optimizer/mod.ts";

/**
 * What {@link RoundResults} needs of the network: the run's gossip (publish our announcements,
 * pull a step's announcements from one peer, forget old steps' archive) and the payload service
 * (serve our bytes, fetch a peer's, its byte budgets, forget old steps' payloads, trust again
 * at a new epoch). The peers themselves come from the coordinator state.
 */
export interface ResultsTransport {
  readonly gossip: Pick<RunGossip, "publish" | "pull" | "forgetBefore">;
  readonly payloads: Pick<
    PayloadService,
    "provide" | "fetch" | "budgetSpent" | "forgetBefore" | "clearBadProviders"
  >;
}

/** How a {@link RoundResults} is set up. */
export interface RoundResultsOptions {
  /** This client's p2p key (its announcements' sender). */
  readonly publicKey: PublicKeyBytes;
  readonly transport: ResultsTransport;
  readonly logger: ClientLogger;
  /** Called whenever something the state machine depends on changed. */
  readonly onChange: () => void;
  /** Random u64 bloom keys: the edge's randomness. */
  readonly randomU64: () => bigint;
  /** The clock stragglers are timed by (ms; default `performance.now`). */
  readonly now?: () => number;
}

/** What an apply gets from {@link RoundResults.gather}. */
export interface GatheredResults {
  /** Each batch's consensus result, downloaded and verified, by batch start. */
  readonly results: DistroResult[];
  /** The batches without a consensus commitment (the untrained batches), by batch start. */
  readonly untrained: BatchId[];
  /**
   * The batches this client lacks a result for though it must apply one: a chosen result it
   * could not get, or an untrained batch a quorum of witnesses nonetheless saw trained.
   */
  readonly missing: BatchId[];
  /**
   * The batches left out because their trainer's results of the round are rejected
   * (`Round.rejected`: ejected by verification, or sampled after it left), by batch start.
   */
  readonly rejected: BatchId[];
}

/**
 * Rounds of results a verifying run keeps (the current one and the five before): a task's
 * tie-break can ask for a result up to four rounds after it was trained.
 */
export const VERIFYING_RETAINED_ROUNDS = 5;

/** Most peers an apply's last-resort recovery pulls from at once. */
const RECOVERY_FANOUT = 16;

/**
 * Rounds of recovery an apply makes before it gives up on a missing result (and the client
 * diverges), {@link RECOVERY_RETRY_MS} apart: on a loaded machine one round of pulls can time
 * out (seen in CI at load 5, a lossy-gossip client diverged), and diverging costs a resync.
 */
const RECOVERY_ROUNDS = 3;
const RECOVERY_RETRY_MS = 1_000;

/**
 * A result download's retries: every provider is asked again after 250 ms, 500 ms and 1 s (the
 * service's default waits 2 s first, Psyche's policy). A witness waits at least
 * STRAGGLER_MIN_WAIT_MS for a round's results, and an attempt whose connection closed under it
 * (one traded for a direct one, a relay that died) or that asked a peer not holding the result
 * yet is worth trying again within that wait, not after it.
 */
const RESULT_RETRY = { backoffMs: 250 } as const;

/** One epoch's record: its identity, a tracker per round seen, and who finished warmup. */
interface EpochRecord {
  epoch: number;
  /** When the epoch began (`epochState.startTimestamp`). */
  started: number;
  startStep: number;
  trackers: Map<number, RoundTracker>;
  warmupFinished: Set<string>;
}

/** One client's results of the current epoch's rounds. `close()` stops its downloads. */
export class RoundResults implements ExchangeFacts {
  readonly #o: RoundResultsOptions;
  readonly #stop = new AbortController();
  #epoch: EpochRecord | null = null;
  #state: CoordinatorState | null = null;
  #expectation: PayloadExpectation | null = null;
  #decode: PayloadDecoder = decodePayload;
  /** Announcements for steps this client has not reached yet. */
  readonly #early = new EarlyBuffer<{ from: PublicKeyBytes; message: RoundAnnouncement }>();
  /** Pulls of lost announcements started, so that none is asked for forever. */
  readonly #pulls = new PullLedger();
  /** Wake-ups at straggler deadlines, by what waits and its round (at most one each). */
  readonly #stragglerTimers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Pulls due again after one failed ({@link #retryPull}). */
  readonly #retryTimers = new Set<ReturnType<typeof setTimeout>>();

  constructor(options: RoundResultsOptions) {
    this.#o = options;
  }

  /**
   * The decode expectation of payloads (set once the model is loaded), and how peers' payloads
   * are decoded (default: on this thread; a trainer's codec takes a large model's to workers).
   */
  setExpectation(expectation: PayloadExpectation, decode: PayloadDecoder = decodePayload): void {
    this.#expectation = expectation;
    this.#decode = decode;
  }

  /**
   * Follows a coordinator update, synchronously: a new epoch resets the records (and the
   * payload service's bad providers); trackers exist for every round in the ring buffer, older
   * ones are dropped, and so are older payloads, archived announcements and pulls.
   */
  update(state: CoordinatorState): void {
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
      this.#o.transport.payloads.clearBadProviders();
      this.#replay(state.epochState.startStep);
    }
    this.#early.dropBefore(state.epochState.startStep);
    // The round's trackers exist before the caller awaits anything: an announcement delivered
    // while the allowlist updates finds its tracker. Found under load: one delivered in that
    // window was taken for a resend of a past round and dropped, and gossip deduplicates the
    // announcement's resends, so the result never reached this client and it diverged.
    if (state.runState === "RoundTrain" || state.runState === "RoundWitness") {
      const height = currentHeight(state);
      for (let h = Math.max(0, height - 3); h <= height; h++) this.#ensureTracker(state, h);
      const kept = state.config.verificationPercent > 0 ? VERIFYING_RETAINED_ROUNDS : 3;
      for (const h of this.#epoch.trackers.keys()) {
        if (h < height - kept) this.#epoch.trackers.delete(h);
      }
      const oldest = stepOfHeight(state, height) - 2;
      this.#o.transport.payloads.forgetBefore(oldest);
      this.#o.transport.gossip.forgetBefore(oldest);
      this.#pulls.forgetBefore(oldest);
    }
  }

  /** The first step of the epoch followed (null before the first). */
  get epochStartStep(): number | null {
    return this.#epoch?.startStep ?? null;
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

  /**
   * Counts this client ready for the epoch's start (it is about to gossip its warmup
   * Finished); returns the epoch it counted in (null before the first).
   */
  noteOwnWarmupFinished(): number | null {
    const record = this.#epoch;
    record?.warmupFinished.add(toHex(this.#o.publicKey));
    return record?.epoch ?? null;
  }

  /**
   * Whether round `height`'s downloads are over: every accepted result downloaded or given up
   * on, and no pull pending of a result whose trainer announced Finished.
   */
  downloadsSettled(height: number): boolean {
    if (height < 0) return true;
    const tracker = this.tracker(height);
    if (tracker === undefined) return true;
    if (!tracker.downloadsSettled()) return false;
    // A trainer whose Finished came without its result (gossip lost it) published one: while a
    // pull from it is under way, or due again after one failed, that result is on its way too.
    // Reporting without it would have the witnesses drop an honest client for a lost message.
    const step = tracker.view.step;
    return !tracker.finishedUnheard().some((key) => this.#pulls.pending(toHex(key), step));
  }

  /**
   * {@inheritDoc ExchangeFacts.downloadsWaitOver}
   *
   * Before the straggler deadline it sets a timer that asks the state machine again then.
   */
  downloadsWaitOver(height: number): boolean {
    if (this.downloadsSettled(height)) return true;
    const tracker = this.tracker(height)!;
    const deadline = tracker.downloadsDeadline();
    if (deadline !== null) {
      // A result still unheard may be lost on the gossip rather than late: ask its trainer now,
      // not at the next tick, so the straggler wait is spent fetching it.
      this.#pullUnheard(tracker);
    }
    return this.#deadlinePassed(`downloads:${height}`, deadline);
  }

  /**
   * {@inheritDoc ExchangeFacts.witnessWaitOver}
   *
   * Before the straggler deadline it sets a timer that asks the state machine again then.
   */
  witnessWaitOver(height: number, peers: readonly PublicKeyBytes[]): boolean {
    const tracker = this.tracker(height);
    if (tracker === undefined) return false;
    if (tracker.finishedBy(peers)) return true;
    const deadline = tracker.stragglerDeadline(peers);
    if (deadline !== null) {
      // A straggler's Finished (and result) may be lost on the gossip rather than late: ask it
      // now, not at the next tick, so the wait is spent fetching them.
      for (const peer of tracker.unfinished(peers)) {
        this.#pull(peer, tracker.view.step, "its Finished is missing");
      }
    }
    return this.#deadlinePassed(`finished:${height}`, deadline);
  }

  /**
   * Whether the clock reached `deadline` (never when null); before it, wakes the state machine
   * then, once per `key`.
   */
  #deadlinePassed(key: string, deadline: number | null): boolean {
    if (deadline === null) return false;
    const left = deadline - this.#now();
    if (left <= 0) return true;
    if (!this.#stragglerTimers.has(key) && !this.#stop.signal.aborted) {
      const timer = setTimeout(() => {
        this.#stragglerTimers.delete(key);
        this.#o.onChange();
      }, Math.ceil(left));
      this.#stragglerTimers.set(key, timer);
    }
    return false;
  }

  /** Keys of `peers` (p2p keys) that have not announced Finished for round `height`. */
  unfinished(height: number, peers: readonly PublicKeyBytes[]): PublicKeyBytes[] {
    return this.tracker(height)?.unfinished(peers) ?? [...peers];
  }

  #now(): number {
    return this.#o.now?.() ?? performance.now();
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
    const hash = this.#o.transport.payloads.provide(bytes, { step: result.step });
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
      const verdict = tracker.acceptResult(this.#o.publicKey, message);
      if (verdict.accepted) {
        tracker.recordVerified(commitment, decodePayload(bytes, expectation), this.#now());
      }
    }
    await this.#o.transport.gossip.publish(message);
    this.#o.onChange();
    return bytes.length;
  }

  /** Gossips Finished for round `height` (Merkle root over round `height − 1`) and counts us. */
  async announceFinished(height: number, step: number, proof: CommitteeProof): Promise<void> {
    const merkleRoot = this.tracker(height - 1)?.merkleRoot() ?? new Uint8Array(32);
    const message = { kind: "Finished" as const, step, proof, merkleRoot, warmup: false };
    this.tracker(height)?.acceptFinished(this.#o.publicKey, message, this.#now());
    await this.#o.transport.gossip.publish(message);
    this.#o.onChange();
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

  /**
   * The results an apply of `plan` uses (`batches`: every batch of its results round): each
   * batch's consensus commitment, downloaded; the batches without one; and those this client
   * lacks though it must apply them. When some are missing, gossip may have lost their
   * announcements: the round is pulled from every peer ({@link recoverRound}) and gathered again
   * if that brought anything; up to {@link RECOVERY_ROUNDS} times, a second apart, gathering
   * again each later time (a failed download is retried).
   */
  async gather(plan: ApplyPlan, batches: readonly BatchId[]): Promise<GatheredResults> {
    let gathered = await this.#gatherOnce(plan, batches);
    const height = plan.resultsRound.height;
    const candidates = (b: BatchId) => this.tracker(height)?.candidates(b).length ?? 0;
    for (let round = 0; round < RECOVERY_ROUNDS && gathered.missing.length > 0; round++) {
      if (round > 0) await abortableSleep(RECOVERY_RETRY_MS, this.#stop.signal).catch(() => {});
      if (this.#stop.signal.aborted) break;
      const missing = gathered.missing;
      const before = missing.map(candidates);
      // Enough once every missing batch gained a candidate: slower pulls finish unawaited.
      const found = () => missing.every((b, i) => candidates(b) > before[i]);
      const recovered = await this.recoverRound(height, found);
      // A later round gathers again even when no pull brought anything: a download that
      // failed the first time is tried again.
      if (recovered > 0 || round > 0) gathered = await this.#gatherOnce(plan, batches);
    }
    return gathered;
  }

  async #gatherOnce(plan: ApplyPlan, all: readonly BatchId[]): Promise<GatheredResults> {
    const height = plan.resultsRound.height;
    const tracker = this.tracker(height);
    const rejected = this.#rejectedBatches(plan);
    const batches = all.filter((b) => !rejected.some((r) => r.start === b.start));
    const decision = decideApply(plan, batches, (batch) => tracker?.candidates(batch) ?? []);
    const results: DistroResult[] = [];
    const missing: BatchId[] = [];
    for (const chosen of decision.chosen) {
      const result = await this.resultFor(height, chosen.commitment);
      if (result === undefined) missing.push(chosen.batch);
      else results.push(result);
    }
    // Batches the witnesses saw trained but this client has no result for.
    const state = this.#state;
    if (state !== null) {
      const round = plan.resultsRound;
      const clients = roundClients(state, round.height);
      const assignments = roundAssignments(state, round);
      const trainerOf = (b: { start: number; end: number }) =>
        clients[assignments.find((a) => a.batch.start === b.start)?.clientIndex ?? -1]?.id
          .signer ?? null;
      missing.push(...attestedButMissing(plan, decision.untrained, trainerOf));
    }
    return { results, untrained: [...decision.untrained], missing, rejected };
  }

  /**
   * The batches of `plan`'s results round whose trainers the round rejects, by batch start. The
   * plan holds the round as the state that made it due did, where the list is frozen.
   */
  #rejectedBatches(plan: ApplyPlan): BatchId[] {
    const round = plan.resultsRound;
    const state = this.#state;
    if (round.rejected.length === 0 || state === null) return [];
    const clients = roundClients(state, round.height);
    return roundAssignments(state, round)
      .filter((a) => round.rejected.includes(clients[a.clientIndex]?.epochIndex ?? -1))
      .map((a) => ({ ...a.batch }))
      .sort((a, b) => a.start - b.start);
  }

  /**
   * The verified result of round `height` announced by the trainer with `signer`, fetched now
   * when its download had not finished; undefined when there is none.
   */
  async resultOf(height: number, signer: PublicKeyBytes): Promise<DistroResult | undefined> {
    const tracker = this.tracker(height);
    const announced = tracker?.announcements().find((a) => equalBytes(a.signer, signer));
    if (announced === undefined) return undefined;
    return await this.resultFor(height, announced.commitment);
  }

  /**
   * A verifier's last resort when it holds no result of `signer` for round `height`: pulls the
   * round from every peer until `signer`'s announcement came (slower pulls end in the
   * background), then its result; undefined when no peer had it.
   */
  async recoverResultOf(
    height: number,
    signer: PublicKeyBytes,
  ): Promise<DistroResult | undefined> {
    const announced = () =>
      this.tracker(height)?.announcements().some((a) => equalBytes(a.signer, signer)) ?? false;
    if (await this.recoverRound(height, announced) === 0) return undefined;
    return await this.resultOf(height, signer);
  }

  /** Every verified result of round `height` this client holds. */
  resultsOf(height: number): DistroResult[] {
    const tracker = this.tracker(height);
    if (tracker === undefined) return [];
    return tracker.announcements().map((a) => tracker.result(a.commitment))
      .filter((r): r is DistroResult => r !== undefined);
  }

  /**
   * Takes an announcement the gossip delivered (or a pull brought): judged by its round's
   * tracker and, when accepted, its payload downloaded; kept for later when its step is not
   * live yet.
   */
  receive(from: PublicKeyBytes, message: RoundAnnouncement): void {
    const record = this.#epoch;
    const state = this.#state;
    if (record === null || state === null) {
      this.#keepEarly(from, message);
      return;
    }
    if (message.kind === "Finished" && message.warmup) {
      if (message.step > record.startStep) this.#keepEarly(from, message);
      if (message.step !== record.startStep) return; // ahead (kept) or an old epoch's
      if (isEpochPeer(state, from)) record.warmupFinished.add(toHex(from));
      else this.#refused("warmup Finished", from, "UnknownSender", "not a client of this epoch");
      this.#o.onChange();
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
      const verdict = tracker.acceptFinished(from, message, this.#now());
      if (!verdict.accepted && verdict.reason !== "Duplicate") {
        this.#refused("Finished", from, verdict.reason, verdict.detail);
      }
      if (verdict.accepted) this.#seekAfterFinished(height, from, message.merkleRoot);
      this.#o.onChange();
      return;
    }
    const verdict = tracker.acceptResult(from, message);
    if (!verdict.accepted) {
      if (verdict.reason !== "Duplicate") {
        this.#refused("TrainingResult", from, verdict.reason, verdict.detail);
      }
      return;
    }
    void this.#download(tracker, message.commitment).then(() => this.#o.onChange());
    this.#o.onChange();
  }

  /**
   * Every tick, what should have arrived by now: the last round's results, and, once ours is
   * out, the peers' Finished of this round (a lost one holds the witnesses until the round's
   * timer). Each is pulled from the peer that sent it. A peer merely slower than us answers
   * with what it has (a few hundred bytes), and the ledger stops asking after three tries;
   * nothing cheaper tells a slow peer from a lost Finished, since the Finisheds that would
   * show how far the round has come may be lost too.
   */
  seekMissing(state: CoordinatorState): void {
    const height = currentHeight(state);
    const previous = this.tracker(height - 1);
    if (previous !== undefined) this.#pullUnheard(previous);
    const current = this.tracker(height);
    if (current === undefined || !current.hasFinished(this.#o.publicKey)) return;
    for (const client of current.view.clients) {
      const peer = client.id.p2pIdentity;
      if (!current.hasFinished(peer)) {
        this.#pull(peer, current.view.step, "its Finished is missing");
      }
    }
  }

  /**
   * The apply's last resort when it lacks results a quorum of witnesses saw: pulls round
   * `height`'s announcements from every peer of the epoch once, and returns how many new ones
   * came (their payloads download as for any announcement; `resultFor` waits for them). With
   * `found`, it returns as soon as `found()` holds after a pull delivered something: a slow
   * peer's pull then ends in the background instead of holding the apply for its timeout.
   */
  async recoverRound(height: number, found?: () => boolean): Promise<number> {
    const tracker = this.tracker(height);
    const state = this.#state;
    if (tracker === undefined || state === null) return 0;
    const self = this.#o.publicKey;
    const peers = epochPeerKeys(state).filter((k) => !equalBytes(k, self));
    let delivered = 0;
    for (let i = 0; i < peers.length; i += RECOVERY_FANOUT) {
      const batch = peers.slice(i, i + RECOVERY_FANOUT);
      const { promise: enough, resolve } = Promise.withResolvers<void>();
      const pulls = batch.map(async (peer) => {
        const { delivered: count } = await this.#pullNow(
          peer,
          tracker.view.step,
          "the apply lacks a result",
        );
        delivered += count;
        if (count > 0 && found?.() === true) resolve();
      });
      await Promise.race([Promise.all(pulls), enough]);
      if (found?.() === true) break;
    }
    return delivered;
  }

  /** Stops downloads and pulls in flight (the exchange closes). */
  close(): void {
    this.#stop.abort(new Error("exchange closed"));
    for (const timer of this.#stragglerTimers.values()) clearTimeout(timer);
    this.#stragglerTimers.clear();
    for (const timer of this.#retryTimers) clearTimeout(timer);
    this.#retryTimers.clear();
  }

  /** Delivers the announcements kept for `step` now that it is live. */
  #replay(step: number): void {
    for (const { from, message } of this.#early.take(step)) this.receive(from, message);
  }

  /** Keeps an announcement for a step this client has not reached (a peer is ahead). */
  #keepEarly(from: PublicKeyBytes, message: RoundAnnouncement): void {
    if (!this.#early.keep(message.step, { from, message })) {
      this.#refused(message.kind, from, "WrongStep", `step ${message.step} is too far ahead`);
    }
  }

  #ensureTracker(state: CoordinatorState, height: number): void {
    const record = this.#epoch;
    if (record === null || record.trackers.has(height)) return;
    const view = roundView(state, height, this.#o.publicKey);
    if (view === null) return;
    const tracker = new RoundTracker(view, this.#blooms(), this.#now());
    record.trackers.set(height, tracker);
    this.#replay(view.step);
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

  /** Pulls the round's results not heard yet, each from its trainer. */
  #pullUnheard(tracker: RoundTracker): void {
    for (const trainer of tracker.unheardTrainers()) {
      this.#pull(trainer, tracker.view.step, "its result of the last round is missing");
    }
  }

  /** Pulls `step` from `peer` in the background, unless the ledger says not now. */
  #pull(peer: PublicKeyBytes, step: number, why: string): void {
    const state = this.#state;
    if (equalBytes(peer, this.#o.publicKey) || state === null) return;
    // Only between members: a peer refuses anyone outside the epoch's allowlist.
    if (!isEpochPeer(state, peer) || !isEpochPeer(state, this.#o.publicKey)) return;
    const key = toHex(peer);
    if (!this.#pulls.begin(key, step, performance.now())) return;
    void this.#pullNow(peer, step, why).then(({ failed }) => {
      this.#pulls.end(key, step, failed);
      if (this.#stop.signal.aborted) return;
      if (failed) this.#retryPull(peer, step, why);
      // A round's downloads may count as settled now (downloadsSettled): plan again.
      this.#o.onChange();
    });
  }

  /**
   * Pulls again, once the ledger allows, from a trainer whose Finished came without its result
   * after a pull from it failed: a connection that closed under the pull (one traded for a
   * direct one) must not cost that trainer its round while the witnesses wait for it.
   */
  #retryPull(peer: PublicKeyBytes, step: number, why: string): void {
    const key = toHex(peer);
    const at = this.#pulls.retryAt(key, step);
    if (at === null) return;
    const timer = setTimeout(() => {
      this.#retryTimers.delete(timer);
      const tracker = [...this.#epoch?.trackers.values() ?? []].find((t) => t.view.step === step);
      if (tracker?.finishedUnheard().some((k) => equalBytes(k, peer)) !== true) return;
      this.#pull(peer, step, why);
    }, Math.max(0, Math.ceil(at - performance.now())));
    this.#retryTimers.add(timer);
  }

  /**
   * Pulls `step` from `peer` now (what it delivers comes back through {@link receive}); returns
   * how many new announcements it delivered, and whether the pull failed.
   */
  async #pullNow(
    peer: PublicKeyBytes,
    step: number,
    why: string,
  ): Promise<{ delivered: number; failed: boolean }> {
    const peers = this.#state === null ? 1 : epochPeerKeys(this.#state).length;
    try {
      // Per peer and step: one result and one Finished; twice that leaves room for resends.
      const report = await this.#o.transport.gossip.pull(peer, step, {
        maxEnvelopes: Math.max(8, 4 * peers),
        signal: this.#stop.signal,
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
        this.#o.logger.log("announcements_recovered", {
          step,
          from: toHex(peer),
          count: report.delivered,
          why,
        });
      }
      return { delivered: report.delivered, failed: false };
    } catch (e) {
      // Unreachable, gone or out of format: the ledger bounds the retries; an apply that
      // still lacks a result pulls once more from everyone.
      if (!this.#stop.signal.aborted) {
        this.#o.logger.log("pull_failed", {
          step,
          from: toHex(peer),
          error: (e as Error).message,
        });
      }
      return { delivered: 0, failed: true };
    }
  }

  /**
   * Fetches an accepted result's payload (unless it is verified already), checks it against
   * the announcement and records it as verified, or as failed with the reason logged.
   */
  async #download(tracker: RoundTracker, commitment: Uint8Array): Promise<void> {
    const announced = tracker.announced(commitment);
    if (announced === undefined || tracker.result(commitment) !== undefined) return;
    const step = tracker.view.step;
    const { payloads } = this.#o.transport;
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
      const spent = payloads.budgetSpent(announced.from, step);
      const verdict = checkAnnouncedResult(announced, {
        expectedBytes,
        budgetLeft: budget.bytesPerPeer - spent,
      });
      if (!verdict.ok) {
        tracker.recordFailed(commitment, this.#now());
        this.#refused("TrainingResult", announced.from, verdict.reason, verdict.detail);
        return;
      }
      const bytes = await payloads.fetch(hashFromBytes(announced.contentHash), {
        // The trainer first (the only peer sure to have it); then whoever serves best.
        providers: [announced.from, ...others],
        pinned: 1,
        expectedSize: announced.payloadSize,
        provideAs: { step },
        signal: this.#stop.signal,
        budget,
        retry: RESULT_RETRY,
      });
      const check = await checkResultPayload(bytes, announced, step, this.#need(), this.#decode);
      if (!check.ok) {
        tracker.recordFailed(commitment, this.#now());
        this.#refused("payload", announced.from, check.reason, check.detail);
        return;
      }
      const result = check.result;
      tracker.recordVerified(commitment, result, this.#now());
    } catch (e) {
      if (this.#stop.signal.aborted) return;
      tracker.recordFailed(commitment, this.#now());
      this.#o.logger.log("download_failed", {
        step,
        from: toHex(announced.from),
        error: (e as Error).message,
      });
    }
  }

  #refused(what: string, from: PublicKeyBytes, reason: string, detail: string): void {
    this.#o.logger.log("refused", { what, reason, from: toHex(from), detail });
  }

  #need(): PayloadExpectation {
    if (this.#expectation === null) throw new Error("the model is not loaded yet");
    return this.#expectation;
  }

  #blooms(): BloomSetup {
    return bloomSetup(this.#state?.config.maxClients ?? 256, () => this.#o.randomU64());
  }
}
