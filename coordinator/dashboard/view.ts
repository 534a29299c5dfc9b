/**
 * The dashboard's view model and the reducer that builds it: the coordinator's events (with the
 * time the edge saw them) and snapshots of its state in, a {@linkcode DashboardView} out. The
 * page, the live stream and `/metrics` all render this one value.
 *
 * Pure: no clock (times come with the events), no I/O. Every list is bounded, so a run of any
 * length keeps the view small enough to send whole on every change.
 *
 * @module
 */
import {
  type ClientTelemetry,
  type ServerEvent,
  STEP_PHASES,
  type StepPhase,
} from "../server/mod.ts";
import { RUN_STATES, type RunState } from "../core/mod.ts";
import type { ConfigView, FundsView, RunSnapshot } from "./snapshot.ts";

/** Loss points kept per client (and for the mean); older ones are dropped first. */
export const MAX_LOSS_POINTS = 2000;
/** Steps whose mean time breakdown is kept; older ones are dropped first. */
export const MAX_BREAKDOWN_POINTS = 500;
/** Run phases kept on the timeline. */
export const MAX_TIMELINE = 64;
/** Recorded digests kept. */
export const MAX_DIGESTS = 16;
/** Steps whose reported digests are kept until the coordinator records that step's digest. */
export const MAX_OPEN_DIGEST_STEPS = 8;

/**
 * A client's standing: its health in the epoch, `Pending` (waiting to join), `Left` (its
 * connection closed or it withdrew) or `Known` (connected, neither).
 */
export type ClientStatus =
  | "Healthy"
  | "Dropped"
  | "Withdrawn"
  | "Ejected"
  | "Pending"
  | "Left"
  | "Known";

/** One client as the dashboard shows it. */
export interface ClientView {
  /** Hex public key. */
  readonly key: string;
  readonly status: ClientStatus;
  /** The last step it witnessed (its witness report's step); null before its first. */
  readonly lastStep: number | null;
  /** Loss of its last witness report. */
  readonly loss: number | null;
  /** Tokens/s of its last witness report or telemetry notice, whichever came last. */
  readonly tokensPerSec: number | null;
  /** Bytes it sent to and received from peers (totals of its last telemetry notice). */
  readonly bytesSent: number | null;
  readonly bytesReceived: number | null;
  /** The step of its last telemetry notice and that step's time breakdown (ms). */
  readonly telemetryStep: number | null;
  readonly breakdownMs: Readonly<Record<StepPhase, number>> | null;
  readonly witnesses: number;
  /** The evals of its last witness report that carried any (`hellaswag_acc_norm` → value). */
  readonly evals: Readonly<Record<string, number>> | null;
  /** Witness reports whose parameter digest was not the one a quorum recorded. */
  readonly divergences: number;
  /** Points it earned in the run (decimal u64), from the latest snapshot that has them. */
  readonly earned: string | null;
  /**
   * Points it was slashed in the run (decimal u64), from the latest snapshot that has them:
   * informational, the treasurer pays earned points (docs/solana-program.md).
   */
  readonly slashed: string | null;
  /** When the dashboard last heard of it (ms since the epoch). */
  readonly lastSeenMs: number;
}

/** A loss at a step. */
export interface LossPoint {
  readonly step: number;
  readonly loss: number;
}

/** The mean of the losses reported at a step. */
export interface MeanLossPoint extends LossPoint {
  readonly reports: number;
}

/** The mean time breakdown (ms) of the telemetry notices of a step. */
export type BreakdownPoint =
  & { readonly step: number; readonly reports: number }
  & Readonly<Record<StepPhase, number>>;

/** A stretch of time in one run state. */
export interface Phase {
  readonly state: RunState;
  readonly epoch: number;
  readonly step: number;
  readonly startMs: number;
  /** Null while the run is in it. */
  readonly endMs: number | null;
}

/** A parameter digest a quorum agreed on. */
export interface DigestView {
  readonly step: number;
  readonly digest: string;
  /** Witness reports of that step that carried it, and that carried another. */
  readonly agreeing: number;
  readonly differing: number;
}

