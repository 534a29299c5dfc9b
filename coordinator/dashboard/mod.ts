/**
 * The coordinator's live dashboard (`deno task coordinator run --dashboard-port P`): a pure
 * reducer from the server's events and state snapshots to a view model, rendered as a web
 * page with a live stream and as Prometheus metrics. See docs/dashboard.md.
 *
 * @module
 */
export { type ConfigView, type FundsView, type RunSnapshot, snapshotOf } from "./snapshot.ts";
export {
  type ClientStatus,
  type ClientView,
  type DashboardView,
  type DigestView,
  emptyView,
  type LossPoint,
  MAX_LOSS_POINTS,
  type MeanLossPoint,
  type Phase,
  reduceEvent,
  reduceSnapshot,
} from "./view.ts";
export { escapeLabel, METRICS, METRICS_CONTENT_TYPE, metricsText } from "./metrics.ts";
export { dashboardPage } from "./page.ts";
export {
  type DashboardOptions,
  type DashboardServer,
  PUSH_INTERVAL_MS,
  startDashboard,
} from "./server.ts";
