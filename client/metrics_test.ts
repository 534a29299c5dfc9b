import assert from "node:assert/strict";
import { RUN_STATES } from "../coordinator/core/mod.ts";
import {
  parsePrometheusText,
  sampleValue,
} from "../coordinator/dashboard/testing/prometheus_text.ts";
import {
  CLIENT_METRICS,
  clientMetricsText,
  type ClientMetricsView,
  initialClientMetrics,
  reduceClientMetrics,
} from "./metrics.ts";
import type { LoggedEvent } from "./tui/view.ts";

const KEY = "ab".repeat(32);

function state(run_state: string, step: number, round = 1): LoggedEvent {
  return { event: "state", fields: { run_state, epoch: 0, step, round, clients: 2 } };
}

function train(step: number, loss: number): LoggedEvent {
  return {
    event: "train",
    fields: {
      epoch: 0,
      step,
      batch: [0, 1],
      loss,
      tokens: 64,
      tokens_per_sec: 100 + step,
      ms: 1500,
      payload_bytes: 10,
      publish_ms: 250,
    },
  };
}

function apply(step: number): LoggedEvent {
  return {
    event: "apply",
    fields: {
      epoch: 0,
      step,
      applied: 2,
      untrained_batches: 0,
      untrained: [],
      rejected: [],
      lr: 1e-3,
      params_hash: "ff",
      params_step: step + 2,
      ms: 500,
    },
  };
}

/** A run seen by one client: events at one second apart. */
function fold(events: LoggedEvent[]): ClientMetricsView {
  return events.reduce((m, e, i) => reduceClientMetrics(m, e, i * 1000), initialClientMetrics("r"));
}

const RUN: LoggedEvent[] = [
  { event: "start", fields: { identity: KEY, run_id: "r", p2p_addresses: [], adapter: "webgpu" } },
  state("Warmup", 1, 0),
  {
    event: "model",
    fields: { folder: "m", weights: "seeded", params: 9, params_hash: "00", params_step: 1 },
  },
  state("RoundTrain", 1),
  {
    event: "traffic",
    fields: { bytes_sent: 10, bytes_received: 20, gossip_delivered: 1, peers: 1 },
  },
  train(1, 5.5),
  state("RoundWitness", 1),
  {
    event: "witness",
    fields: { step: 1, round: 1, participants: 2, commitments: 2, not_waited_for: [] },
  },
  state("RoundTrain", 2, 2),
  {
    event: "traffic",
    fields: { bytes_sent: 30, bytes_received: 50, gossip_delivered: 2, peers: 2 },
  },
  train(2, 4.5),
  apply(1),
];