/** Everything the dashboard shows. */
export interface DashboardView {
  readonly runId: string | null;
  readonly runState: RunState | null;
  readonly epoch: number;
  readonly step: number;
  readonly roundHeight: number | null;
  readonly config: ConfigView | null;
  /** The treasury's and pools' balances from the latest snapshot that had them (Solana). */
  readonly funds: FundsView | null;
  /** In the order the dashboard first heard of them. */
  readonly clients: readonly ClientView[];
  /** Each client's reported losses, by hex key, in report order. */
  readonly loss: Readonly<Record<string, readonly LossPoint[]>>;
  /** The mean loss of each step's reports, by step. */
  readonly meanLoss: readonly MeanLossPoint[];
  /** The mean time breakdown of each step's telemetry notices, by step. */
  readonly breakdown: readonly BreakdownPoint[];
  readonly timeline: readonly Phase[];
  /** Seconds spent in each run state (phases that ended) and how many such phases. */
  readonly phaseSeconds: Readonly<
    Record<RunState, { readonly sum: number; readonly count: number }>
  >;
  readonly digests: readonly DigestView[];
  /** Digests reported for steps not recorded yet: step -> key -> digest. */
  readonly openDigests: Readonly<Record<number, Readonly<Record<string, string>>>>;
  readonly totals: {
    readonly witnesses: number;
    readonly rounds: number;
    readonly epochs: number;
    /** Of those, epochs whose last round no witness reported (`cause` `no_witnesses`). */
    readonly unattestedEpochs: number;
    readonly divergences: number;
    readonly rejections: number;
    readonly joins: number;
    /** Verification tasks closed, and of those, ones whose trainer failed. */
    readonly verifications: number;
    readonly failedVerifications: number;
    /** Clients ejected by verification (trainers, lying or idle verifiers). */
    readonly ejections: number;
  };
  /** When the view last changed (ms since the epoch); 0 before anything happened. */
  readonly updatedMs: number;
}

/** The view before anything is known. */
export function emptyView(): DashboardView {
  const phaseSeconds = Object.fromEntries(
    RUN_STATES.map((s) => [s, { sum: 0, count: 0 }]),
  ) as DashboardView["phaseSeconds"];
  return {
    runId: null,
    runState: null,
    epoch: 0,
    step: 0,
    roundHeight: null,
    config: null,
    funds: null,
    clients: [],
    loss: {},
    meanLoss: [],
    breakdown: [],
    timeline: [],
    phaseSeconds,
    digests: [],
    openDigests: {},
    totals: {
      witnesses: 0,
      rounds: 0,
      epochs: 0,
      unattestedEpochs: 0,
      divergences: 0,
      rejections: 0,
      joins: 0,
      verifications: 0,
      failedVerifications: 0,
      ejections: 0,
    },
    updatedMs: 0,
  };
}

/** The last `max` items of `list`. */
function bounded<T>(list: readonly T[], max: number): T[] {
  return list.length > max ? list.slice(list.length - max) : [...list];
}

/** `view` with client `key` changed by `change` (added first, as `Known`, if new). */
function withClient(
  view: DashboardView,
  key: string,
  timeMs: number,
  change: (c: ClientView) => Partial<ClientView>,
): DashboardView {
  const at = view.clients.findIndex((c) => c.key === key);
  const old: ClientView = at >= 0 ? view.clients[at] : {
    key,
    status: "Known",
    lastStep: null,
    loss: null,
    tokensPerSec: null,
    bytesSent: null,
    bytesReceived: null,
    telemetryStep: null,
    breakdownMs: null,
    witnesses: 0,
    evals: null,
    divergences: 0,
    earned: null,
    slashed: null,
    lastSeenMs: timeMs,
  };
  const updated = { ...old, ...change(old), lastSeenMs: timeMs };
  const clients = at >= 0
    ? view.clients.map((c, i) => (i === at ? updated : c))
    : [...view.clients, updated];
  return { ...view, clients };
}

