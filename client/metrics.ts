/**
 * The client's Prometheus metrics (`train --metrics-port P`, served at `/metrics`): a pure
 * reducer from the events the client logs (client/log.ts, the same ones the TUI folds) to a
 * small view of counters and gauges, and that view in the Prometheus text format. Every metric
 * is in {@linkcode CLIENT_METRICS} with its type and help text, which docs/client.md repeats.
 * The time of each event comes in as milliseconds; nothing here reads a clock.
 *
 * @example
 * ```ts
 * import { clientMetricsText, initialClientMetrics, reduceClientMetrics } from "./metrics.ts";
 * let m = initialClientMetrics("run");
 * m = reduceClientMetrics(m, { event: "state", fields: {
 *   run_state: "RoundTrain", epoch: 0, step: 3, round: 2, clients: 2 } }, 0);
 * if (!clientMetricsText(m).includes("psyche_client_step 3\n")) throw new Error("no step");
 * ```
 *
 * @module
 */
import {
  type MetricFamily,
  type MetricSample,
  type MetricSpec,
  prometheusText,
} from "../common/mod.ts";
import { RUN_STATES } from "../coordinator/core/mod.ts";
import type { LoggedEvent } from "./tui/view.ts";

/** Every metric: its name, Prometheus type and help line. */
export const CLIENT_METRICS = {
  psyche_client_info: [
    "gauge",
    "Always 1; the run id and the client's key (16 hex digits) as labels.",
  ],
  psyche_client_run_state: ["gauge", "1 for the run state the client saw last, 0 for the others."],
  psyche_client_epoch: ["gauge", "The run's epoch, as the client saw it last."],
  psyche_client_step: ["gauge", "The run's step, as the client saw it last."],
  psyche_client_round: ["gauge", "The height of the round the client saw last (0 outside rounds)."],
  psyche_client_run_clients: ["gauge", "Clients in the epoch, as the client saw it last."],
  psyche_client_loss: ["gauge", "Loss of the client's last trained batch."],
  psyche_client_tokens_per_second: ["gauge", "Tokens/s of the client's last trained batch."],
  psyche_client_last_trained_step: ["gauge", "The step of the client's last trained batch."],
  psyche_client_params_step: ["gauge", "The run step whose parameters the client holds."],
  psyche_client_in_sync: [
    "gauge",
    "1 while the client holds the run's parameters, 0 after a divergence until it resyncs.",
  ],
  psyche_client_connected: ["gauge", "1 while the client has its coordinator, else 0."],
  psyche_client_peers: ["gauge", "libp2p connections open (at the last round start)."],
  psyche_client_bytes_sent_total: ["counter", "Bytes sent to peers (at the last round start)."],
  psyche_client_bytes_received_total: [
    "counter",
    "Bytes received from peers (at the last round start).",
  ],
  psyche_client_rounds_trained_total: ["counter", "Batches trained and published."],
  psyche_client_rounds_witnessed_total: ["counter", "Witness reports sent."],
  psyche_client_applies_total: ["counter", "Steps whose results the client applied."],
  psyche_client_divergences_total: ["counter", "Times the client's parameters left the run's."],
  psyche_client_resyncs_total: ["counter", "Times the client fetched the run's parameters again."],
  psyche_client_reconnects_total: ["counter", "Times the client reached its coordinator again."],
  psyche_client_refused_total: ["counter", "Announcements and payloads refused from peers."],
  psyche_client_download_failures_total: ["counter", "Payload downloads that failed."],
  psyche_client_announcements_recovered_total: [
    "counter",
    "Announcements gossip lost that were pulled from a peer.",
  ],
  psyche_client_states_skipped_total: [
    "counter",
    "Stale coordinator states skipped unread behind a newer one, after a stall.",
  ],
  psyche_client_verifications_total: [
    "counter",
    "Sampled results this client verified as a seated verifier, by the verdict it reported.",
  ],
  psyche_client_ejections_total: ["counter", "Times the coordinator ejected this client."],
  psyche_client_peer_dial_failures_total: [
    "counter",
    "Dials to a participant that failed with a new error.",
  ],
  psyche_client_relays_given_up_total: [
    "counter",
    "Relay connections given up because a probe got no answer (the relay's machine or link died).",
  ],
  psyche_client_errors_total: ["counter", "Errors logged."],
  psyche_client_eval: [
    "gauge",
    "The last finished eval pass per task (--eval-tasks): acc and acc_norm, by task and metric.",
  ],
  psyche_client_eval_step: ["gauge", "The run step whose parameters each task's pass scored."],
  psyche_client_phase_seconds: [
    "summary",
    "Seconds of each part of a round's work: train (forward, backward, compression), publish " +
    "(encode and announce the payload), apply (apply the results, hash the parameters).",
  ],
  psyche_client_run_state_seconds: [
    "summary",
    "Seconds the client saw the run in each state, over the states that ended.",
  ],
} as const satisfies Record<string, MetricSpec>;

