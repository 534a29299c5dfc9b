import assert from "node:assert/strict";
import type { ServerEvent } from "../server/mod.ts";
import type { RunSnapshot } from "./snapshot.ts";
import {
  type DashboardView,
  emptyView,
  MAX_BREAKDOWN_POINTS,
  MAX_LOSS_POINTS,
  MAX_TIMELINE,
  reduceEvent,
  reduceSnapshot,
} from "./view.ts";

const A = "aa".repeat(32);
const B = "bb".repeat(32);
const C = "cc".repeat(32);
const DIGEST = "d1".repeat(32);
const OTHER = "e2".repeat(32);

function witness(client: string, step: number, loss: number, digest: string | null = null) {
  return {
    kind: "Witness",
    client,
    index: 0,
    height: step,
    metadata: {
      step,
      tokensPerSec: 185,
      bandwidthPerSec: 0,
      loss,
      evals: [],
      promptResults: [],
      promptIndex: 0,
      efficiency: 1,
    },
    digest,
  } satisfies ServerEvent;
}

/** The view after `events`, the i-th seen at second i. */
function fold(events: ServerEvent[], view: DashboardView = emptyView()): DashboardView {
  return events.reduce((v, e, i) => reduceEvent(v, e, i * 1000), view);
}

function snapshot(overrides: Partial<RunSnapshot> = {}): RunSnapshot {
  return {
    runId: "run",
    runState: "RoundTrain",
    epoch: 0,
    step: 3,
    roundHeight: 2,
    clients: [],
    pending: [],
    config: {
      warmupTime: 15,
      cooldownTime: 5,
      maxRoundTrainTime: 20,
      roundWitnessTime: 2,
      epochTime: 100,
      totalSteps: 300,
      initMinClients: 1,
      minClients: 1,
      maxClients: 16,
      witnessNodes: 1,
      globalBatchSizeStart: 8,
      globalBatchSizeEnd: 8,
      verificationPercent: 0,
      architecture: "HfLlama",
      maxSeqLen: 128,
    },
    ...overrides,
  };
}

Deno.test("Listening starts the run's first phase; StateChanged ends it and starts the next", () => {
  const view = fold([
    {
      kind: "Listening",
      address: "x",
      runId: "r",
      runState: "WaitingForMembers",
      epoch: 0,
      step: 1,
    },
    { kind: "StateChanged", from: "WaitingForMembers", to: "Warmup", epoch: 0, step: 1 },
    { kind: "StateChanged", from: "Warmup", to: "RoundTrain", epoch: 0, step: 1 },
  ]);
  assert.equal(view.runId, "r");
  assert.equal(view.runState, "RoundTrain");
  assert.deepEqual(view.timeline.map((p) => [p.state, p.startMs, p.endMs]), [
    ["WaitingForMembers", 0, 1000],
    ["Warmup", 1000, 2000],
    ["RoundTrain", 2000, null],
  ]);
  assert.deepEqual(view.phaseSeconds.Warmup, { sum: 1, count: 1 });
  assert.deepEqual(view.phaseSeconds.RoundTrain, { sum: 0, count: 0 });
  assert.equal(view.updatedMs, 2000);
});

Deno.test("the timeline keeps the newest phases only", () => {
  const events: ServerEvent[] = [];
  for (let i = 0; i < MAX_TIMELINE + 10; i++) {
    const train = i % 2 === 0;
    events.push({
      kind: "StateChanged",
      from: train ? "RoundWitness" : "RoundTrain",
      to: train ? "RoundTrain" : "RoundWitness",
      epoch: 0,
      step: i,
    });
  }
  const view = fold(events);
  assert.equal(view.timeline.length, MAX_TIMELINE);
  assert.equal(view.timeline.at(-1)!.step, MAX_TIMELINE + 9);
  assert.equal(view.phaseSeconds.RoundTrain.count + view.phaseSeconds.RoundWitness.count, 73);
});

