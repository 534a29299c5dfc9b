/**
 * A protocol simulation: a host (like the TCP server) and many simulated clients drive
 * the pure coordinator with a fake clock, one second per step, with seeded randomness.
 * After every call it checks the state invariants, legal edges and data indices
 * (coordinator_invariants.ts).
 *
 * Client behaviour follows Psyche's client (shared/client/src/state/), reduced to what the
 * coordinator sees: clients load the model during Warmup and send a warmup witness; trainers
 * "deliver" their payload unless stalled; elected witnesses report who delivered a few seconds into
 * the round; a previous-round witness reports unhealthy trainers; the host withdraws clients that
 * disconnect and keeps pending clients in join order.
 *
 * @module
 */

import assert from "node:assert/strict";
import { identity, warmupReport, witnessReport } from "./coordinator_fixtures.ts";
import { checkStateInvariants, TransitionRecorder } from "./coordinator_invariants.ts";
import {
  applyPlan,
  CoordinatorError,
  type CoordinatorState,
  currentRound,
  healthCheck,
  isHalted,
  isTrainingRound,
  type NodeIdentity,
  type Outcome,
  pause,
  previousRound,
  resume,
  roundByHeight,
  roundClients,
  roundSelection,
  tick,
  unhealthyTrainers,
  warmupWitness,
  withdraw,
  type Witness,
  witness,
} from "../../coordinator/core/mod.ts";
import { toHex } from "../../common/mod.ts";

/** A small seeded PRNG (mulberry32): test randomness only, never inside the machine. */
export class Prng {
  #s: number;
  constructor(seed: number) {
    this.#s = seed >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    let t = (this.#s = (this.#s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  /** One of `xs` (not empty), uniformly. */
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(0, xs.length - 1)];
  }
  /** A u64 seed. */
  u64(): bigint {
    return (BigInt(this.int(0, 0xffff_ffff)) << 32n) | BigInt(this.int(0, 0xffff_ffff));
  }
}

/** How one simulated client behaves. Times are simulation seconds. */
export interface SimClient {
  /** Connects (joins the pending list) at this time. */
  joinAt: number;
  /** Disconnects at this time (the host withdraws it). */
  leaveAt?: number;
  /** Reconnects at this time (after leaving or being dropped), joining the pending list again. */
  rejoinAt?: number;
  /** From this time on it stays connected but neither trains nor witnesses. */
  stallAt?: number;
  /** Never sends witness reports (still trains). */
  silentWitness?: boolean;
  /** Seconds to load the model in Warmup (default 2..6, random). */
  loadTime?: number;
}

/** An operator action at a time. */
export interface SimOperatorAction {
  at: number;
  action: "pause" | "resume";
}

/** Options of {@linkcode Simulation}. */
export interface SimulationOptions {
  state: CoordinatorState;
  clients: SimClient[];
  operator?: SimOperatorAction[];
  seed: number;
}

interface ClientRuntime {
  spec: SimClient;
  id: NodeIdentity;
  key: string;
  loadTime: number;
  /** Kicked by the host after it was dropped or withdrawn; must not rejoin. */
  kicked: boolean;
}

/** A running simulation. `step()` advances one second; `run(seconds)` many. */
export class Simulation {
  readonly state: CoordinatorState;
  readonly recorder: TransitionRecorder;
  readonly outcomes: Outcome[] = [];
  /** Epoch ends seen: `true` for EpochEnd(true). */
  readonly epochEnds: boolean[] = [];
  /** Every run-state change with the second it happened: `[from, to, now]`. */
  readonly timedEdges: Array<[string, string, number]> = [];
  /** For each Cooldown entered: whether the epoch timer's wind-down ended the epoch. */
  readonly cooldownByWindDown: boolean[] = [];
  /** Clients dropped by health checks (keys). */
  readonly dropped = new Set<string>();
  /** Client counts of each epoch at its start (Warmup). */
  readonly epochSizes: number[] = [];
  /** Client keys of each epoch at its start, in list order. */
  readonly epochMembers: string[][] = [];
  now: number;
  readonly #clients: ClientRuntime[];
  readonly #byKey = new Map<string, ClientRuntime>();
  readonly #operator: SimOperatorAction[];
  readonly #prng: Prng;
  #roundWitnessDelay = new Map<string, number>();
  #roundReport = new Map<string, Witness>();
  #healthSent = new Set<string>();