/**
 * The run entered `state` at `timeMs`: the phase it was in ends, a new one starts (unless it is
 * already in `state`: a Listening event after the first snapshot).
 */
function enterPhase(
  view: DashboardView,
  state: RunState,
  epoch: number,
  step: number,
  timeMs: number,
): DashboardView {
  const last = view.timeline.at(-1);
  if (last !== undefined && last.endMs === null && last.state === state) return view;
  let { phaseSeconds } = view;
  const timeline = [...view.timeline];
  if (last !== undefined && last.endMs === null) {
    timeline[timeline.length - 1] = { ...last, endMs: timeMs };
    const spent = phaseSeconds[last.state];
    phaseSeconds = {
      ...phaseSeconds,
      [last.state]: {
        sum: spent.sum + Math.max(0, timeMs - last.startMs) / 1000,
        count: spent.count + 1,
      },
    };
  }
  timeline.push({ state, epoch, step, startMs: timeMs, endMs: null });
  return { ...view, timeline: bounded(timeline, MAX_TIMELINE), phaseSeconds };
}

/** A witness reported `loss` at `step`: the client's curve and the step's mean. */
function withLoss(view: DashboardView, key: string, step: number, loss: number): DashboardView {
  if (!Number.isFinite(loss)) return view;
  const own = bounded([...(view.loss[key] ?? []), { step, loss }], MAX_LOSS_POINTS);
  const meanLoss = [...view.meanLoss];
  const at = meanLoss.findLastIndex((p) => p.step === step);
  if (at >= 0) {
    const p = meanLoss[at];
    const reports = p.reports + 1;
    meanLoss[at] = { step, loss: p.loss + (loss - p.loss) / reports, reports };
  } else {
    meanLoss.push({ step, loss, reports: 1 });
    meanLoss.sort((a, b) => a.step - b.step);
  }
  return {
    ...view,
    loss: { ...view.loss, [key]: own },
    meanLoss: bounded(meanLoss, MAX_LOSS_POINTS),
  };
}

/** A client's telemetry notice: its traffic and rate, and the step's mean breakdown. */
function withTelemetry(
  view: DashboardView,
  key: string,
  t: ClientTelemetry,
  timeMs: number,
): DashboardView {
  const next = withClient(view, key, timeMs, () => ({
    tokensPerSec: t.tokensPerSec,
    bytesSent: t.bytesSent,
    bytesReceived: t.bytesReceived,
    telemetryStep: t.step,
    breakdownMs: { ...t.breakdownMs },
  }));
  const breakdown = [...view.breakdown];
  const at = breakdown.findLastIndex((p) => p.step === t.step);
  if (at >= 0) {
    const p = breakdown[at];
    const reports = p.reports + 1;
    const mean = { ...p, reports };
    for (const phase of STEP_PHASES) {
      mean[phase] = p[phase] + (t.breakdownMs[phase] - p[phase]) / reports;
    }
    breakdown[at] = mean;
  } else {
    breakdown.push({ step: t.step, reports: 1, ...t.breakdownMs });
    breakdown.sort((a, b) => a.step - b.step);
  }
  return { ...next, breakdown: bounded(breakdown, MAX_BREAKDOWN_POINTS) };
}

/** A witness reported `digest` for the parameters of `step`: compared with the record. */
function withReportedDigest(
  view: DashboardView,
  key: string,
  step: number,
  digest: string,
  timeMs: number,
): DashboardView {
  const recorded = view.digests.findIndex((d) => d.step === step);
  if (recorded >= 0) {
    const d = view.digests[recorded];
    const agrees = d.digest === digest;
    const digests = view.digests.map((x, i) =>
      i === recorded
        ? {
          ...x,
          agreeing: x.agreeing + (agrees ? 1 : 0),
          differing: x.differing + (agrees ? 0 : 1),
        }
        : x
    );
    const next = { ...view, digests };
    return agrees ? next : diverged(next, key, timeMs);
  }
  const open = {
    ...view.openDigests,
    [step]: { ...(view.openDigests[step] ?? {}), [key]: digest },
  };
  const steps = Object.keys(open).map(Number).sort((a, b) => a - b);
  for (const old of steps.slice(0, Math.max(0, steps.length - MAX_OPEN_DIGEST_STEPS))) {
    delete open[old];
  }
  return { ...view, openDigests: open };
}

