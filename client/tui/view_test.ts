import assert from "node:assert/strict";
import {
  initialView,
  type LoggedEvent,
  LOSS_HISTORY,
  NOTICE_HISTORY,
  reduceView,
  type TuiView,
} from "./view.ts";

const start = () => initialView({ runId: "r", coordinator: "127.0.0.1:9000" });
const fold = (events: LoggedEvent[], view: TuiView = start(), t0 = 0) =>
  events.reduce((v, e, i) => reduceView(v, e, t0 + i * 1000), view);

const train = (step: number, loss: number): LoggedEvent => ({
  event: "train",
  fields: {
    epoch: 0,
    step,
    batch: [step, step + 1],
    loss,
    tokens: 64,
    tokens_per_sec: 100,
    ms: 640,
    payload_bytes: 10,
    publish_ms: 3,
  },
});
const traffic = (sent: number, received: number, peers = 1): LoggedEvent => ({
  event: "traffic",
  fields: { bytes_sent: sent, bytes_received: received, gossip_delivered: 0, peers },
});

Deno.test("view: starts from the command line, connecting, nothing trained", () => {
  const v = start();
  assert.equal(v.runId, "r");
  assert.equal(v.coordinator, "127.0.0.1:9000");
  assert.equal(v.connection, "connecting");
  assert.equal(v.run, null);
  assert.equal(v.lastTrain, null);
});

Deno.test("view: start → connected with the identity; state → the run's progress", () => {
  const v = fold([
    {
      event: "start",
      fields: { identity: "ab".repeat(32), run_id: "r", p2p_addresses: [], adapter: "webgpu" },
    },
    {
      event: "state",
      fields: { run_state: "RoundTrain", epoch: 1, step: 7, round: 3, clients: 4 },
    },
  ]);
  assert.equal(v.connection, "connected");
  assert.equal(v.identity, "ab".repeat(32));
  assert.deepEqual(v.run, { state: "RoundTrain", epoch: 1, step: 7, round: 3, clients: 4 });
});

Deno.test("view: train → the last step and the loss history, capped at LOSS_HISTORY", () => {
  const events = Array.from({ length: LOSS_HISTORY + 5 }, (_, i) => train(i + 1, i));
  const v = fold(events);
  assert.equal(v.lastTrain?.step, LOSS_HISTORY + 5);
  assert.equal(v.lastTrain?.loss, LOSS_HISTORY + 4);
  assert.equal(v.losses.length, LOSS_HISTORY);
  assert.equal(v.losses[0], 5);
});

Deno.test("view: traffic → totals, peers, and rates between two samples", () => {
  const one = fold([traffic(1000, 2000, 2)]);
  assert.equal(one.traffic?.sentPerSec, null);
  assert.equal(one.traffic?.peers, 2);
  const two = reduceView(one, traffic(5000, 4000, 3), 2000); // 2 s after the first (t=0)
  assert.equal(two.traffic?.sentPerSec, 2000);
  assert.equal(two.traffic?.receivedPerSec, 1000);
  assert.equal(two.traffic?.peers, 3);
  assert.equal(two.traffic?.bytesReceived, 4000);
});

Deno.test("view: apply → apply status and the model's new hash; witness → witness status", () => {
  const v = fold([
    {
      event: "model",
      fields: { folder: "m", weights: "seeded", params: 9, params_hash: "00", params_step: 0 },
    },
    {
      event: "witness",
      fields: { step: 3, round: 2, participants: 2, commitments: 2, not_waited_for: [] },
    },
    {
      event: "apply",
      fields: {
        epoch: 0,
        step: 3,
        applied: 2,
        untrained_batches: 1,
        untrained: [[0, 1]],
        rejected: [],
        lr: 1e-3,
        params_hash: "ff",
        params_step: 5,
        ms: 4,
      },
    },
  ]);
  assert.deepEqual(v.witness, { step: 3, participants: 2, commitments: 2 });
  assert.deepEqual(v.apply, { step: 3, applied: 2, untrained: 1, hash: "ff" });
  assert.deepEqual(v.model, { params: 9, hash: "ff", step: 5 });
  assert.equal(v.sync, "in sync");
});