Deno.test("a witness report sets the client's step, loss and tokens/s, its curve and the mean", () => {
  const view = fold([witness(A, 1, 5.5), witness(B, 1, 5.0), witness(A, 2, 4.0)]);
  const a = view.clients.find((c) => c.key === A)!;
  assert.deepEqual([a.lastStep, a.loss, a.tokensPerSec, a.witnesses], [2, 4.0, 185, 2]);
  assert.deepEqual(view.loss[A], [{ step: 1, loss: 5.5 }, { step: 2, loss: 4.0 }]);
  assert.deepEqual(view.loss[B], [{ step: 1, loss: 5.0 }]);
  assert.deepEqual(view.meanLoss, [
    { step: 1, loss: 5.25, reports: 2 },
    { step: 2, loss: 4.0, reports: 1 },
  ]);
  assert.equal(view.totals.witnesses, 3);
});

Deno.test("a non-finite loss is not plotted", () => {
  const view = fold([witness(A, 1, NaN)]);
  assert.equal(view.loss[A], undefined);
  assert.deepEqual(view.meanLoss, []);
  assert.equal(view.clients[0].loss, null);
});

Deno.test("loss curves keep the newest points only", () => {
  const events = Array.from({ length: MAX_LOSS_POINTS + 5 }, (_, i) => witness(A, i + 1, 1));
  const view = fold(events);
  assert.equal(view.loss[A].length, MAX_LOSS_POINTS);
  assert.equal(view.loss[A][0].step, 6);
  assert.equal(view.meanLoss.length, MAX_LOSS_POINTS);
});

Deno.test("a digest that differs from the quorum's is a divergence, before or after the record", () => {
  const before = fold([
    witness(A, 4, 3, DIGEST),
    witness(B, 4, 3, OTHER),
    { kind: "DigestRecorded", step: 4, digest: DIGEST },
    witness(C, 4, 3, OTHER),
    witness(A, 5, 3, DIGEST),
  ]);
  assert.equal(before.totals.divergences, 2);
  assert.deepEqual(before.clients.map((c) => [c.key, c.divergences]), [[A, 0], [B, 1], [C, 1]]);
  assert.deepEqual(before.digests, [{ step: 4, digest: DIGEST, agreeing: 1, differing: 2 }]);
  assert.deepEqual(Object.keys(before.openDigests), ["5"]);
});

Deno.test("agreeing digests are no divergence", () => {
  const view = fold([
    witness(A, 4, 3, DIGEST),
    witness(B, 4, 3, DIGEST),
    { kind: "DigestRecorded", step: 4, digest: DIGEST },
  ]);
  assert.equal(view.totals.divergences, 0);
  assert.deepEqual(view.digests[0], { step: 4, digest: DIGEST, agreeing: 2, differing: 0 });
});

Deno.test("joins, leaves and kicks set a client's status; counters count", () => {
  const view = fold([
    { kind: "Joined", client: A, pending: 1 },
    { kind: "Joined", client: B, pending: 2 },
    { kind: "Left", client: A, withdrawn: false },
    { kind: "Kicked", client: B, state: "Dropped" },
    { kind: "JoinRefused", client: C, reason: "no" },
    {
      kind: "RoundEnd",
      height: 1,
      step: 2,
      witnesses: 1,
      quorum: 1,
      trainTimedOut: false,
      batches: 0,
      untrainedBatches: 0,
    },
    { kind: "EpochEnd", epoch: 1, step: 9, success: true, cause: "epoch_time" },
    { kind: "EpochEnd", epoch: 2, step: 9, success: true, cause: "no_witnesses" },
  ]);
  assert.deepEqual(view.clients.map((c) => [c.key, c.status]), [[A, "Left"], [B, "Dropped"]]);
  assert.deepEqual(view.totals, {
    witnesses: 0,
    rounds: 1,
    epochs: 2,
    unattestedEpochs: 1,
    divergences: 0,
    rejections: 1,
    joins: 2,
    verifications: 0,
    failedVerifications: 0,
    ejections: 0,
  });
  assert.deepEqual([view.epoch, view.step], [2, 9]);
});

Deno.test("events the view does not show leave it unchanged", () => {
  const view = emptyView();
  assert.equal(reduceEvent(view, { kind: "Saved", path: "p", step: 1 }, 5), view);
  assert.equal(reduceEvent(view, { kind: "Stopped" }, 5), view);
});

