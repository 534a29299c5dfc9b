/**
 * The TCP server's pure core: one run's {@linkcode CoordinatorState} plus what only a
 * centralized host knows (who is waiting to join, in join order). Every entry point takes
 * `now` (seconds, whole milliseconds at most: common/time.ts) and a u64 `seed` from the
 * caller, so this module has no clock,
 * randomness, sockets or logging; it records {@linkcode HostEvent}s the edge drains with
 * {@linkcode CoordinatorHost.takeEvents} and turns into log lines and saved files.
 *
 * Fixes over Psyche's server: pending clients are kept in join order (Psyche's HashSet
 * gave every server process a different client order), and a client dropped from the
 * pending list can join again (Psyche kicked it again on every tick of that epoch).
 *
 * Against hostile clients (docs/server.md, "Hostile clients"): a key dropped by a health
 * check, or elected witness in a round that failed its quorum without reporting, is backed
 * off for some epochs ({@linkcode JoinBackoff}); a permissioned run refuses keys outside
 * its allowlist; a health check is refused on its sender and entry count before its proofs
 * are checked, and a report naming a client twice is refused before any proof is verified.
 * A key ejected by verification is barred by the run itself (coordinator/core/verification.ts);
 * the host says so when it joins and keeps it out of the clients an epoch may take.
 *
 * @module
 */
import {
  type BackoffCause,
  backoffReason,
  DEFAULT_JOIN_BACKOFF_EPOCHS,
  JoinBackoff,
} from "./join_backoff.ts";
import type { ClientMessage, ClientMessageHead } from "./protocol.ts";
import type { ClientTelemetry } from "./telemetry.ts";
import {
  assignedBatch,
  barEpoch,
  barredUntil,
  type Checkpoint,
  checkpoint as machineCheckpoint,
  checkTimeout,
  type ClientState,
  cooldownWitness,
  CoordinatorError,
  type CoordinatorErrorCode,
  type CoordinatorState,
  currentRound,
  type EjectionCause,
  type EjectionRecord,
  type EpochState,
  type HealthCheck,
  healthCheck,
  isHalted,
  isNoDigest,
  lateWitnessHeight,
  MAX_CLIENTS_LIMIT,
  nextTickDeadline,
  type NodeIdentity,
  type Outcome,
  previousRound,
  roundAssignments,
  roundClients,
  roundSelection,
  roundWitnessQuorum,
  roundWitnessWindow,
  type RunState,
  tick as machineTick,
  untrainedBatchCount,
  type VerificationEvidence,
  verificationReport,
  type VerificationStage,
  type VerificationTask,
  type VerificationVerdict,
  warmupWitness,
  type WindDownCause,
  withdraw,
  witness as machineWitness,
  type WitnessMetadata,
} from "../core/mod.ts";
import {
  addTime,
  type BatchId,
  durationProblem,
  equalBytes,
  fromMillis,
  quoteForTerminal,
  toHex,
  toMillis,
} from "../../common/mod.ts";
import { isSmallOrderEncoding } from "../../net/mod.ts";

/** Why an epoch ended: its rounds' {@linkcode WindDownCause}, or see `EpochEnd`. */
export type EpochEndCause = WindDownCause | "warmup" | "unknown";

