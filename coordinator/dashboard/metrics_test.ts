import assert from "node:assert/strict";
import { RUN_STATES } from "../core/mod.ts";
import type { ServerEvent } from "../server/mod.ts";
import { escapeLabel, METRICS, metricsText } from "./metrics.ts";
import { parsePrometheusText, sampleValue } from "./testing/prometheus_text.ts";
import { type DashboardView, emptyView, reduceEvent } from "./view.ts";

const A = "aa".repeat(32);
const B = "bb".repeat(32);

function witness(client: string, step: number, loss: number, digest: string) {
  return {
    kind: "Witness",
    client,
    index: 0,
    height: step,
    metadata: {
      step,
      tokensPerSec: 150 + step,
      bandwidthPerSec: 0,
      loss,
      evals: client === A ? [{ name: "arc_easy_acc_norm", value: 0.375 }] : [],
      promptResults: [],
      promptIndex: 0,
      efficiency: 1,
    },
    digest,
  } satisfies ServerEvent;
}

function runView(): DashboardView {
  const events: ServerEvent[] = [
    { kind: "Listening", address: "x", runId: 'run "q"\\', runState: "Warmup", epoch: 0, step: 1 },
    { kind: "StateChanged", from: "Warmup", to: "RoundTrain", epoch: 0, step: 1 },
    witness(A, 1, 5.5, "11".repeat(32)),
    witness(B, 1, 4.5, "22".repeat(32)),
    { kind: "DigestRecorded", step: 1, digest: "11".repeat(32) },
    { kind: "StateChanged", from: "RoundTrain", to: "RoundWitness", epoch: 0, step: 1 },
    {
      kind: "Telemetry",
      client: A,
      telemetry: {
        step: 1,
        bytesSent: 1_000_000,
        bytesReceived: 3_000_000,
        tokensPerSec: 160,
        breakdownMs: { train: 800, encode: 20, exchange: 300, apply: 40, wait: 10 },
      },
    },
  ];
  return events.reduce((v, e, i) => reduceEvent(v, e, i * 500), emptyView());
}

Deno.test("metrics parse as Prometheus text and carry the run's numbers", () => {
  const scraped = parsePrometheusText(metricsText(runView()));
  assert.equal(sampleValue(scraped, "psyche_coordinator_info", { run_id: 'run "q"\\' }), 1);
  assert.equal(sampleValue(scraped, "psyche_coordinator_step"), 1);
  assert.equal(sampleValue(scraped, "psyche_run_state", { state: "RoundWitness" }), 1);
  assert.equal(sampleValue(scraped, "psyche_run_state", { state: "RoundTrain" }), 0);
  assert.equal(sampleValue(scraped, "psyche_loss", { client: "aa".repeat(8) }), 5.5);
  assert.equal(sampleValue(scraped, "psyche_loss", { client: "bb".repeat(8) }), 4.5);
  assert.equal(sampleValue(scraped, "psyche_loss_mean"), 5);
  assert.equal(sampleValue(scraped, "psyche_tokens_per_second", { client: "aa".repeat(8) }), 160);
  assert.equal(sampleValue(scraped, "psyche_tokens_per_second", { client: "bb".repeat(8) }), 151);
  assert.equal(
    sampleValue(scraped, "psyche_eval", { client: "aa".repeat(8), name: "arc_easy_acc_norm" }),
    0.375,
  );
  assert.equal(scraped.samples.filter((s) => s.name === "psyche_eval").length, 1);
  const a = { client: "aa".repeat(8) };
  assert.equal(sampleValue(scraped, "psyche_reported_bytes_sent_total", a), 1_000_000);
  assert.equal(sampleValue(scraped, "psyche_reported_bytes_received_total", a), 3_000_000);
  assert.equal(sampleValue(scraped, "psyche_reported_step", a), 1);
  assert.equal(
    sampleValue(scraped, "psyche_reported_step_phase_milliseconds", { ...a, phase: "exchange" }),
    300,
  );
  assert.equal(
    sampleValue(scraped, "psyche_reported_bytes_sent_total", { client: "bb".repeat(8) }),
    undefined,
    "no notice from B",
  );
  assert.equal(
    sampleValue(scraped, "psyche_step_phase_mean_milliseconds", { phase: "train" }),
    800,
  );
  assert.equal(sampleValue(scraped, "psyche_client_last_step", { client: "bb".repeat(8) }), 1);
  assert.equal(sampleValue(scraped, "psyche_witnesses_total"), 2);
  assert.equal(sampleValue(scraped, "psyche_divergences_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_run_phase_seconds_sum", { state: "RoundTrain" }), 2);
  assert.equal(sampleValue(scraped, "psyche_run_phase_seconds_count", { state: "Warmup" }), 1);
  assert.equal(sampleValue(scraped, "psyche_coordinator_clients", { status: "Known" }), 2);
});