function diverged(view: DashboardView, key: string, timeMs: number): DashboardView {
  const next = withClient(view, key, timeMs, (c) => ({ divergences: c.divergences + 1 }));
  return { ...next, totals: { ...next.totals, divergences: next.totals.divergences + 1 } };
}

/** A quorum recorded `digest` for `step`: the reports waiting for it are settled. */
function withRecordedDigest(
  view: DashboardView,
  step: number,
  digest: string,
  timeMs: number,
): DashboardView {
  const reports = view.openDigests[step] ?? {};
  const openDigests = { ...view.openDigests };
  delete openDigests[step];
  let agreeing = 0;
  let next: DashboardView = { ...view, openDigests };
  for (const [key, reported] of Object.entries(reports)) {
    if (reported === digest) agreeing++;
    else next = diverged(next, key, timeMs);
  }
  const record = { step, digest, agreeing, differing: Object.keys(reports).length - agreeing };
  return {
    ...next,
    digests: bounded([...next.digests.filter((d) => d.step !== step), record], MAX_DIGESTS),
  };
}

/**
 * The view after `event`, which the edge saw at `timeMs` (ms since the epoch).
 *
 * @example
 * ```ts
 * import { emptyView, reduceEvent } from "./view.ts";
 * const view = reduceEvent(emptyView(), {
 *   kind: "StateChanged", from: "Warmup", to: "RoundTrain", epoch: 0, step: 1,
 * }, 1000);
 * if (view.runState !== "RoundTrain" || view.timeline.length !== 1) throw new Error("reducer");
 * ```
 */
export function reduceEvent(
  view: DashboardView,
  event: ServerEvent,
  timeMs: number,
): DashboardView {
  const next = applyEvent(view, event, timeMs);
  return next === view ? view : { ...next, updatedMs: timeMs };
}

