/**
 * The dashboard's view in the Prometheus text exposition format (version 0.0.4), served at
 * `/metrics`. Every metric is listed in {@linkcode METRICS} with its type and help text, which
 * docs/dashboard.md repeats. Clients are labelled by the first 16 hex digits of their key.
 *
 * Pure.
 *
 * @module
 */
import {
  escapeLabel,
  type MetricFamily,
  type MetricSample,
  type MetricSpec,
  PROMETHEUS_CONTENT_TYPE,
  prometheusText,
} from "../../common/mod.ts";
import { RUN_STATES } from "../core/mod.ts";
import { STEP_PHASES } from "../server/mod.ts";
import type { DashboardView } from "./view.ts";

/** The content type of the exposition format. */
export const METRICS_CONTENT_TYPE = PROMETHEUS_CONTENT_TYPE;

/** Hex digits of a key used as the `client` label. */
export const CLIENT_LABEL_DIGITS = 16;

/** Every metric: its name, Prometheus type and help line. */
export const METRICS = {
  psyche_coordinator_info: ["gauge", "Always 1; the run id as a label."],
  psyche_coordinator_epoch: ["gauge", "The run's current epoch."],
  psyche_coordinator_step: ["gauge", "The run's current step (starts at 1)."],
  psyche_coordinator_round_height: ["gauge", "The current round's height (absent outside rounds)."],
  psyche_coordinator_total_steps: ["gauge", "The steps the run is configured to train."],
  psyche_coordinator_clients: ["gauge", "Clients the dashboard knows, by status."],
  psyche_run_state: ["gauge", "1 for the run's current state, 0 for the others."],
  psyche_loss: ["gauge", "Loss in a client's last witness report."],
  psyche_loss_mean: ["gauge", "Mean loss of the reports of the latest reported step."],
  psyche_tokens_per_second: [
    "gauge",
    "Tokens/s in a client's last witness report or telemetry notice, whichever came last.",
  ],
  psyche_eval: [
    "gauge",
    "The evals in a client's last witness report that carried any (--eval-tasks), by name.",
  ],
  psyche_reported_bytes_sent_total: [
    "counter",
    "Bytes a client sent to its peers, as its last telemetry notice says.",
  ],
  psyche_reported_bytes_received_total: [
    "counter",
    "Bytes a client received from its peers, as its last telemetry notice says.",
  ],
  psyche_reported_step: ["gauge", "The step of a client's last telemetry notice."],
  psyche_earned_points: [
    "gauge",
    "Points a client earned in the run (Solana runs: the program's earned points).",
  ],
  psyche_slashed_points: [
    "gauge",
    "Points a client was slashed in the run (Solana runs: informational, the treasurer pays earned points).",
  ],
  psyche_treasury_vault_amount: [
    "gauge",
    "Token base units the run's treasury vault holds (Solana runs with a treasury).",
  ],
  psyche_treasury_claimed_total: ["counter", "Token base units the run's treasury paid out."],
  psyche_pool_deposited: ["gauge", "Collateral lenders deposited in a mining pool (--pool)."],
  psyche_pool_claimable_total: ["counter", "Rewards a mining pool's lenders may claim in all."],
  psyche_pool_claimed_total: ["counter", "Rewards a mining pool's lenders claimed."],
  psyche_reported_step_phase_milliseconds: [
    "gauge",
    "Milliseconds of each part (train, encode, exchange, apply, wait) of a client's last " +
    "reported step.",
  ],
  psyche_step_phase_mean_milliseconds: [
    "gauge",
    "Mean milliseconds of each part of the latest step any client reported, over its reports.",
  ],
  psyche_client_last_step: ["gauge", "The step of a client's last witness report."],
  psyche_witnesses_total: ["counter", "Witness reports accepted."],
  psyche_rounds_total: ["counter", "Rounds ended (witness phase over)."],
  psyche_epochs_total: ["counter", "Epochs ended."],
  psyche_epochs_unattested_total: [
    "counter",
    "Epochs ended with no witness report in their last round.",
  ],
  psyche_divergences_total: [
    "counter",
    "Witness reports whose parameter digest differs from the one a quorum recorded.",
  ],
  psyche_rejections_total: ["counter", "Requests and joins the coordinator refused."],
  psyche_verifications_total: [
    "counter",
    "Verification tasks closed: `failed` (the trainer was ejected) or `other` (passed, undecided).",
  ],
  psyche_ejections_total: [
    "counter",
    "Clients ejected by verification: trainers that failed, verifiers that lied or stayed silent.",
  ],
  psyche_run_phase_seconds: [
    "summary",
    "Seconds spent in each run state, over the phases that ended (sum and count).",
  ],
} as const satisfies Record<string, MetricSpec>;

type MetricName = keyof typeof METRICS;

export { escapeLabel };

/**
 * `view` in the Prometheus text format.
 *
 * @example
 * ```ts
 * import { emptyView } from "./view.ts";
 * import { metricsText } from "./metrics.ts";
 * const text = metricsText(emptyView());
 * if (!text.includes("psyche_divergences_total 0")) throw new Error(text);
 * ```
 */