Deno.test("a snapshot sets progress, config and each client's health", () => {
  let view = fold([{ kind: "Joined", client: A, pending: 1 }, {
    kind: "Joined",
    client: C,
    pending: 2,
  }]);
  view = reduceSnapshot(
    view,
    snapshot({
      clients: [{ key: A, state: "Healthy" }, { key: B, state: "Withdrawn" }],
      pending: [],
    }),
    9000,
  );
  assert.deepEqual(view.clients.map((c) => [c.key, c.status]), [
    [A, "Healthy"],
    [C, "Left"],
    [B, "Withdrawn"],
  ]);
  assert.deepEqual([view.runId, view.runState, view.step, view.roundHeight], [
    "run",
    "RoundTrain",
    3,
    2,
  ]);
  assert.equal(view.config?.totalSteps, 300);
  assert.equal(view.timeline.at(-1)!.state, "RoundTrain");
  assert.equal(view.timeline.at(-1)!.startMs, 9000);
});

Deno.test("only events move the timeline once it started: each phase is counted once", () => {
  let view = reduceSnapshot(emptyView(), snapshot({ runState: "WaitingForMembers" }), 0);
  view = reduceEvent(view, {
    kind: "Listening",
    address: "x",
    runId: "run",
    runState: "WaitingForMembers",
    epoch: 0,
    step: 1,
  }, 500);
  // A burst: the snapshot after its first event already shows where the last one leads.
  const ahead = snapshot({ runState: "Warmup" });
  for (
    const [from, to] of [
      ["WaitingForMembers", "Warmup"],
      ["Warmup", "WaitingForMembers"],
      ["WaitingForMembers", "Warmup"],
    ] as const
  ) {
    view = reduceSnapshot(
      reduceEvent(view, { kind: "StateChanged", from, to, epoch: 0, step: 1 }, 1000),
      ahead,
      1000,
    );
  }
  assert.deepEqual(view.timeline.map((p) => p.state), [
    "WaitingForMembers",
    "Warmup",
    "WaitingForMembers",
    "Warmup",
  ]);
  assert.deepEqual(view.phaseSeconds.WaitingForMembers, { sum: 1, count: 2 });
  assert.deepEqual(view.phaseSeconds.Warmup, { sum: 0, count: 1 });
});

Deno.test("a later snapshot keeps each client's status current", () => {
  const first = reduceSnapshot(emptyView(), snapshot({ pending: [A] }), 1000);
  assert.equal(first.clients[0].status, "Pending");
  const again = reduceSnapshot(first, snapshot({ clients: [{ key: A, state: "Healthy" }] }), 2000);
  assert.equal(again.timeline.length, 1);
  assert.equal(again.clients[0].status, "Healthy");
});

Deno.test("earned points come from snapshots that carry them (Solana) and stay until the next", () => {
  const first = reduceSnapshot(emptyView(), snapshot({ pending: [A, B] }), 1000);
  assert.deepEqual(first.clients.map((c) => c.earned), [null, null], "the TCP server has none");
  const paid = reduceSnapshot(
    first,
    snapshot({
      clients: [{ key: A, state: "Healthy" }, { key: B, state: "Healthy" }],
      earned: { [A]: "18446744073709551615", [B]: "0" },
    }),
    2000,
  );
  assert.deepEqual(paid.clients.map((c) => c.earned), ["18446744073709551615", "0"]);
  const later = reduceSnapshot(paid, snapshot({ earned: { [B]: "333" } }), 3000);
  assert.deepEqual(later.clients.map((c) => c.earned), ["18446744073709551615", "333"]);
});

Deno.test("slashed points come from snapshots that carry them, beside the earned ones", () => {
  const first = reduceSnapshot(emptyView(), snapshot({ pending: [A, B] }), 1000);
  assert.deepEqual(first.clients.map((c) => c.slashed), [null, null], "the TCP server has none");
  const slashed = reduceSnapshot(
    first,
    snapshot({
      clients: [{ key: A, state: "Healthy" }, { key: B, state: "Dropped" }],
      earned: { [A]: "10", [B]: "10" },
      slashed: { [A]: "0", [B]: "5" },
    }),
    2000,
  );
  assert.deepEqual(slashed.clients.map((c) => [c.earned, c.slashed]), [["10", "0"], ["10", "5"]]);
  const later = reduceSnapshot(slashed, snapshot({ slashed: { [B]: "10" } }), 3000);
  assert.deepEqual(later.clients.map((c) => c.slashed), ["0", "10"], "kept until the next");
  assert.deepEqual(later.clients.map((c) => c.earned), ["10", "10"], "earned untouched");
});