function applyEvent(view: DashboardView, event: ServerEvent, timeMs: number): DashboardView {
  switch (event.kind) {
    case "Listening": {
      const started = { ...view, runId: event.runId, epoch: event.epoch, step: event.step };
      return {
        ...enterPhase(started, event.runState as RunState, event.epoch, event.step, timeMs),
        runState: event.runState as RunState,
      };
    }
    case "StateChanged": {
      const moved = enterPhase(view, event.to, event.epoch, event.step, timeMs);
      return { ...moved, runState: event.to, epoch: event.epoch, step: event.step };
    }
    case "EpochEnd":
      return {
        ...view,
        epoch: event.epoch,
        step: event.step,
        totals: {
          ...view.totals,
          epochs: view.totals.epochs + 1,
          unattestedEpochs: view.totals.unattestedEpochs +
            (event.cause === "no_witnesses" ? 1 : 0),
        },
      };
    case "Joined": {
      const joined = withClient(view, event.client, timeMs, () => ({ status: "Pending" }));
      return { ...joined, totals: { ...joined.totals, joins: joined.totals.joins + 1 } };
    }
    case "Left":
      return withClient(view, event.client, timeMs, () => ({ status: "Left" }));
    case "Kicked":
      return withClient(view, event.client, timeMs, () => ({ status: event.state }));
    case "Connected":
      return withClient(view, event.client, timeMs, () => ({}));
    case "Witness": {
      const m = event.metadata;
      let next = withClient(view, event.client, timeMs, (c) => ({
        lastStep: m.step,
        loss: Number.isFinite(m.loss) ? m.loss : c.loss,
        tokensPerSec: Number.isFinite(m.tokensPerSec) ? m.tokensPerSec : c.tokensPerSec,
        witnesses: c.witnesses + 1,
        // A report between eval passes carries the last pass's scores again; none keeps them.
        evals: m.evals.length === 0 ? c.evals : Object.fromEntries(
          m.evals.filter((e) => Number.isFinite(e.value)).map((e) => [e.name, e.value]),
        ),
      }));
      next = withLoss(next, event.client, m.step, m.loss);
      if (event.digest !== null) {
        next = withReportedDigest(next, event.client, m.step, event.digest, timeMs);
      }
      return { ...next, totals: { ...next.totals, witnesses: next.totals.witnesses + 1 } };
    }
    case "Telemetry":
      return withTelemetry(view, event.client, event.telemetry, timeMs);
    case "DigestRecorded":
      return withRecordedDigest(view, event.step, event.digest, timeMs);
    case "RoundEnd":
      return { ...view, totals: { ...view.totals, rounds: view.totals.rounds + 1 } };
    case "VerificationClosed":
      return {
        ...view,
        totals: {
          ...view.totals,
          verifications: view.totals.verifications + 1,
          failedVerifications: view.totals.failedVerifications +
            (event.outcome === "failed" ? 1 : 0),
        },
      };
    case "Ejected": {
      const ejected = withClient(view, event.client, timeMs, () => ({ status: "Ejected" }));
      return {
        ...ejected,
        totals: { ...ejected.totals, ejections: ejected.totals.ejections + 1 },
      };
    }
    case "Rejected":
    case "JoinRefused":
    case "TelemetryDropped":
      return { ...view, totals: { ...view.totals, rejections: view.totals.rejections + 1 } };
    case "WarmupWitness":
    case "CooldownWitness":
    case "HealthCheck":
    case "Checkpoint":
    case "BackedOff":
    case "JoinDeferred":
    case "VerificationReport":
      return withClient(view, event.client, timeMs, () => ({}));
    case "VerificationOpened":
    case "HeldByBars":
      return view;
    case "ConnectionRefused":
    case "ConnectionClosed":
    case "Throttled":
    case "Saved":
    case "SaveFailed":
    case "DataServer":
    case "Dashboard":
    case "Relay":
    case "DataRefused":
    case "Stopped":
      return view;
    default: {
      const never: never = event;
      throw new TypeError(`Unknown server event ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The view with the coordinator's state at `timeMs`: run state, progress and configuration
 * from the snapshot, each client's health from the epoch's list or the pending list, and its
 * earned and slashed points and the treasury's and pools' balances when the snapshot has them.
 */
export function reduceSnapshot(
  view: DashboardView,
  snapshot: RunSnapshot,
  timeMs: number,
): DashboardView {
  // The timeline follows the events (a snapshot taken after a burst of them is ahead of the
  // ones not reduced yet); a snapshot only starts it.
  let next: DashboardView = view.timeline.length === 0
    ? enterPhase(view, snapshot.runState, snapshot.epoch, snapshot.step, timeMs)
    : view;
  const health = new Map<string, ClientStatus>(snapshot.clients.map((c) => [c.key, c.state]));
  for (const key of snapshot.pending) if (!health.has(key)) health.set(key, "Pending");
  for (const key of health.keys()) {
    if (!next.clients.some((c) => c.key === key)) next = withClient(next, key, timeMs, () => ({}));
  }
  const clients = next.clients.map((c): ClientView => {
    const status = health.get(c.key) ??
      (c.status === "Left" || c.status === "Known" || c.status === "Dropped" ||
          c.status === "Ejected" || c.status === "Withdrawn"
        ? c.status
        : "Left");
    const earned = snapshot.earned?.[c.key] ?? c.earned;
    const slashed = snapshot.slashed?.[c.key] ?? c.slashed;
    return status === c.status && earned === c.earned && slashed === c.slashed
      ? c
      : { ...c, status, earned, slashed };
  });
  return {
    ...next,
    runId: snapshot.runId,
    runState: snapshot.runState,
    epoch: snapshot.epoch,
    step: snapshot.step,
    roundHeight: snapshot.roundHeight,
    config: snapshot.config,
    funds: snapshot.funds ?? next.funds,
    clients,
    updatedMs: timeMs,
  };
}