/** Something the host did, for logs and for the edge's side effects (saving state). */
export type HostEvent =
  | { kind: "StateChanged"; from: RunState; to: RunState; epoch: number; step: number }
  /**
   * The epoch ended, now `epoch` at `step`: `success` false when it ended in Warmup (too few
   * clients, no training). `cause` says why its rounds stopped (`warmup` for one that never
   * trained; `unknown` when this host resumed from a saved state in Cooldown and did not see).
   */
  | {
    kind: "EpochEnd";
    epoch: number;
    step: number;
    success: boolean;
    cause: EpochEndCause;
  }
  | { kind: "Joined"; client: string; pending: number }
  | { kind: "JoinRefused"; client: string; reason: string }
  | { kind: "Left"; client: string; withdrawn: boolean }
  | { kind: "Kicked"; client: string; state: ClientState }
  | { kind: "BackedOff"; client: string; cause: BackoffCause; epoch: number; until: number }
  /** A backed-off key joined: it waits in the pending list until its back-off ends. */
  | { kind: "JoinDeferred"; client: string; reason: string }
  /**
   * WaitingForMembers has `joined` pending clients, enough for `initMinClients`, but back-offs
   * and bars leave only `eligible` free to take part; waiting `liftsInSeconds` more will have
   * lifted enough of them (each `epochTime` waited counts as an epoch).
   */
  | {
    kind: "HeldByBars";
    joined: number;
    eligible: number;
    initMinClients: number;
    liftsInSeconds: number;
  }
  | { kind: "WarmupWitness"; client: string; index: number; digest: string | null }
  | { kind: "CooldownWitness"; client: string; index: number; digest: string | null }
  /** A quorum agreed on the digest of the parameters of `step` (hex). */
  | { kind: "DigestRecorded"; step: number; digest: string }
  | {
    kind: "Witness";
    client: string;
    index: number;
    height: number;
    metadata: WitnessMetadata;
    /** The parameter digest it reported (hex), or null for none. */
    digest: string | null;
  }
  /**
   * Round `height` (of `step`) ended (RoundWitness -> RoundTrain or Cooldown): `witnesses` of
   * the `quorum` needed reported; `trainTimedOut` when its RoundTrain ended by the
   * `max_round_train_time` timer rather than by every witness reporting; of the `batches` of
   * the round it attested (height − 1), `untrainedBatches` had a trainer no quorum of its
   * witnesses saw (coordinator/core/untrained_batches.ts).
   */
  | {
    kind: "RoundEnd";
    height: number;
    step: number;
    witnesses: number;
    quorum: number;
    trainTimedOut: boolean;
    batches: number;
    untrainedBatches: number;
  }
  | { kind: "HealthCheck"; client: string; dropped: number }
  /** A member's telemetry notice for a step it had not reported yet (the latest is kept). */
  | { kind: "Telemetry"; client: string; telemetry: ClientTelemetry }
  /** A telemetry notice from a non-member, or for a step the run has not reached, dropped. */
  | { kind: "TelemetryDropped"; client: string; step: number; reason: string }
  | { kind: "Checkpoint"; client: string; repo: Checkpoint }
  /**
   * A verification stage opened: trainer `trainer`'s result of round `height` (step `step`) is
   * to be checked by `seats` (`Verify` when the result was sampled, `TieBreak` when its first
   * stage ended contested).
   */
  | {
    kind: "VerificationOpened";
    height: number;
    step: number;
    trainer: string;
    stage: VerificationStage;
    seats: string[];
  }
  /** A seated verifier reported. */
  | {
    kind: "VerificationReport";
    client: string;
    height: number;
    trainer: string;
    verdict: VerificationVerdict;
    evidence: VerificationEvidence;
    detail: number;
  }
  /**
   * A task closed: `failed` (the trainer was ejected), `passed`, or `undecided` (no majority
   * and nobody left to break the tie, or nobody reported).
   */
  | {
    kind: "VerificationClosed";
    height: number;
    trainer: string;
    outcome: "passed" | "failed" | "undecided";
    passes: number;
    fails: number;
  }
  /** The run ejected `client` and bars it until epoch `barredUntil` (verification). */
  | {
    kind: "Ejected";
    client: string;
    cause: EjectionCause;
    evidence: VerificationEvidence;
    epoch: number;
    step: number;
    barredUntil: number;
  }
  | {
    kind: "Rejected";
    client: string;
    request: ClientMessage["kind"];
    code: CoordinatorErrorCode;
    message: string;
    /** A witness report for a round that had already ended: late, not forged. */
    late?: true;
  };

/** A reported parameter digest as hex for the logs, or null for none (all zero). */
function digestHex(digest: Uint8Array): string | null {
  return isNoDigest(digest) ? null : toHex(digest);
}

/** The host's answer to one request: accepted, or rejected with the coordinator's error. */
export type HostReply =
  | { kind: "Ack" }
  | { kind: "Error"; code: CoordinatorErrorCode; message: string }
  /** The client may not take part at all (wrong run id, pending list full): close it. */
  | { kind: "Refused"; reason: string }
  /** A notice (telemetry), kept or dropped: nothing is sent back. */
  | { kind: "Noted" };

/** The data server's verdict on a batch request (data/tcp_server.ts `AuthorizeResult`). */
export type DataVerdict = "Allowed" | "NotInThisRound" | "WrongDataIdForStep";

/** Options of {@linkcode CoordinatorHost}. */
export interface HostOptions {
  /** The run (from `createCoordinator`); the host mutates it in place. */
  state: CoordinatorState;
  /** Withdraw a client of the epoch when its connection closes (Psyche's default: true). */
  withdrawOnDisconnect: boolean;
  /**
   * Seconds of Warmup until the run first trains (Psyche's `--init-warmup-time`: a longer
   * first download). The configured `warmupTime` is restored once the run reaches RoundTrain.
   */
  initWarmupTime?: number;
  /** Most clients that may wait to join (default MAX_CLIENTS_LIMIT). */
  maxPending?: number;
  /**
   * Epochs a key removed for misbehaving must wait before it may join again (a key dropped
   * in epoch e may join from e + k); default {@linkcode DEFAULT_JOIN_BACKOFF_EPOCHS}, 0 off.
   */
  joinBackoffEpochs?: number;
  /**
   * A permissioned run: only these keys (hex, `toHex`) may join. Null or absent: anyone.
   */
  authorizedKeys?: ReadonlySet<string> | null;
}