export function metricsText(view: DashboardView): string {
  const families: MetricFamily<MetricName>[] = [];
  const family = (name: MetricName, samples: readonly MetricSample[]) =>
    families.push({ name, samples });
  const client = (key: string) => ({ client: key.slice(0, CLIENT_LABEL_DIGITS) });

  family(
    "psyche_coordinator_info",
    view.runId === null ? [] : [{ labels: { run_id: view.runId }, value: 1 }],
  );
  family("psyche_coordinator_epoch", [{ value: view.epoch }]);
  family("psyche_coordinator_step", [{ value: view.step }]);
  family(
    "psyche_coordinator_round_height",
    view.roundHeight === null ? [] : [{ value: view.roundHeight }],
  );
  family(
    "psyche_coordinator_total_steps",
    view.config === null ? [] : [{ value: view.config.totalSteps }],
  );
  const byStatus = new Map<string, number>();
  for (const c of view.clients) byStatus.set(c.status, (byStatus.get(c.status) ?? 0) + 1);
  family(
    "psyche_coordinator_clients",
    [...byStatus].map(([status, n]) => ({ labels: { status }, value: n })),
  );
  family(
    "psyche_run_state",
    RUN_STATES.map((state) => ({ labels: { state }, value: view.runState === state ? 1 : 0 })),
  );
  const reporting = view.clients.filter((c) => c.lastStep !== null);
  family(
    "psyche_loss",
    reporting.filter((c) => c.loss !== null).map((c) => ({
      labels: client(c.key),
      value: c.loss!,
    })),
  );
  const mean = view.meanLoss.at(-1);
  family("psyche_loss_mean", mean === undefined ? [] : [{ value: mean.loss }]);
  family(
    "psyche_tokens_per_second",
    reporting.filter((c) => c.tokensPerSec !== null).map((c) => ({
      labels: client(c.key),
      value: c.tokensPerSec!,
    })),
  );
  family(
    "psyche_eval",
    view.clients.flatMap((c) =>
      Object.entries(c.evals ?? {}).map(([name, value]) => ({
        labels: { ...client(c.key), name },
        value,
      }))
    ),
  );
  const telemetry = view.clients.filter((c) => c.telemetryStep !== null);
  family(
    "psyche_reported_bytes_sent_total",
    telemetry.map((c) => ({ labels: client(c.key), value: c.bytesSent! })),
  );
  family(
    "psyche_reported_bytes_received_total",
    telemetry.map((c) => ({ labels: client(c.key), value: c.bytesReceived! })),
  );
  family(
    "psyche_reported_step",
    telemetry.map((c) => ({ labels: client(c.key), value: c.telemetryStep! })),
  );
  family(
    "psyche_reported_step_phase_milliseconds",
    telemetry.flatMap((c) =>
      STEP_PHASES.map((phase) => ({
        labels: { ...client(c.key), phase },
        value: c.breakdownMs![phase],
      }))
    ),
  );
  const latest = view.breakdown.at(-1);
  family(
    "psyche_step_phase_mean_milliseconds",
    latest === undefined
      ? []
      : STEP_PHASES.map((phase) => ({ labels: { phase }, value: latest[phase] })),
  );
  family(
    "psyche_earned_points",
    view.clients.filter((c) => c.earned !== null).map((c) => ({
      labels: client(c.key),
      value: Number(c.earned),
    })),
  );
  family(
    "psyche_slashed_points",
    view.clients.filter((c) => c.slashed !== null).map((c) => ({
      labels: client(c.key),
      value: Number(c.slashed),
    })),
  );
  const treasury = view.funds?.treasury ?? null;
  family(
    "psyche_treasury_vault_amount",
    treasury === null ? [] : [
      { value: Number(treasury.vaultAmount) },
    ],
  );
  family(
    "psyche_treasury_claimed_total",
    treasury === null ? [] : [
      { value: Number(treasury.totalClaimed) },
    ],
  );
  const pools = view.funds?.pools ?? [];
  const pool = (field: "totalDeposited" | "totalClaimable" | "totalClaimed") =>
    pools.map((p) => ({ labels: { pool: p.address }, value: Number(p[field]) }));
  family("psyche_pool_deposited", pool("totalDeposited"));
  family("psyche_pool_claimable_total", pool("totalClaimable"));
  family("psyche_pool_claimed_total", pool("totalClaimed"));
  family(
    "psyche_client_last_step",
    reporting.map((c) => ({ labels: client(c.key), value: c.lastStep! })),
  );
  family("psyche_witnesses_total", [{ value: view.totals.witnesses }]);
  family("psyche_rounds_total", [{ value: view.totals.rounds }]);
  family("psyche_epochs_total", [{ value: view.totals.epochs }]);
  family("psyche_epochs_unattested_total", [{ value: view.totals.unattestedEpochs }]);
  family("psyche_divergences_total", [{ value: view.totals.divergences }]);
  family("psyche_rejections_total", [{ value: view.totals.rejections }]);
  family("psyche_verifications_total", [
    { labels: { outcome: "failed" }, value: view.totals.failedVerifications },
    {
      labels: { outcome: "other" },
      value: view.totals.verifications - view.totals.failedVerifications,
    },
  ]);
  family("psyche_ejections_total", [{ value: view.totals.ejections }]);
  family(
    "psyche_run_phase_seconds",
    RUN_STATES.flatMap((state) => {
      const spent = view.phaseSeconds[state];
      return [
        { suffix: "_sum", labels: { state }, value: spent.sum },
        { suffix: "_count", labels: { state }, value: spent.count },
      ];
    }),
  );
  return prometheusText(METRICS, families);
}
