/**
 * Round overhead of a testnet, computed from its JSON events (pure: no clock, no I/O).
 *
 * A round's overhead is the time from the moment its last result is available to the moment
 * the coordinator starts the next round:
 *
 * - "last result available" is the latest `train` event of the step among the clients. A
 *   client logs `train` right after it has published its result's announcement on gossip
 *   (`client.ts`, `#train`: `publishResult`, then the log line), so it marks the moment the
 *   payload can be fetched by everyone. Its timestamp is the client's `time`.
 * - "next round's start" is the coordinator's `StateChanged` event `RoundWitness -> RoundTrain`
 *   (its `time`, ISO-8601 with milliseconds).
 *
 * In between lie two parts, reported apart: from the last result to the coordinator's
 * `RoundTrain -> RoundWitness` (every client downloads and checks the payloads, the witnesses
 * send their reports, the quorum closes the round: the protocol's own cost), then the
 * witness window (`round_witness_time`, timed to the millisecond by the coordinator, which
 * ticks at the window's deadline), which is configured waiting rather than overhead.
 *
 * All processes run on one machine, so their wall clocks are the same clock.
 *
 * @module
 */

/** One JSON event of one testnet process (what `Testnet`'s `onEvent` hands over). */
export interface TimedEvent {
  readonly kind: "coordinator" | "client" | "testnet";
  readonly event: Record<string, unknown>;
}

/** The timings of one completed round, in milliseconds. */
export interface RoundTiming {
  readonly epoch: number;
  /** The step the round trained. */
  readonly step: number;
  /** Clients that reported a result (`train`) for the step. */
  readonly trainers: number;
  /** Last result → `RoundTrain -> RoundWitness` (the protocol's cost). */
  readonly toWitnessMs: number;
  /** `RoundTrain -> RoundWitness` → the next `RoundTrain` (the witness window). */
  readonly witnessWindowMs: number;
  /** Last result → the next `RoundTrain` (the whole overhead). */
  readonly totalMs: number;
  /** How long the round's `RoundTrain` lasted. */
  readonly trainPhaseMs: number;
}

/** Rounds kept and rounds left out, with the reason for each left out. */
export interface RoundTimings {
  readonly rounds: RoundTiming[];
  readonly skipped: { readonly epoch: number; readonly step: number; readonly reason: string }[];
}

interface StateChange {
  readonly atMs: number;
  readonly from: string;
  readonly to: string;
  readonly epoch: number;
  readonly step: number;
}

function num(event: Record<string, unknown>, key: string, what: string): number {
  const value = event[key];
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new TypeError(
      `${what} event ${JSON.stringify(event)}: "${key}" must be a number, found ${
        JSON.stringify(value)
      }`,
    );
  }
  return value;
}

/** An event's `time` (ISO-8601, docs/logs.md) in milliseconds; a TypeError naming it if not. */
function timeOf(event: Record<string, unknown>, what: string): number {
  const time = event.time;
  const atMs = typeof time === "string" ? Date.parse(time) : NaN;
  if (!Number.isFinite(atMs)) {
    throw new TypeError(
      `${what} event ${JSON.stringify(event)}: "time" must be an ISO-8601 time, found ${
        JSON.stringify(time)
      }`,
    );
  }
  return atMs;
}

function stateChange(event: Record<string, unknown>): StateChange {
  return {
    atMs: timeOf(event, "state_changed"),
    from: String(event.from),
    to: String(event.to),
    epoch: num(event, "epoch", "state_changed"),
    step: num(event, "step", "state_changed"),
  };
}

/**
 * Per-round overhead from a testnet's events (any order of arrival). A round counts when its
 * `RoundTrain -> RoundWitness` and the following `RoundWitness -> RoundTrain` were both seen
 * and at least one client trained its step. Rounds are left out (with the reason) when the
 * round was closed by the train timer (`RoundTrain` lasted `maxRoundTrainMs` or longer) or
 * before its last result (a late trainer), since neither measures witnessing.
 *
 * @example
 * ```ts
 * import { roundTimings } from "./round_overhead.ts";
 * const at = (ms: number) => new Date(ms).toISOString();
 * const { rounds } = roundTimings([
 *   { kind: "coordinator", event: { event: "state_changed", time: at(1000), from: "Warmup", to: "RoundTrain", epoch: 0, step: 1 } },
 *   { kind: "client", event: { event: "train", time: at(1500), epoch: 0, step: 1 } },
 *   { kind: "coordinator", event: { event: "state_changed", time: at(1600), from: "RoundTrain", to: "RoundWitness", epoch: 0, step: 1 } },
 *   { kind: "coordinator", event: { event: "state_changed", time: at(2700), from: "RoundWitness", to: "RoundTrain", epoch: 0, step: 2 } },
 * ], { maxRoundTrainMs: 8000 });
 * if (rounds[0].totalMs !== 1200 || rounds[0].toWitnessMs !== 100) throw new Error("wrong");
 * ```
 */
