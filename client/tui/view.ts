/**
 * The TUI's view model and its reducer: a pure function of (view, event, time) fed by the very
 * events the client logs (client/log.ts, docs/logs.md), so the screen never shows anything the
 * JSON log would not. The time comes in as milliseconds (bandwidth and warning times need it);
 * nothing here reads a clock.
 *
 * @example
 * ```ts
 * import { initialView, reduceView } from "./view.ts";
 * let view = initialView({ runId: "r", coordinator: "127.0.0.1:9000" });
 * view = reduceView(view, { event: "state", fields: {
 *   run_state: "RoundTrain", epoch: 0, step: 3, round: 2, clients: 2 } }, 0);
 * if (view.run?.step !== 3) throw new Error("step not shown");
 * ```
 *
 * @module
 */
import {
  clientEventLevel,
  type ClientEventName,
  type ClientEvents,
  describeEvent,
} from "../log.ts";

/** One logged event: its name and fields, as a logger receives them. */
export type LoggedEvent = {
  [K in ClientEventName]: { event: K; fields: ClientEvents[K] };
}[ClientEventName];

/** How many recent losses the sparkline keeps. */
export const LOSS_HISTORY = 120;
/** How many recent warnings and errors the view keeps. */
export const NOTICE_HISTORY = 8;

/** A warning or error line, with when it came. */
export interface Notice {
  readonly timeMs: number;
  readonly level: "warn" | "error";
  readonly text: string;
}

/** Traffic totals at one moment, for a rate between two samples. */
export interface TrafficSample {
  readonly timeMs: number;
  readonly bytesSent: number;
  readonly bytesReceived: number;
}

/** Everything the TUI shows. Immutable: the reducer returns a new one. */
export interface TuiView {
  readonly runId: string;
  readonly coordinator: string;
  /** This client's public key (hex), once started. */
  readonly identity: string | null;
  readonly adapter: string | null;
  /** `connected`, `disconnected` or `reconnecting (attempt N)`. */
  readonly connection: string;
  readonly run: {
    readonly state: string;
    readonly epoch: number;
    readonly step: number;
    readonly round: number;
    readonly clients: number;
  } | null;
  readonly model: { readonly params: number; readonly hash: string; readonly step: number } | null;
  readonly lastTrain: {
    readonly step: number;
    readonly batch: readonly [number, number];
    readonly loss: number;
    readonly tokensPerSec: number;
    readonly ms: number;
    readonly payloadBytes: number;
  } | null;
  /** Recent losses, oldest first (at most {@link LOSS_HISTORY}). */
  readonly losses: readonly number[];
  readonly traffic: {
    readonly peers: number;
    readonly bytesSent: number;
    readonly bytesReceived: number;
    /** Bytes per second since the previous sample; null until two samples. */
    readonly sentPerSec: number | null;
    readonly receivedPerSec: number | null;
    readonly sample: TrafficSample;
  } | null;
  readonly witness: {
    readonly step: number;
    readonly participants: number;
    readonly commitments: number;
  } | null;
  readonly apply: {
    readonly step: number;
    readonly applied: number;
    readonly untrained: number;
    readonly hash: string;
  } | null;
  /** `in sync`, `diverged: …`, `waiting for the model: …` (whether this client contributes). */
  readonly sync: string;
  /**
   * The long phase under way and how far it got (a model's fetch, seeded init, digest or upload,
   * the warm-up, a checkpoint's write), as the log says it; null when none is.
   */
  readonly activity: string | null;
  /** Recent warnings and errors, oldest first (at most {@link NOTICE_HISTORY}). */
  readonly notices: readonly Notice[];
  /** Why the client stopped, once it did. */
  readonly ended: string | null;
}

/** The view before any event: what the command line already says. */
export function initialView(o: { runId: string; coordinator: string }): TuiView {
  return {
    runId: o.runId,
    coordinator: o.coordinator,
    identity: null,
    adapter: null,
    connection: "connecting",
    run: null,
    model: null,
    lastTrain: null,
    losses: [],
    traffic: null,
    witness: null,
    apply: null,
    sync: "starting",
    activity: null,
    notices: [],
    ended: null,
  };
}

const keepLast = <T>(items: readonly T[], item: T, max: number): T[] =>
  [...items, item].slice(-max);

/** The view after `e` arrived at `timeMs`. */
export function reduceView(view: TuiView, e: LoggedEvent, timeMs: number): TuiView {
  const level = clientEventLevel(e.event);
  const next = level === "info" ? view : {
    ...view,
    notices: keepLast(
      view.notices,
      { timeMs, level, text: describeEvent(e.event, e.fields) },
      NOTICE_HISTORY,
    ),
  };
  return applyEvent(next, e, timeMs);
}