Deno.test("view: diverged, waiting and resynced set whether the parameters are the run's", () => {
  const diverged = fold([
    {
      event: "diverged",
      fields: { step: 4, params_hash: "aa", consensus: "bb", reason: "hash differs" },
    },
  ]);
  assert.match(diverged.sync, /^diverged at step 4: hash differs/);
  const waiting = reduceView(diverged, {
    event: "waiting_for_model",
    fields: { step: 5, consensus: null, reason: "no source", retry_ms: 1000 },
  }, 0);
  assert.match(waiting.sync, /waiting for the model of step 5/);
  const back = reduceView(waiting, {
    event: "resynced",
    fields: { step: 6, params_hash: "cc", source: "peer" },
  }, 0);
  assert.match(back.sync, /^in sync/);
});

Deno.test("view: disconnected → reconnecting (attempt) → reconnected", () => {
  const a = fold([{ event: "disconnected", fields: { address: "h:1", reason: "EOF" } }]);
  assert.equal(a.connection, "disconnected");
  const b = reduceView(a, {
    event: "reconnecting",
    fields: { address: "h:1", attempt: 3, delay_ms: 100, error: null },
  }, 0);
  assert.equal(b.connection, "reconnecting (attempt 3)");
  const c = reduceView(b, { event: "reconnected", fields: { address: "h:1", attempts: 3 } }, 0);
  assert.equal(c.connection, "connected");
});

Deno.test("view: warnings and errors become notices with their time, the last NOTICE_HISTORY", () => {
  const events: LoggedEvent[] = Array.from({ length: NOTICE_HISTORY + 2 }, (_, i) => ({
    event: "error",
    fields: { what: `thing ${i}`, error: "broke" },
  }));
  const v = fold([train(1, 2), ...events], start(), 5000);
  assert.equal(v.notices.length, NOTICE_HISTORY);
  assert.deepEqual(v.notices.at(-1), {
    timeMs: 5000 + (NOTICE_HISTORY + 2) * 1000,
    level: "error",
    text: `error in thing ${NOTICE_HISTORY + 1}: broke`,
  });
  const warned = reduceView(v, {
    event: "refused",
    fields: { what: "payload", reason: "WrongStep", from: "ab".repeat(16), detail: "d" },
  }, 0);
  assert.equal(warned.notices.at(-1)?.level, "warn");
  // info events never become notices
  assert.equal(reduceView(warned, train(2, 1), 0).notices, warned.notices);
});

Deno.test("view: end → why the client stopped", () => {
  assert.equal(fold([{ event: "end", fields: { reason: "interrupted" } }]).ended, "interrupted");
});

Deno.test("view: a long phase shows how far it got until the model, or its checkpoint, is done", () => {
  const loading = fold([
    {
      event: "model_load",
      fields: { phase: "fetch", done_bytes: 2 ** 29, total_bytes: 2 ** 31, mb_per_sec: 50 },
    },
  ]);
  assert.equal(loading.activity, "fetching the model from peers: 0.50 of 2.00 GiB (25%), 50 MB/s");
  const warming = reduceView(loading, {
    event: "warmup_stage",
    fields: { stage: "second_step", sequences: 4 },
  }, 0);
  assert.match(warming.activity ?? "", /timing a second dry step of 4 sequences/);
  const loaded = reduceView(warming, {
    event: "model",
    fields: { folder: "f", weights: "seeded", params: 9, params_hash: "ff", params_step: 1 },
  }, 0);
  assert.equal(loaded.activity, null);
  const saving = reduceView(loaded, {
    event: "checkpoint_progress",
    fields: { step: 3, dir: "d", done_bytes: 1, total_bytes: 2, mb_per_sec: 1 },
  }, 0);
  assert.match(saving.activity ?? "", /^writing the checkpoint of step 3/);
  const saved = reduceView(saving, { event: "checkpoint", fields: { step: 3, dir: "d" } }, 0);
  assert.equal(saved.activity, null);
  const snapshotting = reduceView(saved, {
    event: "model_snapshot_progress",
    fields: { step: 4, phase: "digest", done_bytes: 1, total_bytes: 2, mb_per_sec: 1 },
  }, 0);
  assert.match(snapshotting.activity ?? "", /^snapshot of step 4: digesting the parameters/);
  const served = reduceView(snapshotting, {
    event: "model_snapshot",
    fields: {
      epoch: 0,
      step: 4,
      snapshot_dtype: "f32",
      rounded: false,
      params_hash: "ee",
      bytes: 8,
      ms: 1,
    },
  }, 0);
  assert.equal(served.activity, null);
});