Deno.test("a run's events become its step, loss, traffic and counters", () => {
  const scraped = parsePrometheusText(clientMetricsText(fold(RUN)));
  assert.equal(
    sampleValue(scraped, "psyche_client_info", { run_id: "r", client: "ab".repeat(8) }),
    1,
  );
  assert.equal(sampleValue(scraped, "psyche_client_step"), 2);
  assert.equal(sampleValue(scraped, "psyche_client_round"), 2);
  assert.equal(sampleValue(scraped, "psyche_client_epoch"), 0);
  assert.equal(sampleValue(scraped, "psyche_client_run_state", { state: "RoundTrain" }), 1);
  assert.equal(sampleValue(scraped, "psyche_client_run_state", { state: "Warmup" }), 0);
  assert.equal(sampleValue(scraped, "psyche_client_loss"), 4.5);
  assert.equal(sampleValue(scraped, "psyche_client_tokens_per_second"), 102);
  assert.equal(sampleValue(scraped, "psyche_client_last_trained_step"), 2);
  assert.equal(sampleValue(scraped, "psyche_client_params_step"), 3);
  assert.equal(sampleValue(scraped, "psyche_client_bytes_sent_total"), 30);
  assert.equal(sampleValue(scraped, "psyche_client_bytes_received_total"), 50);
  assert.equal(sampleValue(scraped, "psyche_client_peers"), 2);
  assert.equal(sampleValue(scraped, "psyche_client_rounds_trained_total"), 2);
  assert.equal(sampleValue(scraped, "psyche_client_rounds_witnessed_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_applies_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_in_sync"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_connected"), 1);
});

Deno.test("phase and run-state seconds sum what the events report", () => {
  const scraped = parsePrometheusText(clientMetricsText(fold(RUN)));
  assert.equal(sampleValue(scraped, "psyche_client_phase_seconds_sum", { phase: "train" }), 3);
  assert.equal(sampleValue(scraped, "psyche_client_phase_seconds_count", { phase: "train" }), 2);
  assert.equal(sampleValue(scraped, "psyche_client_phase_seconds_sum", { phase: "publish" }), 0.5);
  assert.equal(sampleValue(scraped, "psyche_client_phase_seconds_sum", { phase: "apply" }), 0.5);
  assert.equal(sampleValue(scraped, "psyche_client_phase_seconds_count", { phase: "apply" }), 1);
  // Warmup at 1 s, RoundTrain at 3 s, RoundWitness at 6 s, RoundTrain again at 8 s.
  assert.equal(sampleValue(scraped, "psyche_client_run_state_seconds_sum", { state: "Warmup" }), 2);
  assert.equal(
    sampleValue(scraped, "psyche_client_run_state_seconds_sum", { state: "RoundTrain" }),
    3,
  );
  assert.equal(
    sampleValue(scraped, "psyche_client_run_state_seconds_count", { state: "RoundTrain" }),
    1,
  );
  assert.equal(
    sampleValue(scraped, "psyche_client_run_state_seconds_sum", { state: "RoundWitness" }),
    2,
  );
  assert.equal(
    sampleValue(scraped, "psyche_client_run_state_seconds_count", { state: "Cooldown" }),
    0,
  );
});

Deno.test("a state logged again (a new round in the same state) keeps its start time", () => {
  const m = fold([state("RoundTrain", 1, 1), state("RoundTrain", 1, 1), state("Cooldown", 1, 1)]);
  assert.deepEqual(m.stateSeconds.RoundTrain, { sum: 2, count: 1 });
});

Deno.test("divergence, resync, reconnection, skipped states, refusals and lost relays are counted", () => {
  const m = fold([
    ...RUN,
    { event: "diverged", fields: { step: 3, params_hash: "aa", consensus: "bb", reason: "x" } },
  ]);
  assert.equal(m.inSync, false);
  const after = fold([
    ...RUN,
    { event: "diverged", fields: { step: 3, params_hash: "aa", consensus: "bb", reason: "x" } },
    { event: "resynced", fields: { step: 5, params_hash: "bb", source: "peer" } },
    { event: "disconnected", fields: { address: "a", reason: "closed" } },
    { event: "reconnecting", fields: { address: "a", attempt: 1, delay_ms: 10, error: null } },
    { event: "reconnected", fields: { address: "a", attempts: 1 } },
    { event: "states_skipped", fields: { skipped: 6 } },
    { event: "states_skipped", fields: { skipped: 1 } },
    { event: "refused", fields: { what: "payload", reason: "size", from: KEY, detail: "" } },
    { event: "download_failed", fields: { step: 5, from: KEY, error: "timeout" } },
    { event: "error", fields: { what: "x", error: "y" } },
    { event: "relay_silent", fields: { relay: "12D3KooW", waited_ms: 3000 } },
  ]);
  const scraped = parsePrometheusText(clientMetricsText(after));
  assert.equal(sampleValue(scraped, "psyche_client_divergences_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_resyncs_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_in_sync"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_params_step"), 5);
  assert.equal(sampleValue(scraped, "psyche_client_reconnects_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_connected"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_states_skipped_total"), 7);
  assert.equal(sampleValue(scraped, "psyche_client_refused_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_download_failures_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_errors_total"), 1);
  assert.equal(sampleValue(scraped, "psyche_client_relays_given_up_total"), 1);
});

Deno.test("before any event: valid, every family declared, no step or loss yet", () => {
  const scraped = parsePrometheusText(clientMetricsText(initialClientMetrics('a "b"\\')));
  for (const [name, [type, help]] of Object.entries(CLIENT_METRICS)) {
    assert.equal(scraped.types.get(name), type, name);
    assert.equal(scraped.help.get(name), help, name);
  }
  assert.equal(sampleValue(scraped, "psyche_client_info", { run_id: 'a "b"\\' }), 1);
  assert.equal(sampleValue(scraped, "psyche_client_step"), undefined);
  assert.equal(sampleValue(scraped, "psyche_client_loss"), undefined);
  assert.equal(sampleValue(scraped, "psyche_client_bytes_sent_total"), 0);
  assert.equal(
    scraped.samples.filter((s) => s.name === "psyche_client_run_state" && s.value === 0).length,
    RUN_STATES.length,
  );
});