/** The coordinator run of a TCP server, with its pending list. */
export class CoordinatorHost {
  /** The run's state; read it, never mutate it outside the host. */
  readonly state: CoordinatorState;
  readonly #withdrawOnDisconnect: boolean;
  readonly #maxPending: number;
  /** `warmupTime` to restore once the run trains, while `--init-warmup-time` is in force. */
  #configuredWarmup: number | null = null;
  #pending: NodeIdentity[] = [];
  /** The pending clients' key strings (membership tests without a scan). */
  #pendingNames = new Set<string>();
  /** Signers dropped from the pending list this epoch (each is dropped once). */
  #kicked = new Set<string>();
  readonly #backoff: JoinBackoff;
  readonly #authorizedKeys: ReadonlySet<string> | null;
  /** The epoch's client key strings, rebuilt when the state's version or epoch changed. */
  #epochNames: { version: number; epochState: EpochState; names: Set<string> } | null = null;
  #epochState: EpochState;
  #events: HostEvent[] = [];
  /** The HeldByBars situation last said (epoch, bar epoch, joined, eligible), said once. */
  #heldByBarsSaid = "";
  #version = 0;
  /** Each member's latest telemetry notice, by key (hex); only members have an entry. */
  #telemetry = new Map<string, ClientTelemetry>();
  /** Notices dropped silently: for a step their sender had already reported (a flood). */
  #staleTelemetry = 0;
  /**
   * The round whose RoundTrain this host saw end, and whether its timer ended it (false also
   * for a round resumed from a saved state in RoundWitness: the host did not see how).
   */
  #trainEnd: { height: number; timer: boolean } | null = null;
  /** Why the current epoch's rounds stopped, once this host saw them stop. */
  #windDown: WindDownCause | null = null;
  /** Ejection records already reported (the machine appends new ones). */
  #ejectionsSeen = new WeakSet<EjectionRecord>();
  /** Open verification tasks already reported, with the stage they were reported in. */
  #tasksSeen = new WeakMap<VerificationTask, VerificationStage>();

  constructor(options: HostOptions) {
    this.state = options.state;
    this.#withdrawOnDisconnect = options.withdrawOnDisconnect;
    this.#maxPending = options.maxPending ?? MAX_CLIENTS_LIMIT;
    this.#backoff = new JoinBackoff(options.joinBackoffEpochs ?? DEFAULT_JOIN_BACKOFF_EPOCHS);
    this.#authorizedKeys = options.authorizedKeys ?? null;
    this.#epochState = this.state.epochState;
    for (const r of this.state.ejections) this.#ejectionsSeen.add(r);
    for (const t of this.state.epochState.verificationTasks) this.#tasksSeen.set(t, t.stage);
    const init = options.initWarmupTime;
    if (init !== undefined) {
      const problem = durationProblem(init) ?? (init === 0 ? "must be > 0" : null);
      if (problem !== null) {
        throw new RangeError(`initWarmupTime (seconds) ${problem}, found ${init}`);
      }
      this.#configuredWarmup = this.state.config.warmupTime;
      this.state.config.warmupTime = init;
    }
  }

  /** Grows by one every time the state changes: the edge pushes the state when it moved. */
  get version(): number {
    return this.#version;
  }