type MetricName = keyof typeof CLIENT_METRICS;

/** The parts of a round's work the client times. */
export const CLIENT_PHASES = ["train", "publish", "apply"] as const;
/** One of {@linkcode CLIENT_PHASES}. */
export type ClientPhase = typeof CLIENT_PHASES[number];

/** A summary's running sum and count. */
export interface Spent {
  readonly sum: number;
  readonly count: number;
}

/** What the metrics show. Immutable: the reducer returns a new one. */
export interface ClientMetricsView {
  readonly runId: string;
  /** This client's public key (hex), once started. */
  readonly identity: string | null;
  readonly run: {
    readonly state: string;
    readonly epoch: number;
    readonly step: number;
    readonly round: number;
    readonly clients: number;
    /** When the client saw this state begin (ms). */
    readonly sinceMs: number;
  } | null;
  readonly lastTrain: {
    readonly step: number;
    readonly loss: number;
    readonly tokensPerSec: number;
  } | null;
  readonly paramsStep: number | null;
  readonly inSync: boolean;
  readonly connected: boolean;
  readonly traffic: {
    readonly peers: number;
    readonly bytesSent: number;
    readonly bytesReceived: number;
  } | null;
  readonly totals: {
    readonly trained: number;
    readonly witnessed: number;
    readonly applies: number;
    readonly divergences: number;
    readonly resyncs: number;
    readonly reconnects: number;
    readonly refused: number;
    readonly downloadFailures: number;
    readonly announcementsRecovered: number;
    readonly statesSkipped: number;
    readonly verificationsPassed: number;
    readonly verificationsFailed: number;
    readonly ejections: number;
    readonly peerDialFailures: number;
    readonly relaysGivenUp: number;
    readonly errors: number;
  };
  readonly phaseSeconds: Readonly<Record<ClientPhase, Spent>>;
  /** Seconds per run state that ended (keyed by the state's name). */
  readonly stateSeconds: Readonly<Record<string, Spent>>;
  /** Each eval task's last finished pass. */
  readonly evals: Readonly<
    Record<string, { readonly step: number; readonly acc: number; readonly accNorm: number | null }>
  >;
}

const NOTHING: Spent = { sum: 0, count: 0 };

/** The metrics before any event. */
export function initialClientMetrics(runId: string): ClientMetricsView {
  return {
    runId,
    identity: null,
    run: null,
    lastTrain: null,
    paramsStep: null,
    inSync: false,
    connected: false,
    traffic: null,
    totals: {
      trained: 0,
      witnessed: 0,
      applies: 0,
      divergences: 0,
      resyncs: 0,
      reconnects: 0,
      refused: 0,
      downloadFailures: 0,
      announcementsRecovered: 0,
      statesSkipped: 0,
      verificationsPassed: 0,
      verificationsFailed: 0,
      ejections: 0,
      peerDialFailures: 0,
      relaysGivenUp: 0,
      errors: 0,
    },
    phaseSeconds: { train: NOTHING, publish: NOTHING, apply: NOTHING },
    stateSeconds: Object.fromEntries(RUN_STATES.map((s) => [s, NOTHING])),
    evals: {},
  };
}

const add = (spent: Spent | undefined, seconds: number): Spent => ({
  sum: (spent?.sum ?? 0) + seconds,
  count: (spent?.count ?? 0) + 1,
});

