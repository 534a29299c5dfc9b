import assert from "node:assert/strict";
import { roundTimings, type TimedEvent, trafficPerRound } from "./round_overhead.ts";

const at = (ms: number) => new Date(ms).toISOString();

function change(ms: number, from: string, to: string, step: number, epoch = 0): TimedEvent {
  return {
    kind: "coordinator",
    event: { event: "state_changed", time: at(ms), from, to, epoch, step },
  };
}

function train(ms: number, step: number, epoch = 0): TimedEvent {
  return {
    kind: "client",
    event: { event: "train", time: new Date(ms).toISOString(), epoch, step },
  };
}

const options = { maxRoundTrainMs: 8000 };

Deno.test("roundTimings measures from the last trainer's result to the next RoundTrain", () => {
  const { rounds, skipped } = roundTimings([
    change(10_000, "Warmup", "RoundTrain", 1),
    train(10_400, 1),
    train(10_900, 1),
    train(10_650, 1),
    change(11_000, "RoundTrain", "RoundWitness", 1),
    change(12_300, "RoundWitness", "RoundTrain", 2),
    train(12_500, 2),
    change(12_540, "RoundTrain", "RoundWitness", 2),
    change(14_000, "RoundWitness", "RoundTrain", 3),
    // The last round has no next RoundTrain yet: not counted.
    train(14_200, 3),
    change(14_300, "RoundTrain", "RoundWitness", 3),
  ], options);
  assert.deepEqual(skipped, []);
  assert.deepEqual(rounds, [
    {
      epoch: 0,
      step: 1,
      trainers: 3,
      toWitnessMs: 100,
      witnessWindowMs: 1300,
      totalMs: 1400,
      trainPhaseMs: 1000,
    },
    {
      epoch: 0,
      step: 2,
      trainers: 1,
      toWitnessMs: 40,
      witnessWindowMs: 1460,
      totalMs: 1500,
      trainPhaseMs: 240,
    },
  ]);
});

Deno.test("roundTimings leaves out rounds closed by the timer or before the last result", () => {
  const { rounds, skipped } = roundTimings([
    change(0, "Warmup", "RoundTrain", 1),
    train(500, 1),
    change(8_000, "RoundTrain", "RoundWitness", 1),
    change(9_000, "RoundWitness", "RoundTrain", 2),
    train(9_500, 2),
    train(9_900, 2),
    change(9_800, "RoundTrain", "RoundWitness", 2),
    change(11_000, "RoundWitness", "RoundTrain", 3),
    change(11_500, "RoundTrain", "RoundWitness", 3),
    change(13_000, "RoundWitness", "RoundTrain", 4),
  ], options);
  assert.deepEqual(rounds, []);
  assert.deepEqual(skipped.map((s) => [s.step, s.reason]), [
    [1, "closed by the train timer after 8000 ms"],
    [2, "closed before the last result"],
    [3, "no client trained the step"],
  ]);
});

Deno.test("roundTimings tells epochs apart and ignores a round ending in Cooldown", () => {
  const { rounds } = roundTimings([
    change(0, "Warmup", "RoundTrain", 1, 0),
    train(100, 1, 0),
    change(200, "RoundTrain", "RoundWitness", 1, 0),
    change(1_000, "RoundWitness", "Cooldown", 2, 0),
    change(3_000, "Warmup", "RoundTrain", 2, 1),
    train(3_100, 1, 0), // a stale step-1 result of epoch 0 must not count for epoch 1
    train(3_300, 2, 1),
    change(3_400, "RoundTrain", "RoundWitness", 2, 1),
    change(4_400, "RoundWitness", "RoundTrain", 3, 1),
  ], options);
  assert.deepEqual(rounds.map((r) => [r.epoch, r.step, r.totalMs]), [[1, 2, 1100]]);
});

Deno.test("roundTimings names the field of a malformed event", () => {
  assert.throws(
    () => roundTimings([{ kind: "client", event: { event: "train", epoch: 0, step: 1 } }], options),
    /train event .*"time" must be an ISO-8601 time, found undefined/,
  );
  assert.throws(
    () =>
      roundTimings([{
        kind: "coordinator",
        event: { event: "state_changed", time: "yesterday", from: "A", to: "B", epoch: 0, step: 0 },
      }], options),
    /"time" must be an ISO-8601 time, found "yesterday"/,
  );
});

Deno.test("trafficPerRound takes each client's deltas between round starts, first rounds left out", () => {
  const traffic = (label: string, sent: number, received: number, gossip: number) => ({
    label,
    event: {
      event: "traffic",
      bytes_sent: sent,
      bytes_received: received,
      gossip_delivered: gossip,
    },
  });
  const rounds = trafficPerRound([
    traffic("client-1", 0, 0, 0),
    traffic("client-2", 5, 5, 1),
    traffic("client-1", 1000, 9000, 4), // round 1: joining, left out
    { label: "client-1", event: { event: "train" } },
    traffic("client-1", 1100, 9300, 7),
    traffic("client-2", 55, 505, 4), // its round 1: left out
    traffic("client-1", 1250, 9500, 9),
    {
      label: "client-1",
      event: { ...traffic("c", 1250, 9500, 9).event, coordinator_bytes_received: 70 },
    },
    {
      label: "client-1",
      event: { ...traffic("c", 1300, 9600, 10).event, coordinator_bytes_received: 100 },
    },
  ]);
  assert.deepEqual(rounds, [
    { label: "client-1", sentBytes: 100, receivedBytes: 300, gossip: 3 },
    { label: "client-1", sentBytes: 150, receivedBytes: 200, gossip: 2 },
    { label: "client-1", sentBytes: 0, receivedBytes: 0, gossip: 0 },
    { label: "client-1", sentBytes: 50, receivedBytes: 100, gossip: 1, coordinatorBytes: 30 },
  ]);
  assert.throws(
    () => trafficPerRound([traffic("a", 0, 0, 0), { label: "a", event: { event: "traffic" } }], 0),
    /"bytes_sent" must be a number/,
  );
});