Deno.test("every family is declared, documented and typed as METRICS says", () => {
  const scraped = parsePrometheusText(metricsText(runView()));
  for (const [name, [type, help]] of Object.entries(METRICS)) {
    assert.equal(scraped.types.get(name), type, name);
    assert.equal(scraped.help.get(name), help, name);
  }
  assert.equal(
    scraped.samples.filter((s) => s.name === "psyche_run_state").length,
    RUN_STATES.length,
  );
});

Deno.test("earned points are a gauge per client that has them", () => {
  const view = runView();
  const withPoints: DashboardView = {
    ...view,
    clients: view.clients.map((c) => ({ ...c, earned: c.key === A ? "333" : null })),
  };
  const scraped = parsePrometheusText(metricsText(withPoints));
  assert.equal(sampleValue(scraped, "psyche_earned_points", { client: "aa".repeat(8) }), 333);
  assert.equal(sampleValue(scraped, "psyche_earned_points", { client: "bb".repeat(8) }), undefined);
});

Deno.test("slashed points are a gauge per client that has them", () => {
  const view = runView();
  const withPoints: DashboardView = {
    ...view,
    clients: view.clients.map((c) => ({ ...c, slashed: c.key === A ? "7" : null })),
  };
  const scraped = parsePrometheusText(metricsText(withPoints));
  assert.equal(sampleValue(scraped, "psyche_slashed_points", { client: "aa".repeat(8) }), 7);
  assert.equal(
    sampleValue(scraped, "psyche_slashed_points", { client: "bb".repeat(8) }),
    undefined,
  );
});

Deno.test("an empty view is valid too, with no per-client samples", () => {
  const scraped = parsePrometheusText(metricsText(emptyView()));
  assert.equal(sampleValue(scraped, "psyche_loss"), undefined);
  assert.equal(sampleValue(scraped, "psyche_coordinator_info"), undefined);
  assert.equal(sampleValue(scraped, "psyche_divergences_total"), 0);
});

Deno.test("label values are escaped", () => {
  assert.equal(escapeLabel('a"b\\c\nd'), 'a\\"b\\\\c\\nd');
});

Deno.test("the reader refuses what Prometheus would", () => {
  assert.throws(() => parsePrometheusText("x 1\n"), /no # TYPE/);
  assert.throws(
    () => parsePrometheusText("# HELP x h\n# TYPE x gauge\nx 1\nx 2\n"),
    /appears twice/,
  );
  assert.throws(() => parsePrometheusText('# HELP x h\n# TYPE x gauge\nx{a="b} 1\n'), /labels/);
});

Deno.test("the treasury's and pools' balances are gauges and counters where the view has them", () => {
  const view: DashboardView = {
    ...runView(),
    funds: {
      treasury: { address: "T", mint: "M", vaultAmount: "5000", totalClaimed: "120" },
      pools: [{
        address: "P1",
        collateralMint: "C",
        rewardsMint: "M",
        totalDeposited: "900",
        totalClaimable: "300",
        totalClaimed: "100",
      }],
    },
  };
  const scraped = parsePrometheusText(metricsText(view));
  assert.equal(sampleValue(scraped, "psyche_treasury_vault_amount"), 5000);
  assert.equal(sampleValue(scraped, "psyche_treasury_claimed_total"), 120);
  assert.equal(sampleValue(scraped, "psyche_pool_deposited", { pool: "P1" }), 900);
  assert.equal(sampleValue(scraped, "psyche_pool_claimable_total", { pool: "P1" }), 300);
  assert.equal(sampleValue(scraped, "psyche_pool_claimed_total", { pool: "P1" }), 100);
  const tcp = parsePrometheusText(metricsText(runView()));
  assert.equal(sampleValue(tcp, "psyche_treasury_vault_amount"), undefined);
  assert.equal(sampleValue(tcp, "psyche_pool_deposited", { pool: "P1" }), undefined);
});