type Totals = ClientMetricsView["totals"];
const count = (m: ClientMetricsView, key: keyof Totals, by = 1): ClientMetricsView => ({
  ...m,
  totals: { ...m.totals, [key]: m.totals[key] + by },
});

/** The metrics after `e` arrived at `timeMs`. */
export function reduceClientMetrics(
  m: ClientMetricsView,
  e: LoggedEvent,
  timeMs: number,
): ClientMetricsView {
  switch (e.event) {
    case "start":
      return { ...m, identity: e.fields.identity, connected: true };
    case "state": {
      const f = e.fields;
      const before = m.run;
      const changed = before !== null && before.state !== f.run_state;
      return {
        ...m,
        run: {
          state: f.run_state,
          epoch: f.epoch,
          step: f.step,
          round: f.round,
          clients: f.clients,
          sinceMs: before === null || changed ? timeMs : before.sinceMs,
        },
        stateSeconds: changed
          ? {
            ...m.stateSeconds,
            [before.state]: add(m.stateSeconds[before.state], (timeMs - before.sinceMs) / 1000),
          }
          : m.stateSeconds,
      };
    }
    case "model":
      return { ...m, paramsStep: e.fields.params_step, inSync: true };
    case "train": {
      const f = e.fields;
      return {
        ...count(m, "trained"),
        lastTrain: { step: f.step, loss: f.loss, tokensPerSec: f.tokens_per_sec },
        phaseSeconds: {
          ...m.phaseSeconds,
          train: add(m.phaseSeconds.train, f.ms / 1000),
          publish: add(m.phaseSeconds.publish, f.publish_ms / 1000),
        },
      };
    }
    case "apply":
      return {
        ...count(m, "applies"),
        paramsStep: e.fields.params_step,
        inSync: true,
        phaseSeconds: { ...m.phaseSeconds, apply: add(m.phaseSeconds.apply, e.fields.ms / 1000) },
      };
    case "witness":
      return count(m, "witnessed");
    case "traffic": {
      const f = e.fields;
      return {
        ...m,
        traffic: { peers: f.peers, bytesSent: f.bytes_sent, bytesReceived: f.bytes_received },
      };
    }
    case "diverged":
      return { ...count(m, "divergences"), inSync: false };
    case "resynced":
      return { ...count(m, "resyncs"), paramsStep: e.fields.step, inSync: true };
    case "disconnected":
      return { ...m, connected: false };
    case "reconnected":
      return { ...count(m, "reconnects"), connected: true };
    case "refused":
      return count(m, "refused");
    case "download_failed":
      return count(m, "downloadFailures");
    case "announcements_recovered":
      return count(m, "announcementsRecovered", e.fields.count);
    case "states_skipped":
      return count(m, "statesSkipped", e.fields.skipped);
    case "verification":
      return count(m, e.fields.verdict === "Pass" ? "verificationsPassed" : "verificationsFailed");
    case "ejected":
      return count(m, "ejections");
    case "peer_unreachable":
      return count(m, "peerDialFailures");
    case "relay_silent":
      return count(m, "relaysGivenUp");
    case "error":
      return count(m, "errors");
    case "eval": {
      const f = e.fields;
      return {
        ...m,
        evals: { ...m.evals, [f.task]: { step: f.step, acc: f.acc, accNorm: f.acc_norm } },
      };
    }
    case "end":
      return { ...m, connected: false };
    case "metrics":
    case "memory_plan":
    case "warmup":
    case "waiting_for_model":
    case "warmup_witness":
    case "health_check_sent":
    case "checkpoint":
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
    case "model_snapshot":
    case "saved_on_exit":
    case "reconnecting":
    case "verification_retry":
    case "pull_failed":
    case "peer_connected":
    case "relay_unreachable":
    case "too_slow":
    case "dropped":
    case "lagging":
    case "reachability":
    case "outdated":
    case "eval_disabled":
    case "model_load":
    case "model_upload":
    case "checkpoint_progress":
    case "warmup_stage":
    case "model_snapshot_progress":
      return m;
    default: {
      const unreachable: never = e;
      throw new Error(`unknown client event ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Hex digits of the client's key in the `client` label (as the coordinator's metrics). */
const KEY_LABEL_DIGITS = 16;

/** `m` in the Prometheus text format. */
export function clientMetricsText(m: ClientMetricsView): string {
  const families: MetricFamily<MetricName>[] = [];
  const family = (name: MetricName, samples: readonly MetricSample[]) =>
    families.push({ name, samples });
  const maybe = (value: number | undefined) => value === undefined ? [] : [{ value }];
  const flag = (on: boolean) => [{ value: on ? 1 : 0 }];

  family("psyche_client_info", [{
    labels: { run_id: m.runId, client: (m.identity ?? "").slice(0, KEY_LABEL_DIGITS) },
    value: 1,
  }]);
  family(
    "psyche_client_run_state",
    RUN_STATES.map((state) => ({ labels: { state }, value: m.run?.state === state ? 1 : 0 })),
  );
  family("psyche_client_epoch", maybe(m.run?.epoch));
  family("psyche_client_step", maybe(m.run?.step));
  family("psyche_client_round", maybe(m.run?.round));
  family("psyche_client_run_clients", maybe(m.run?.clients));
  family("psyche_client_loss", maybe(m.lastTrain?.loss));
  family("psyche_client_tokens_per_second", maybe(m.lastTrain?.tokensPerSec));
  family("psyche_client_last_trained_step", maybe(m.lastTrain?.step));
  family("psyche_client_params_step", maybe(m.paramsStep ?? undefined));
  family("psyche_client_in_sync", flag(m.inSync));
  family("psyche_client_connected", flag(m.connected));
  family("psyche_client_peers", [{ value: m.traffic?.peers ?? 0 }]);
  family("psyche_client_bytes_sent_total", [{ value: m.traffic?.bytesSent ?? 0 }]);
  family("psyche_client_bytes_received_total", [{ value: m.traffic?.bytesReceived ?? 0 }]);
  const t = m.totals;
  family("psyche_client_rounds_trained_total", [{ value: t.trained }]);
  family("psyche_client_rounds_witnessed_total", [{ value: t.witnessed }]);
  family("psyche_client_applies_total", [{ value: t.applies }]);
  family("psyche_client_divergences_total", [{ value: t.divergences }]);
  family("psyche_client_resyncs_total", [{ value: t.resyncs }]);
  family("psyche_client_reconnects_total", [{ value: t.reconnects }]);
  family("psyche_client_refused_total", [{ value: t.refused }]);
  family("psyche_client_download_failures_total", [{ value: t.downloadFailures }]);
  family("psyche_client_announcements_recovered_total", [{ value: t.announcementsRecovered }]);
  family("psyche_client_states_skipped_total", [{ value: t.statesSkipped }]);
  family("psyche_client_verifications_total", [
    { labels: { verdict: "pass" }, value: t.verificationsPassed },
    { labels: { verdict: "fail" }, value: t.verificationsFailed },
  ]);
  family("psyche_client_ejections_total", [{ value: t.ejections }]);
  family("psyche_client_peer_dial_failures_total", [{ value: t.peerDialFailures }]);
  family("psyche_client_relays_given_up_total", [{ value: t.relaysGivenUp }]);
  family("psyche_client_errors_total", [{ value: t.errors }]);
  const evals = Object.entries(m.evals);
  family(
    "psyche_client_eval",
    evals.flatMap(([task, e]) => [
      { labels: { task, metric: "acc" }, value: e.acc },
      ...(e.accNorm === null ? [] : [{ labels: { task, metric: "acc_norm" }, value: e.accNorm }]),
    ]),
  );
  family(
    "psyche_client_eval_step",
    evals.map(([task, e]) => ({ labels: { task }, value: e.step })),
  );
  const summary = (label: string, key: string, spent: Spent) => [
    { suffix: "_sum" as const, labels: { [label]: key }, value: spent.sum },
    { suffix: "_count" as const, labels: { [label]: key }, value: spent.count },
  ];
  family(
    "psyche_client_phase_seconds",
    CLIENT_PHASES.flatMap((phase) => summary("phase", phase, m.phaseSeconds[phase])),
  );
  family(
    "psyche_client_run_state_seconds",
    Object.entries(m.stateSeconds).flatMap(([state, spent]) => summary("state", state, spent)),
  );
  return prometheusText(CLIENT_METRICS, families);
}