  constructor(opts: SimulationOptions) {
    this.state = opts.state;
    this.now = opts.state.runStateStartUnixTimestamp;
    this.#prng = new Prng(opts.seed);
    this.#clients = opts.clients.map((spec, i) => {
      const id = identity(i);
      return {
        spec,
        id,
        key: toHex(id.signer),
        loadTime: spec.loadTime ?? this.#prng.int(2, 6),
        kicked: false,
      };
    });
    for (const c of this.#clients) this.#byKey.set(c.key, c);
    this.#operator = opts.operator ?? [];
    this.recorder = new TransitionRecorder(this.state);
    checkStateInvariants(this.state);
  }

  /** The identity key of client `i` of the simulation. */
  keyOf(i: number): string {
    return this.#clients[i].key;
  }

  #connected(c: ClientRuntime): boolean {
    const { joinAt, leaveAt, rejoinAt } = c.spec;
    if (rejoinAt !== undefined && this.now >= rejoinAt) return true;
    return joinAt <= this.now && (leaveAt === undefined || this.now < leaveAt);
  }

  #rejoined(c: ClientRuntime): boolean {
    return c.spec.rejoinAt !== undefined && this.now >= c.spec.rejoinAt;
  }

  #stalled(c: ClientRuntime): boolean {
    const { stallAt, rejoinAt } = c.spec;
    if (rejoinAt !== undefined && this.now >= rejoinAt) return false;
    return stallAt !== undefined && this.now >= stallAt;
  }

  #runtimeOf(key: string): ClientRuntime | undefined {
    return this.#byKey.get(key);
  }

  /** Runs `fn` on the machine, expecting success, then checks every invariant. */
  #call(fn: () => Outcome | number): void {
    const before = this.state.runState;
    const result = fn();
    if (typeof result === "object") {
      this.outcomes.push(result);
      if (result.kind === "EpochEnd") this.epochEnds.push(result.success);
    }
    checkStateInvariants(this.state);
    this.recorder.observe(this.state);
    const es = this.state.epochState;
    if (before !== this.state.runState) {
      this.timedEdges.push([before, this.state.runState, this.now]);
    }
    if (before !== "Cooldown" && this.state.runState === "Cooldown") {
      const windDown = es.lastStep !== 0 && this.state.progress.step === es.lastStep;
      this.cooldownByWindDown.push(windDown);
      // The last two rounds: after a wind-down nothing is left to apply; after an early end,
      // round H - 1 is applied at Cooldown with round H's witnesses.
      const plan = applyPlan(this.state);
      const last = currentRound(this.state);
      if (windDown || last.height === 0) {
        assert.equal(plan, null, "nothing to apply at Cooldown");
      } else if (isTrainingRound(this.state, roundByHeight(this.state, last.height - 1)!)) {
        assert.equal(plan?.resultsRound.height, last.height - 1, "round H - 1 applied at Cooldown");
        assert.equal(plan?.witnessRound, last);
      }
    }
    if (before !== "Warmup" && this.state.runState === "Warmup") {
      this.epochSizes.push(this.state.epochState.clients.length);
      this.epochMembers.push(this.state.epochState.clients.map((c) => toHex(c.id.signer)));
      this.#roundWitnessDelay.clear();
    }
  }

  /** Advances one second: operator, host, clients, tick. */
  step(): void {
    this.now += 1;
    for (const op of this.#operator) {
      if (op.at !== this.now) continue;
      this.#call(() =>
        op.action === "pause" ? pause(this.state, this.now) : resume(this.state, this.now)
      );
    }
    this.#hostWithdrawsDisconnected();
    this.#clientsAct();
    // Like the server: a halted run is not ticked.
    if (!isHalted(this.state)) {
      this.#call(() => tick(this.state, this.#pending(), this.now, this.#prng.u64()));
    }
    this.#hostKicksExited();
  }

  /** Advances `seconds` seconds, or until `until` holds. Returns whether `until` held. */
  run(seconds: number, until?: (sim: Simulation) => boolean): boolean {
    for (let i = 0; i < seconds; i++) {
      if (until?.(this)) return true;
      this.step();
    }
    return until?.(this) ?? false;
  }

  #pending(): NodeIdentity[] {
    return this.#clients
      .filter((c) => this.#connected(c) && (!c.kicked || this.#rejoined(c)))
      .sort((a, b) => a.spec.joinAt - b.spec.joinAt)
      .map((c) => c.id);
  }

  #hostWithdrawsDisconnected(): void {
    const clients = this.state.epochState.clients;
    for (let i = 0; i < clients.length; i++) {
      const rt = this.#runtimeOf(toHex(clients[i].id.signer));
      if (rt !== undefined && !this.#connected(rt) && clients[i].state === "Healthy") {
        this.#call(() => withdraw(this.state, i));
      }
    }
  }

  /** Like Psyche's server: exited non-Healthy clients leave the pending set. */
  #hostKicksExited(): void {
    for (const c of this.state.epochState.exitedClients) {
      const rt = this.#runtimeOf(toHex(c.id.signer));
      if (rt !== undefined) rt.kicked = true;
    }
  }

  #clientsAct(): void {
    const s = this.state;
    if (s.runState === "Warmup") this.#warmupReports();
    if (s.runState === "RoundTrain" || s.runState === "RoundWitness") {
      this.#healthChecks();
      this.#witnessReports();
    }
  }

  #warmupReports(): void {
    const s = this.state;
    const sent = new Set(currentRound(s).witnesses.map((w) => w.proof.index));
    for (let i = 0; i < s.epochState.clients.length; i++) {
      if (s.runState !== "Warmup") return;
      const client = s.epochState.clients[i];
      const rt = this.#runtimeOf(toHex(client.id.signer));
      if (rt === undefined || sent.has(i) || client.state !== "Healthy") continue;
      if (!this.#connected(rt) || this.#stalled(rt)) continue;
      if (this.now < s.runStateStartUnixTimestamp + rt.loadTime) continue;
      this.#call(() => warmupWitness(s, client.id, warmupReport(s, i), this.now, this.#prng.u64()));
    }
  }

  /** Trainers of the live round that delivered their payload (connected, not stalled). */
  #delivered(): NodeIdentity[] {
    return this.state.epochState.clients
      .filter((c) => {
        const rt = this.#runtimeOf(toHex(c.id.signer));
        return rt !== undefined && this.#connected(rt) && !this.#stalled(rt);
      })
      .map((c) => c.id);
  }

  #witnessReports(): void {
    const s = this.state;
    const round = currentRound(s);
    const roundKey = `${s.progress.epoch}:${round.height}`;
    const selection = roundSelection(s.config, round);
    const sent = new Set(round.witnesses.map((w) => w.proof.index));
    for (const i of selection.witnessIndices()) {
      if (s.runState !== "RoundTrain" && s.runState !== "RoundWitness") return;
      const client = s.epochState.clients[i];
      const rt = this.#runtimeOf(toHex(client.id.signer));
      if (rt === undefined || sent.has(i) || rt.spec.silentWitness) continue;
      if (!this.#connected(rt) || this.#stalled(rt)) continue;
      const delayKey = `${roundKey}:${i}`;
      let delay = this.#roundWitnessDelay.get(delayKey);
      if (delay === undefined) {
        delay = this.#prng.int(1, 3);
        this.#roundWitnessDelay.set(delayKey, delay);
      }
      if (s.runState === "RoundTrain" && this.now < s.runStateStartUnixTimestamp + delay) continue;
      // Every honest witness saw the same deliveries: build the blooms once per round.
      let base = this.#roundReport.get(roundKey);
      if (base === undefined) {
        base = witnessReport(s, i, this.#delivered());
        this.#roundReport.clear();
        this.#roundReport.set(roundKey, base);
      }
      const report = { ...base, proof: selection.witnessProof(i) };
      this.#call(() => witness(s, client.id, report, this.now));
    }
  }

  #healthChecks(): void {
    const s = this.state;
    const round = currentRound(s);
    const prev = previousRound(s);
    const roundKey = `${s.progress.epoch}:${round.height}`;
    if (round.height < 2 || prev === null || this.#healthSent.has(roundKey)) return;
    // One honest witness of the previous round reports, as Psyche's clients do
    // (`start_sending_health_checks`).
    const prevClients = roundClients(s, prev.height);
    const prevSelection = roundSelection(s.config, prev);
    const reporter = prevSelection.witnessIndices()
      .map((i) => prevClients[i])
      .find((c) => {
        const rt = this.#runtimeOf(toHex(c.id.signer));
        return rt !== undefined && this.#connected(rt) && !this.#stalled(rt) &&
          s.epochState.clients.some((x) => x.id.signer === c.id.signer);
      });
    if (reporter === undefined) return;
    this.#healthSent.add(roundKey);
    const checks = unhealthyTrainers(s);
    if (checks.length === 0) return;
    for (const c of checks) this.dropped.add(toHex(c.id.signer));
    this.#call(() => healthCheck(s, reporter.id, checks));
  }
}

/** True if `fn` throws a CoordinatorError (and nothing else). */
export function rejects(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch (e) {
    if (e instanceof CoordinatorError) return true;
    throw e;
  }
}