function telemetry(client: string, step: number, trainMs: number, bytesSent = 1000) {
  return {
    kind: "Telemetry",
    client,
    telemetry: {
      step,
      bytesSent,
      bytesReceived: 2 * bytesSent,
      tokensPerSec: 400,
      breakdownMs: { train: trainMs, encode: 10, exchange: 50, apply: 20, wait: 4 },
    },
  } satisfies ServerEvent;
}

Deno.test("telemetry fills a client's traffic and rate, and the mean breakdown of each step", () => {
  const view = fold([
    witness(A, 2, 3.0),
    telemetry(A, 2, 100, 5000),
    telemetry(B, 2, 300),
    telemetry(A, 3, 120, 9000),
  ]);
  const a = view.clients.find((c) => c.key === A)!;
  assert.equal(a.bytesSent, 9000, "the latest notice's totals");
  assert.equal(a.bytesReceived, 18000);
  assert.equal(a.tokensPerSec, 400, "the notice's rate replaces the witness report's");
  assert.equal(a.telemetryStep, 3);
  assert.deepEqual(a.breakdownMs, { train: 120, encode: 10, exchange: 50, apply: 20, wait: 4 });
  assert.equal(a.witnesses, 1, "a notice is not a witness report");
  assert.deepEqual(view.breakdown, [
    { step: 2, reports: 2, train: 200, encode: 10, exchange: 50, apply: 20, wait: 4 },
    { step: 3, reports: 1, train: 120, encode: 10, exchange: 50, apply: 20, wait: 4 },
  ]);
  const dropped = reduceEvent(view, {
    kind: "TelemetryDropped",
    client: C,
    step: 9,
    reason: "the sender is not a member of the run",
  }, 9000);
  assert.equal(dropped.totals.rejections, view.totals.rejections + 1);
  assert.equal(dropped.clients.length, view.clients.length, "a dropped notice adds no client");
});

Deno.test("the breakdown keeps the newest steps only", () => {
  let view = emptyView();
  for (let step = 1; step <= MAX_BREAKDOWN_POINTS + 50; step++) {
    view = reduceEvent(view, telemetry(A, step, step), step);
  }
  assert.equal(view.breakdown.length, MAX_BREAKDOWN_POINTS);
  assert.equal(view.breakdown[0].step, 51);
  assert.equal(view.breakdown.at(-1)!.step, MAX_BREAKDOWN_POINTS + 50);
});

Deno.test("a witness report's evals are the client's until a report carries new ones", () => {
  const scored = witness(A, 3, 2.5);
  const withEvals = {
    ...scored,
    metadata: {
      ...scored.metadata,
      evals: [{ name: "hellaswag_acc_norm", value: 0.25 }, { name: "boolq_acc", value: NaN }],
    },
  };
  const view = fold([witness(A, 2, 3.0), withEvals, witness(A, 4, 2.4)]);
  const a = view.clients.find((c) => c.key === A)!;
  assert.deepEqual(a.evals, { hellaswag_acc_norm: 0.25 }, "kept, without the non-finite value");
  assert.equal(fold([witness(B, 1, 1)]).clients[0].evals, null);
});

Deno.test("the treasury's and pools' balances come from snapshots that carry them (Solana)", () => {
  const first = reduceSnapshot(emptyView(), snapshot(), 1000);
  assert.equal(first.funds, null, "the TCP server has none");
  const funds = {
    treasury: { address: "T", mint: "M", vaultAmount: "5000", totalClaimed: "120" },
    pools: [{
      address: "P",
      collateralMint: "C",
      rewardsMint: "M",
      totalDeposited: "900",
      totalClaimable: "300",
      totalClaimed: "100",
    }],
  };
  const shown = reduceSnapshot(first, snapshot({ funds }), 2000);
  assert.deepEqual(shown.funds, funds);
  assert.deepEqual(reduceSnapshot(shown, snapshot(), 3000).funds, funds, "kept until the next");
  const none = { treasury: null, pools: [] };
  assert.deepEqual(reduceSnapshot(shown, snapshot({ funds: none }), 4000).funds, none);
});