  /** The pending clients, in join order (copies). */
  pending(): NodeIdentity[] {
    return this.#pending.map((id) => ({
      signer: id.signer.slice(),
      p2pIdentity: id.p2pIdentity.slice(),
    }));
  }

  /** Whether `client` may take part in this run (always true unless it is permissioned). */
  isAuthorized(client: Uint8Array): boolean {
    return this.#authorizedKeys === null || this.#authorizedKeys.has(toHex(client));
  }

  /**
   * Whether `client` is a member of the run: pending, or listed among the epoch's clients.
   * The server never closes a member's connection for being idle.
   */
  isMember(client: Uint8Array): boolean {
    return this.isMemberKey(toHex(client));
  }

  /** {@linkcode CoordinatorHost.isMember} for a key already in hex (`toHex`). */
  isMemberKey(name: string): boolean {
    return this.#pendingNames.has(name) || this.#epochClientNames().has(name);
  }

  #epochClientNames(): Set<string> {
    const es = this.state.epochState;
    const cached = this.#epochNames;
    if (cached !== null && cached.version === this.#version && cached.epochState === es) {
      return cached.names;
    }
    const names = new Set(es.clients.map((c) => toHex(c.id.signer)));
    this.#epochNames = { version: this.#version, epochState: es, names };
    return names;
  }

  /**
   * The answer to a request known from its head alone (kind, request id, health-check entry
   * count), or null when the request must be decoded and handled. The server asks before
   * decoding, so a health check from a non-member, or with more entries than the previous
   * round had clients, costs neither its decoding nor any proof check.
   */
  precheck(client: Uint8Array, head: ClientMessageHead): HostReply | null {
    if (head.kind !== "HealthCheck" || head.entries === null) return null;
    let message: string | null = null;
    if (!this.#epochClientNames().has(toHex(client))) {
      message = "the sender is not a client of this epoch";
    } else {
      const limit = previousRound(this.state)?.clientsLen ?? 0;
      if (head.entries > limit) {
        message = `a report lists 1..${limit} clients, found ${head.entries}`;
      }
    }
    if (message === null) return null;
    this.#events.push({
      kind: "Rejected",
      client: toHex(client),
      request: head.kind,
      code: "InvalidHealthCheck",
      message,
    });
    return { kind: "Error", code: "InvalidHealthCheck", message };
  }

  /** `client`'s (hex key) latest telemetry notice, or null. */
  telemetry(client: string): ClientTelemetry | null {
    return this.#telemetry.get(client) ?? null;
  }

  /** How many clients have a telemetry notice kept (at most the run's members). */
  get telemetryClients(): number {
    return this.#telemetry.size;
  }

  /** Telemetry notices dropped because their sender had already reported that step. */
  get staleTelemetry(): number {
    return this.#staleTelemetry;
  }

  /** The `warmupTime` of the run's configuration (not the `--init-warmup-time` override). */
  get configuredWarmupTime(): number {
    return this.#configuredWarmup ?? this.state.config.warmupTime;
  }

  /** Events recorded since the last call, oldest first. */
  takeEvents(): HostEvent[] {
    const out = this.#events;
    this.#events = [];
    return out;
  }

  /**
   * When the next tick can change the run by time alone (seconds), or null when only a
   * request can: the edge schedules its tick for this moment rather than polling
   * ({@linkcode nextTickDeadline}).
   */
  nextTickDeadline(): number | null {
    const { state } = this;
    if (state.runState !== "WaitingForMembers") return nextTickDeadline(state, 0);
    const lift = this.#enoughEligibleAt();
    if (lift === null) return null;
    const deadline = nextTickDeadline(state, this.#eligible(lift.epoch).length);
    return deadline === null ? null : Math.max(deadline, lift.at);
  }

  /** Advances the run by time (a no-op while Paused or Finished). */
  tick(now: number, seed: bigint): void {
    if (isHalted(this.state)) return;
    this.#withdrawSilentWitnesses(now);
    const roundEnd = this.#roundEnding(now);
    const waiting = this.state.runState === "WaitingForMembers";
    const bars = barEpoch(this.state, now);
    const eligible = this.#eligible(bars);
    this.#step(() => machineTick(this.state, eligible, now, seed), { roundEnd });
    // Back-offs the wait served are served for good, as the machine's bars are.
    if (waiting && this.state.runState !== "WaitingForMembers") this.#backoff.prune(bars);
    this.#sayIfHeldByBars(now);
  }

  /**
   * The first bar epoch (barEpoch) at which enough pending clients are free to start an epoch,
   * and when waiting reaches it (seconds); null when the pending list is too short however
   * long the run waits. Only meaningful in WaitingForMembers.
   */
  #enoughEligibleAt(): { epoch: number; at: number } | null {
    const { state } = this;
    const needed = state.config.initMinClients;
    if (this.#pending.length < needed) return null;
    const epoch = state.progress.epoch;
    // Bars and back-offs lift only at their `until` epochs: try those, nearest first.
    const lifts = new Set([epoch]);
    for (const r of state.ejections) if (r.barredUntil > epoch) lifts.add(r.barredUntil);
    for (const until of this.#backoff.untils()) if (until > epoch) lifts.add(until);
    for (const at of [...lifts].sort((a, b) => a - b)) {
      if (this.#eligible(at).length < needed) continue;
      const waitMs = (at - epoch) * toMillis(state.config.epochTime);
      return { epoch: at, at: addTime(state.runStateStartUnixTimestamp, fromMillis(waitMs)) };
    }
    return null;
  }

  /**
   * Says once, loudly, that WaitingForMembers has joiners enough but back-offs or bars hold
   * them, and when waiting will lift them: a run must never wait on a bar in silence.
   */
  #sayIfHeldByBars(now: number): void {
    const { state } = this;
    if (state.runState !== "WaitingForMembers") return;
    const joined = this.#pending.length;
    const initMinClients = state.config.initMinClients;
    const eligible = this.#eligible(barEpoch(state, now)).length;
    if (joined < initMinClients || eligible >= initMinClients) return;
    const key = `${state.progress.epoch}/${barEpoch(state, now)}/${joined}/${eligible}`;
    if (key === this.#heldByBarsSaid) return;
    this.#heldByBarsSaid = key;
    // Every bar and back-off lifts in time, and enough joined: there is a lift.
    const lift = this.#enoughEligibleAt()!;
    const liftsInSeconds = fromMillis(toMillis(lift.at) - toMillis(now));
    this.#events.push({ kind: "HeldByBars", joined, eligible, initMinClients, liftsInSeconds });
  }

  /**
   * The `RoundEnd` of the round a tick at `now` ends (the witness timer fired), or null.
   * Taken before the machine moves on: the next round overwrites a slot of the ring buffer and
   * the step advances.
   */
  #roundEnding(now: number): Extract<HostEvent, { kind: "RoundEnd" }> | null {
    const { state } = this;
    if (state.runState !== "RoundWitness") return null;
    const round = currentRound(state);
    if (!checkTimeout(state, now, roundWitnessWindow(state, round))) return null;
    const count = untrainedBatchCount(state, round);
    const trainEnd = this.#trainEnd;
    return {
      kind: "RoundEnd",
      height: round.height,
      step: state.progress.step,
      witnesses: round.witnesses.length,
      quorum: roundWitnessQuorum(state.config, round),
      trainTimedOut: trainEnd !== null && trainEnd.height === round.height && trainEnd.timer,
      batches: count.batches,
      untrainedBatches: count.untrained,
    };
  }

  /**
   * The pending clients an epoch may take when bars are measured against `epoch` (barEpoch):
   * those whose back-off has ended and that no ejection bars. A backed-off or barred key stays
   * pending (its join was accepted) and becomes eligible by itself.
   */
  #eligible(epoch: number): NodeIdentity[] {
    if (this.#backoff.size === 0 && this.state.ejections.length === 0) return this.#pending;
    return this.#pending.filter((p) =>
      this.#backoff.holds(toHex(p.signer), epoch) === null &&
      barredUntil(this.state, p.signer, epoch) === null
    );
  }

  /**
   * A round about to end without a witness quorum, though some witnesses reported: the
   * elected witnesses that stayed silent are withdrawn and backed off. The epoch ends
   * anyway (the machine's quorum rule); this keeps the same keys out of the next epochs,
   * where they would end every epoch the same way. A round nobody witnessed is left to the
   * machine, which withdraws everyone (nobody proved the others wrong).
   */
  #withdrawSilentWitnesses(now: number): void {
    const { state } = this;
    if (state.runState !== "RoundWitness") return;
    const round = currentRound(state);
    if (!checkTimeout(state, now, roundWitnessWindow(state, round))) return;
    const reported = new Set(round.witnesses.map((w) => w.proof.index));
    if (reported.size === 0 || reported.size >= roundWitnessQuorum(state.config, round)) return;
    const roundClientList = roundClients(state, round.height);
    const clients = state.epochState.clients;
    for (const index of roundSelection(state.config, round).witnessIndices()) {
      if (reported.has(index)) continue;
      const signer = roundClientList[index]?.id.signer;
      const at = signer === undefined
        ? -1
        : clients.findIndex((c) => c.state === "Healthy" && equalBytes(c.id.signer, signer));
      if (at < 0) continue;
      this.#step(() => withdraw(state, at));
      this.#backOff(toHex(signer!), "SilentWitness");
    }
  }

  #backOff(name: string, cause: BackoffCause): void {
    const backoff = this.#backoff.record(name, this.state.progress.epoch, cause);
    if (backoff !== null) {
      this.#events.push({
        kind: "BackedOff",
        client: name,
        cause,
        epoch: backoff.epoch,
        until: backoff.until,
      });
    }
  }

  /**
   * Handles one request from `client` (its 32-byte key), then ticks. Rejections by the
   * coordinator's rules come back as `Error`; the state is then unchanged.
   */
  handle(client: Uint8Array, msg: ClientMessage, now: number, seed: bigint): HostReply {
    const id: NodeIdentity = { signer: client, p2pIdentity: client };
    const name = toHex(client);
    // A notice changes no state: no tick, so a flood of them costs a lookup each.
    if (msg.kind === "Telemetry") return this.#noteTelemetry(name, msg.telemetry);
    let reply: HostReply;
    try {
      reply = this.#dispatch(id, name, msg, now, seed);
    } catch (e) {
      if (!(e instanceof CoordinatorError)) throw e;
      const message = e.message.startsWith(`${e.code}: `)
        ? e.message.slice(e.code.length + 2)
        : e.message;
      const late = msg.kind === "Witness" && e.code === "InvalidCommitteeProof" &&
        lateWitnessHeight(this.state, msg.witness.proof) !== null;
      this.#events.push({
        kind: "Rejected",
        client: name,
        request: msg.kind,
        code: e.code,
        message,
        ...(late ? { late: true as const } : {}),
      });
      reply = { kind: "Error", code: e.code, message };
    }
    this.tick(now, seed);
    return reply;
  }

  #dispatch(
    id: NodeIdentity,
    name: string,
    msg: ClientMessage,
    now: number,
    seed: bigint,
  ): HostReply {
    switch (msg.kind) {
      case "Join":
        return this.#join(id, name, msg.runId);
      case "WarmupWitness": {
        this.#step(() => warmupWitness(this.state, id, msg.witness, now, seed, msg.paramsDigest));
        this.#events.push({
          kind: "WarmupWitness",
          client: name,
          index: msg.witness.proof.index,
          digest: digestHex(msg.paramsDigest),
        });
        return { kind: "Ack" };
      }
      case "Witness": {
        const height = currentRound(this.state).height;
        this.#step(() => machineWitness(this.state, id, msg.witness, now, msg.paramsDigest));
        this.#events.push({
          kind: "Witness",
          client: name,
          index: msg.witness.proof.index,
          height,
          metadata: msg.metadata,
          digest: digestHex(msg.paramsDigest),
        });
        return { kind: "Ack" };
      }
      case "CooldownWitness": {
        this.#step(() => cooldownWitness(this.state, id, msg.proof, msg.paramsDigest, now));
        this.#events.push({
          kind: "CooldownWitness",
          client: name,
          index: msg.proof.index,
          digest: digestHex(msg.paramsDigest),
        });
        return { kind: "Ack" };
      }
      case "Withdraw":
        return this.#withdraw(id, name);
      case "Verification": {
        const { report } = msg;
        const trainer = this.#epochClientKey(report.trainer);
        this.#step(() => verificationReport(this.state, id, report));
        this.#events.push({
          kind: "VerificationReport",
          client: name,
          height: report.height,
          trainer,
          verdict: report.verdict,
          evidence: report.evidence,
          detail: report.detail,
        });
        return { kind: "Ack" };
      }
      case "Telemetry":
        return this.#noteTelemetry(name, msg.telemetry);
      case "HealthCheck":
        return this.#healthCheck(id, name, msg.checks);
      case "Checkpoint": {
        const index = this.state.epochState.clients.findIndex((c) =>
          equalBytes(c.id.signer, id.signer)
        );
        if (index < 0) {
          throw new CoordinatorError(
            "InvalidCheckpoint",
            "the sender is not a client of this epoch",
          );
        }
        this.#step(() => machineCheckpoint(this.state, id, index, msg.repo, now));
        this.#events.push({ kind: "Checkpoint", client: name, repo: msg.repo });
        return { kind: "Ack" };
      }
      default: {
        const never: never = msg;
        throw new TypeError(`Unknown client message ${JSON.stringify(never)}`);
      }
    }
  }

  /**
   * Keeps a member's telemetry notice if it is for a step the run has reached and the member
   * had not reported yet: at most one notice per member per step reaches the events (the
   * dashboard), whatever the sender floods. Never touches the run's state.
   */
  #noteTelemetry(name: string, telemetry: ClientTelemetry): HostReply {
    const { step } = telemetry;
    let reason: string | null = null;
    if (!this.isMemberKey(name)) {
      reason = "the sender is not a member of the run";
    } else if (step > this.state.progress.step) {
      reason = `it reports step ${step}, the run is at step ${this.state.progress.step}`;
    }
    if (reason !== null) {
      this.#events.push({ kind: "TelemetryDropped", client: name, step, reason });
      return { kind: "Noted" };
    }
    const previous = this.#telemetry.get(name);
    if (previous !== undefined && step <= previous.step) {
      this.#staleTelemetry++;
      return { kind: "Noted" };
    }
    this.#telemetry.set(name, telemetry);
    this.#events.push({ kind: "Telemetry", client: name, telemetry });
    return { kind: "Noted" };
  }

  #join(id: NodeIdentity, name: string, runId: string): HostReply {
    if (isSmallOrderEncoding(id.signer)) {
      // The TCP handshake already refuses these; no backend may let a forgeable key in.
      const reason = "public key is a small-order point";
      this.#events.push({ kind: "JoinRefused", client: name, reason });
      return { kind: "Refused", reason };
    }
    if (runId !== this.state.runId) {
      // The peer's run id is quoted escaped: it reaches the operator's terminal.
      const reason = `run id ${quoteForTerminal(runId)} does not match this coordinator's run ` +
        quoteForTerminal(this.state.runId);
      this.#events.push({ kind: "JoinRefused", client: name, reason });
      return { kind: "Refused", reason };
    }
    if (!this.isAuthorized(id.signer)) {
      return this.#refuseJoin(name, "this key is not in the run's authorized keys");
    }
    if (this.#pendingNames.has(name)) return { kind: "Ack" };
    if (this.#pending.length >= this.#maxPending) {
      const reason = `the pending list is full (${this.#maxPending} clients)`;
      this.#events.push({ kind: "JoinRefused", client: name, reason });
      return { kind: "Refused", reason };
    }
    this.#pending.push({ signer: id.signer.slice(), p2pIdentity: id.p2pIdentity.slice() });
    this.#pendingNames.add(name);
    this.#events.push({ kind: "Joined", client: name, pending: this.#pending.length });
    // A backed-off key waits in the pending list, like any client, until it may take part: an
    // honest client dropped once (slow, or resyncing its model) rejoins by itself.
    const backoff = this.#backoff.check(name, this.state.progress.epoch);
    if (backoff !== null) {
      this.#events.push({ kind: "JoinDeferred", client: name, reason: backoffReason(backoff) });
    }
    const barred = barredUntil(this.state, id.signer);
    if (barred !== null) {
      const record = this.state.ejections.findLast((r) => equalBytes(r.signer, id.signer))!;
      this.#events.push({
        kind: "JoinDeferred",
        client: name,
        reason: `this key was ejected by verification in epoch ${record.epoch} ` +
          `(${record.cause}); it may join again from epoch ${barred}`,
      });
    }
    return { kind: "Ack" };
  }

  /** The hex signer of the epoch's client `epochIndex`, or `#index` when there is none. */
  #epochClientKey(epochIndex: number): string {
    const es = this.state.epochState;
    const c = es.clients.find((c) => c.epochIndex === epochIndex) ??
      es.exitedClients.find((c) => c.epochIndex === epochIndex);
    return c === undefined ? `#${epochIndex}` : toHex(c.id.signer);
  }

  #refuseJoin(name: string, reason: string): HostReply {
    this.#events.push({ kind: "JoinRefused", client: name, reason });
    return { kind: "Refused", reason };
  }

  /**
   * A client leaves the epoch by its own request (a client whose parameters diverged steps
   * aside rather than hold rounds up until a health check drops it). Withdrawn, as on a
   * disconnect: not backed off, and it may Join again for a later epoch.
   */
  #withdraw(id: NodeIdentity, name: string): HostReply {
    const index = this.state.epochState.clients.findIndex((c) =>
      c.state === "Healthy" && equalBytes(c.id.signer, id.signer)
    );
    if (index < 0) {
      throw new CoordinatorError(
        "InvalidWithdraw",
        "the sender is not a Healthy client of this epoch",
      );
    }
    this.#step(() => withdraw(this.state, index));
    this.#kicked.add(name); // already out of the pending list: a new Join must stay
    this.#unpend(name);
    this.#events.push({ kind: "Left", client: name, withdrawn: true });
    return { kind: "Ack" };
  }

  /** Removes `name` from the pending list; whether it was there. */
  #unpend(name: string): boolean {
    if (!this.#pendingNames.delete(name)) return false;
    this.#pending = this.#pending.filter((p) => toHex(p.signer) !== name);
    return true;
  }

  #healthCheck(id: NodeIdentity, name: string, checks: HealthCheck[]): HostReply {
    // A client named twice would have its proof verified twice: refuse before any is.
    const named = new Set<string>();
    for (let i = 0; i < checks.length; i++) {
      const target = toHex(checks[i].id.signer);
      if (named.has(target)) {
        throw new CoordinatorError("InvalidHealthCheck", `entry ${i} names a client listed before`);
      }
      named.add(target);
    }
    let dropped = 0;
    this.#step(() => {
      dropped = healthCheck(this.state, id, checks);
      return dropped > 0 ? { kind: "Changed" } : { kind: "Unchanged" };
    });
    this.#events.push({ kind: "HealthCheck", client: name, dropped });
    return { kind: "Ack" };
  }

  /**
   * `client`'s connection closed: it leaves the pending list and, with
   * withdraw-on-disconnect, is withdrawn from the epoch if it is a Healthy client of it.
   */
  disconnect(client: Uint8Array, now: number, seed: bigint): void {
    const name = toHex(client);
    this.#unpend(name);
    this.#telemetry.delete(name);
    let withdrawn = false;
    if (this.#withdrawOnDisconnect) {
      const index = this.state.epochState.clients.findIndex((c) =>
        c.state === "Healthy" && equalBytes(c.id.signer, client)
      );
      if (index >= 0) {
        this.#step(() => withdraw(this.state, index));
        this.#kicked.add(name);
        withdrawn = true;
      }
    }
    this.#events.push({ kind: "Left", client: name, withdrawn });
    this.tick(now, seed);
  }

  /**
   * Whether `client` may fetch `batch` from the run's data server now: only a Healthy
   * client of the epoch, only the batch assigned to it in the current round or the one
   * before (a slow client may still be fetching that one), or the batch of a result it holds
   * a verifier seat for (its replay trains on the trainer's assignment, rounds later and in
   * Cooldown too).
   */
  authorizeData(client: Uint8Array, batch: BatchId): DataVerdict {
    const { state } = this;
    const me = state.epochState.clients.find((c) =>
      c.state === "Healthy" && equalBytes(c.id.signer, client)
    );
    if (me === undefined) return "NotInThisRound";
    if (this.#seatedFor(me.epochIndex, batch)) return "Allowed";
    if (state.runState !== "RoundTrain" && state.runState !== "RoundWitness") {
      return "NotInThisRound";
    }
    const rounds = [currentRound(state), previousRound(state)];
    for (const round of rounds) {
      if (round === null) continue;
      const index = roundClients(state, round.height).findIndex((c) =>
        equalBytes(c.id.signer, client)
      );
      if (index < 0) continue;
      const mine = roundAssignments(state, round).find((a) => a.clientIndex === index);
      if (mine !== undefined && sameBatch(mine.batch, batch)) return "Allowed";
    }
    return "WrongDataIdForStep";
  }

  /** Whether client `epochIndex` holds a seat of an open task whose trainer was assigned `batch`. */
  #seatedFor(epochIndex: number, batch: BatchId): boolean {
    const { state } = this;
    return state.epochState.verificationTasks.some((task) => {
      if (!task.seats.some((s) => s.verifier === epochIndex)) return false;
      const assigned = assignedBatch(state, task.height, task.trainer);
      return assigned !== null && sameBatch(assigned, batch);
    });
  }

  /**
   * Runs one machine call and records what it did. Throws (unchanged state) on rejection.
   * `roundEnd` is given by a tick: the round it ends, should the call end it.
   */
  #step(
    call: () => Outcome,
    tick: { roundEnd: Extract<HostEvent, { kind: "RoundEnd" }> | null } | null = null,
  ): void {
    const from = this.state.runState;
    const recorded = this.state.paramsDigests.at(-1)?.step ?? 0;
    const tasksBefore = [...this.state.epochState.verificationTasks];
    const startStep = this.state.epochState.startStep;
    const outcome = call();
    if (outcome.kind === "Unchanged") return;
    this.#version++;
    this.#noteVerification(tasksBefore, startStep);
    const newest = this.state.paramsDigests.at(-1);
    if (newest !== undefined && newest.step !== recorded) {
      this.#events.push({
        kind: "DigestRecorded",
        step: newest.step,
        digest: toHex(newest.digest),
      });
    }
    const { progress, runState } = this.state;
    if (from === "RoundTrain" && runState === "RoundWitness") {
      this.#trainEnd = { height: currentRound(this.state).height, timer: tick !== null };
    }
    if (from === "RoundWitness" && runState !== "RoundWitness" && tick?.roundEnd) {
      this.#events.push(tick.roundEnd);
    }
    if (runState !== from) {
      this.#events.push({
        kind: "StateChanged",
        from,
        to: runState,
        epoch: progress.epoch,
        step: progress.step,
      });
    }
    if (outcome.kind === "WindDown") this.#windDown = outcome.cause;
    if (outcome.kind === "EpochEnd") {
      this.#events.push({
        kind: "EpochEnd",
        epoch: progress.epoch,
        step: progress.step,
        success: outcome.success,
        cause: outcome.success ? this.#windDown ?? "unknown" : "warmup",
      });
      this.#windDown = null;
    }
    if (runState === "RoundTrain" && this.#configuredWarmup !== null) {
      this.state.config.warmupTime = this.#configuredWarmup;
      this.#configuredWarmup = null;
    }
    this.#kickUnhealthy();
  }

  /**
   * Reports what verification did in the last call: stages opened (a sample, or a tie-break),
   * tasks closed and how, clients ejected. Read off the state: the machine appends records and
   * replaces tasks, so anything not seen before is new.
   */
  #noteVerification(before: readonly VerificationTask[], startStep: number): void {
    const es = this.state.epochState;
    const newRecords = this.state.ejections.filter((r) => !this.#ejectionsSeen.has(r));
    for (const t of es.verificationTasks) {
      if (this.#tasksSeen.get(t) === t.stage) continue;
      this.#tasksSeen.set(t, t.stage);
      this.#events.push({
        kind: "VerificationOpened",
        height: t.height,
        step: es.startStep + t.height,
        trainer: this.#epochClientKey(t.trainer),
        stage: t.stage,
        seats: t.seats.filter((s) => s.stage === t.stage).map((s) =>
          this.#epochClientKey(s.verifier)
        ),
      });
    }
    if (es.startStep === startStep) {
      for (const t of before) {
        if (es.verificationTasks.includes(t)) continue;
        const seats = t.seats.filter((s) => s.stage === t.stage);
        this.#events.push({
          kind: "VerificationClosed",
          height: t.height,
          trainer: this.#epochClientKey(t.trainer),
          outcome: t.decided === "Fail" ? "failed" : t.decided === "Pass" ? "passed" : "undecided",
          passes: seats.filter((s) => s.verdict === "Pass").length,
          fails: seats.filter((s) => s.verdict === "Fail").length,
        });
      }
    }
    for (const r of newRecords) {
      this.#ejectionsSeen.add(r);
      this.#events.push({
        kind: "Ejected",
        client: toHex(r.signer),
        cause: r.cause,
        evidence: r.evidence,
        epoch: r.epoch,
        step: r.step,
        barredUntil: r.barredUntil,
      });
    }
  }

  /** Drops clients that left the epoch unhealthy from the pending list (once per epoch). */
  #kickUnhealthy(): void {
    const es = this.state.epochState;
    if (es !== this.#epochState) {
      this.#epochState = es;
      this.#kicked.clear();
      this.#backoff.prune(this.state.progress.epoch);
      for (const name of this.#telemetry.keys()) {
        if (!this.isMemberKey(name)) this.#telemetry.delete(name);
      }
    }
    for (const c of [...es.clients, ...es.exitedClients]) {
      if (c.state === "Healthy") continue;
      const name = toHex(c.id.signer);
      if (this.#kicked.has(name)) continue;
      this.#kicked.add(name);
      if (this.#unpend(name)) this.#events.push({ kind: "Kicked", client: name, state: c.state });
      if (c.state === "Dropped") this.#backOff(name, "HealthCheck");
    }
  }
}

function sameBatch(a: BatchId, b: BatchId): boolean {
  return a.start === b.start && a.end === b.end;
}