export function roundTimings(
  events: readonly TimedEvent[],
  options: { maxRoundTrainMs: number },
): RoundTimings {
  const changes: StateChange[] = [];
  const lastTrain = new Map<string, { atMs: number; trainers: number }>();
  for (const { kind, event } of events) {
    if (kind === "coordinator" && event.event === "state_changed") {
      changes.push(stateChange(event));
    } else if (kind === "client" && event.event === "train") {
      const key = `${num(event, "epoch", "train")}:${num(event, "step", "train")}`;
      const atMs = timeOf(event, "train");
      const seen = lastTrain.get(key);
      lastTrain.set(key, {
        atMs: Math.max(atMs, seen?.atMs ?? -Infinity),
        trainers: (seen?.trainers ?? 0) + 1,
      });
    }
  }
  changes.sort((a, b) => a.atMs - b.atMs);
  const rounds: RoundTiming[] = [];
  const skipped: RoundTimings["skipped"][number][] = [];
  for (const [i, toWitness] of changes.entries()) {
    if (toWitness.from !== "RoundTrain" || toWitness.to !== "RoundWitness") continue;
    const start = changes.slice(0, i).findLast((c) => c.to === "RoundTrain");
    const next = changes[i + 1];
    if (start === undefined || next === undefined || next.to !== "RoundTrain") continue;
    const { epoch, step } = toWitness;
    const train = lastTrain.get(`${epoch}:${step}`);
    if (train === undefined) {
      skipped.push({ epoch, step, reason: "no client trained the step" });
      continue;
    }
    const trainPhaseMs = toWitness.atMs - start.atMs;
    if (trainPhaseMs >= options.maxRoundTrainMs) {
      skipped.push({ epoch, step, reason: `closed by the train timer after ${trainPhaseMs} ms` });
      continue;
    }
    if (train.atMs > toWitness.atMs) {
      skipped.push({ epoch, step, reason: "closed before the last result" });
      continue;
    }
    rounds.push({
      epoch,
      step,
      trainers: train.trainers,
      toWitnessMs: toWitness.atMs - train.atMs,
      witnessWindowMs: next.atMs - toWitness.atMs,
      totalMs: next.atMs - train.atMs,
      trainPhaseMs,
    });
  }
  return { rounds, skipped };
}

/** One client's traffic over one round, from its consecutive `traffic` events. */
export interface RoundTraffic {
  /** The client (its testnet label). */
  readonly label: string;
  readonly sentBytes: number;
  readonly receivedBytes: number;
  /** Gossip messages delivered to it. */
  readonly gossip: number;
  /** Bytes it read from a TCP coordinator (states, answers), when it logged them. */
  readonly coordinatorBytes?: number;
}

/**
 * Every client's traffic per round: a client logs `traffic` (its running totals) at each
 * RoundTrain start, so consecutive events bound one round. Each client's first `skip` rounds
 * are left out (joining: the first rounds carry the model download and connection setup).
 */
export function trafficPerRound(
  events: readonly { readonly label?: string; readonly event: Record<string, unknown> }[],
  skip = 1,
): RoundTraffic[] {
  const byClient = new Map<string, Record<string, unknown>[]>();
  for (const { label, event } of events) {
    if (event.event !== "traffic" || label === undefined) continue;
    byClient.set(label, [...(byClient.get(label) ?? []), event]);
  }
  const out: RoundTraffic[] = [];
  for (const [label, seen] of byClient) {
    for (let i = 1 + skip; i < seen.length; i++) {
      const delta = (key: string) =>
        num(seen[i], key, "traffic") - num(seen[i - 1], key, "traffic");
      const fromCoordinator = "coordinator_bytes_received" in seen[i] &&
          "coordinator_bytes_received" in seen[i - 1]
        ? { coordinatorBytes: delta("coordinator_bytes_received") }
        : {};
      out.push({
        label,
        sentBytes: delta("bytes_sent"),
        receivedBytes: delta("bytes_received"),
        gossip: delta("gossip_delivered"),
        ...fromCoordinator,
      });
    }
  }
  return out;
}