function applyEvent(view: TuiView, e: LoggedEvent, timeMs: number): TuiView {
  switch (e.event) {
    case "start":
      return {
        ...view,
        identity: e.fields.identity,
        adapter: e.fields.adapter,
        connection: "connected",
      };
    case "state": {
      const f = e.fields;
      return {
        ...view,
        run: {
          state: f.run_state,
          epoch: f.epoch,
          step: f.step,
          round: f.round,
          clients: f.clients,
        },
      };
    }
    case "model":
      return {
        ...view,
        model: { params: e.fields.params, hash: e.fields.params_hash, step: e.fields.params_step },
        sync: "in sync",
        activity: null,
      };
    case "train": {
      const f = e.fields;
      return {
        ...view,
        lastTrain: {
          step: f.step,
          batch: f.batch,
          loss: f.loss,
          tokensPerSec: f.tokens_per_sec,
          ms: f.ms,
          payloadBytes: f.payload_bytes,
        },
        losses: keepLast(view.losses, f.loss, LOSS_HISTORY),
      };
    }
    case "traffic": {
      const f = e.fields;
      const sample = { timeMs, bytesSent: f.bytes_sent, bytesReceived: f.bytes_received };
      const before = view.traffic?.sample;
      const seconds = before === undefined ? 0 : (timeMs - before.timeMs) / 1000;
      const rate = (now: number, then: number) => seconds > 0 ? (now - then) / seconds : null;
      return {
        ...view,
        traffic: {
          peers: f.peers,
          bytesSent: f.bytes_sent,
          bytesReceived: f.bytes_received,
          sentPerSec: before === undefined ? null : rate(f.bytes_sent, before.bytesSent),
          receivedPerSec: before === undefined
            ? null
            : rate(f.bytes_received, before.bytesReceived),
          sample,
        },
      };
    }
    case "witness":
      return {
        ...view,
        witness: {
          step: e.fields.step,
          participants: e.fields.participants,
          commitments: e.fields.commitments,
        },
      };
    case "apply":
      return {
        ...view,
        apply: {
          step: e.fields.step,
          applied: e.fields.applied,
          untrained: e.fields.untrained_batches,
          hash: e.fields.params_hash,
        },
        model: view.model === null
          ? null
          : { ...view.model, hash: e.fields.params_hash, step: e.fields.params_step },
        sync: "in sync",
      };
    case "diverged":
      return { ...view, sync: `diverged at step ${e.fields.step}: ${e.fields.reason}` };
    case "waiting_for_model":
      return { ...view, sync: `waiting for the model of step ${e.fields.step}`, activity: null };
    case "resynced":
      return {
        ...view,
        model: view.model === null
          ? null
          : { ...view.model, hash: e.fields.params_hash, step: e.fields.step },
        sync: `in sync (resynced from ${e.fields.source})`,
      };
    case "model_snapshot": // the parameters shared, rounded to bf16 if the run says so
      return {
        ...view,
        activity: null,
        model: view.model === null
          ? null
          : { ...view.model, hash: e.fields.params_hash, step: e.fields.step },
      };
    case "disconnected":
      return { ...view, connection: "disconnected" };
    case "reconnecting":
      return { ...view, connection: `reconnecting (attempt ${e.fields.attempt})` };
    case "reconnected":
      return { ...view, connection: "connected" };
    case "end":
      return { ...view, ended: e.fields.reason, activity: null };
    case "model_load":
    case "model_upload":
    case "warmup_stage":
    case "checkpoint_progress":
    case "model_snapshot_progress":
      return { ...view, activity: describeEvent(e.event, e.fields) };
    case "checkpoint":
      return { ...view, activity: null };
    case "metrics":
    case "memory_plan":
    case "warmup":
    case "warmup_witness":
    case "health_check_sent":
    case "refused":
    case "download_failed":
    case "announcements_recovered":
    case "pull_failed":
    case "outdated":
    case "states_skipped":
    case "peer_unreachable":
    case "peer_connected":
    case "relay_unreachable":
    case "relay_silent":
    case "too_slow":
    case "reachability":
    case "checkpointer":
    case "hub_upload":
    case "hub_upload_phase":
    case "hub_uploaded":
    case "hub_upload_failed":
    case "hub_upload_retry":
    case "hub_repo_created":
    case "hub_reported":
    case "hub_report_skipped":
    case "checkpoint_deleted":
    case "claimed":
    case "saved_on_exit":
    case "error":
    case "verification":
    case "verification_retry":
    case "ejected":
    case "dropped":
    case "lagging":
    case "eval":
    case "eval_disabled":
      return view; // a notice (warn/error) or nothing the screen shows
    default: {
      const unreachable: never = e;
      throw new Error(`unknown client event ${JSON.stringify(unreachable)}`);
    }
  }
}
