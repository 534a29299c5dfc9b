/**
 * What the coordinator server reports: the host's events (state changes, joins, leaves,
 * witnesses) plus the edge's own (listening, connections refused, state saved, data
 * server), rendered as one human line each (`--logs console`) or one JSON object per line
 * (`--logs json`, for log collectors and tests).
 *
 * @module
 */
import type { EpochEndCause, HostEvent } from "./host.ts";
import type { Checkpoint, EjectionCause } from "../core/mod.ts";
import { fromSnakeCase, type LogLevel, logLine, snakeCase } from "../../cli/entry.ts";

/** Everything the server reports. */
export type ServerEvent =
  | HostEvent
  | {
    kind: "Listening";
    address: string;
    runId: string;
    runState: string;
    epoch: number;
    step: number;
  }
  | { kind: "Connected"; client: string; peer: string }
  | { kind: "ConnectionRefused"; peer: string; client: string | null; reason: string }
  /** The server closed a connection it had accepted: idle non-member, or evicted at the cap. */
  | { kind: "ConnectionClosed"; peer: string; client: string | null; reason: string }
  /** A connection went over its rate: the server stops reading it for `waitMs`. */
  | {
    kind: "Throttled";
    peer: string;
    client: string;
    limit: "messages" | "bytes";
    waitMs: number;
  }
  | { kind: "Saved"; path: string; step: number }
  | { kind: "SaveFailed"; path: string; reason: string }
  | { kind: "DataServer"; address: string; sequences: number }
  /** The live dashboard and `/metrics` listen at `url` (`--dashboard-port`). */
  | { kind: "Dashboard"; url: string }
  /** The run's circuit relay (`--relay`) listens at `addresses`, for `reservations` clients. */
  | { kind: "Relay"; addresses: string[]; reservations: number }
  | { kind: "DataRefused"; client: string; start: number; end: number; reason: string }
  | { kind: "Stopped" };

/** `--logs` formats. */
export const LOG_FORMATS = ["console", "json"] as const;
/** One of {@linkcode LOG_FORMATS}. */
export type LogFormat = typeof LOG_FORMATS[number];

/** The first 8 hex digits of a key, enough to tell clients apart in a human log. */
function short(key: string): string {
  return key.length > 8 ? `${key.slice(0, 8)}…` : key;
}

function describeRepo(repo: Checkpoint): string {
  switch (repo.kind) {
    case "Ephemeral":
      return "Ephemeral";
    case "Dummy":
    case "Hub":
    case "P2P":
      return `${repo.kind} ${repo.repo.repoId}${
        repo.repo.revision === null ? "" : `@${repo.repo.revision}`
      }`;
    case "Gcs":
    case "P2PGcs":
      return `${repo.kind} gs://${repo.repo.bucket}${
        repo.repo.prefix === null ? "" : `/${repo.repo.prefix}`
      }`;
  }
}

/**
 * One human-readable line for `event`.
 *
 * @example
 * ```ts
 * import { formatEvent } from "./log.ts";
 * const line = formatEvent({
 *   kind: "StateChanged", from: "Warmup", to: "RoundTrain", epoch: 0, step: 1,
 * });
 * if (line !== "state    Warmup -> RoundTrain (epoch 0, step 1)") throw new Error(line);
 * ```
 */
export function formatEvent(event: ServerEvent): string {
  switch (event.kind) {
    case "StateChanged":
      return `state    ${event.from} -> ${event.to} (epoch ${event.epoch}, step ${event.step})`;
    case "EpochEnd":
      return `epoch    ended ${EPOCH_END_CAUSES[event.cause]}` +
        `, now epoch ${event.epoch} at step ${event.step}`;
    case "Joined":
      return `join     ${short(event.client)} (${event.pending} pending)`;
    case "JoinRefused":
      return `refuse   ${short(event.client)}: ${event.reason}`;
    case "Left":
      return `leave    ${short(event.client)}${
        event.withdrawn ? " (withdrawn from the epoch)" : ""
      }`;
    case "Kicked":
      return `kick     ${short(event.client)} left the epoch ${event.state}; must join again`;
    case "BackedOff":
      return `backoff  ${short(event.client)} ${
        event.cause === "HealthCheck" ? "dropped by a health check" : "silent elected witness"
      } in epoch ${event.epoch}; may join again from epoch ${event.until}`;
    case "JoinDeferred":
      return `defer    ${short(event.client)} joined; ${event.reason}`;
    case "HeldByBars":
      return `held     ${event.joined} clients joined, init_min_clients is ${event.initMinClients}, ` +
        `but back-offs and bars leave ${event.eligible} free to start the epoch; waiting ` +
        `${event.liftsInSeconds} s more lifts enough of them (each epoch_time waited counts as ` +
        "an epoch)";
    case "WarmupWitness":
      return `warmup   ${short(event.client)} (client ${event.index}) has the model${
        digestNote(event.digest)
      }`;
    case "CooldownWitness":
      return `cooldown ${short(event.client)} (client ${event.index}) reported its parameters${
        digestNote(event.digest)
      }`;
    case "DigestRecorded":
      return `digest   step ${event.step}: parameters ${
        event.digest.slice(0, 16)
      }… (a quorum agrees)`;
    case "Witness": {
      const m = event.metadata;
      return `witness  ${short(event.client)} (client ${event.index}) round ${event.height}, ` +
        `step ${m.step}: loss ${m.loss.toFixed(4)}, ${m.tokensPerSec.toFixed(0)} tok/s` +
        digestNote(event.digest);
    }
    case "RoundEnd": {
      const timer = event.trainTimedOut ? "; training ended by its timer" : "";
      const batches = event.batches === 0
        ? ""
        : `; ${event.untrainedBatches} of ${event.batches} batches of round ${
          event.height - 1
        } untrained`;
      return `round    ${event.height} ended at step ${event.step}: ${event.witnesses} ` +
        `witnesses (quorum ${event.quorum})${timer}${batches}`;
    }
    case "HealthCheck":
      return `health   ${short(event.client)} reported unhealthy clients, ${event.dropped} dropped`;
    case "Checkpoint":
      return `ckpt     ${short(event.client)} uploaded ${describeRepo(event.repo)}`;
    case "VerificationOpened":
      return `verify   ${short(event.trainer)}'s result of round ${event.height} (step ` +
        `${event.step}) ${event.stage === "Verify" ? "sampled" : "contested: tie-break"}; ` +
        `seats ${event.seats.map(short).join(", ")}`;
    case "VerificationReport":
      return `verify   ${short(event.client)} says ${event.verdict} for ${
        short(event.trainer)
      }'s ` +
        `result of round ${event.height}` +
        (event.verdict === "Fail" ? ` (${event.evidence}, ${event.detail} ppm)` : "");
    case "VerificationClosed":
      return `verify   ${short(event.trainer)}'s result of round ${event.height} ${event.outcome}` +
        ` (${event.passes} pass, ${event.fails} fail)`;
    case "Ejected":
      return `eject    ${short(event.client)} ${EJECTION_CAUSES[event.cause]}` +
        (event.evidence === "None" ? "" : ` (${event.evidence})`) +
        ` at step ${event.step}; barred until epoch ${event.barredUntil}`;
    case "Telemetry": {
      const t = event.telemetry;
      const ms = t.breakdownMs;
      return `telemetry ${short(event.client)} step ${t.step}: ${
        t.tokensPerSec.toFixed(0)
      } tok/s, ` +
        // The byte counts are the client's totals since it started, not this step's.
        `${t.bytesSent} B sent and ${t.bytesReceived} B received so far; train ` +
        `${ms.train.toFixed(0)} ms, ` +
        `encode ${ms.encode.toFixed(0)}, exchange ${ms.exchange.toFixed(0)}, apply ` +
        `${ms.apply.toFixed(0)}, wait ${ms.wait.toFixed(0)}`;
    }
    case "TelemetryDropped":
      return `drop     ${short(event.client)} telemetry of step ${event.step}: ${event.reason}`;
    case "Rejected":
      return event.late === true
        ? `late     ${short(event.client)} ${event.request}: ${event.message}`
        : `reject   ${short(event.client)} ${event.request}: ${event.code}: ${event.message}`;
    case "Listening":
      return `listening on ${event.address}: run "${event.runId}" ${event.runState}, ` +
        `epoch ${event.epoch}, step ${event.step}`;
    case "Connected":
      return `connect  ${short(event.client)} from ${event.peer}`;
    case "ConnectionRefused":
      return `refuse   ${
        event.client === null ? event.peer : short(event.client)
      }: ${event.reason}`;
    case "ConnectionClosed":
      return `close    ${
        event.client === null ? event.peer : `${short(event.client)} (${event.peer})`
      }: ${event.reason}`;
    case "Throttled":
      return `throttle ${short(event.client)} (${event.peer}) over its ${event.limit} rate; ` +
        `not read for ${event.waitMs} ms`;
    case "Saved":
      return `saved    step ${event.step} to ${event.path}`;
    case "SaveFailed":
      return `error    could not save ${event.path}: ${event.reason}`;
    case "DataServer":
      return `data     serving ${event.sequences} sequences on ${event.address}`;
    case "Dashboard":
      return `dashboard ${event.url} (metrics at ${event.url}/metrics)`;
    case "Relay":
      return `relay    members-only circuit relay for ${event.reservations} clients on ` +
        event.addresses.join(", ");
    case "DataRefused":
      return `data     refused ${short(event.client)} batch ${event.start}..${event.end}: ` +
        event.reason;
    case "Stopped":
      return "stopped";
    default: {
      const never: never = event;
      throw new TypeError(`Unknown server event ${JSON.stringify(never)}`);
    }
  }
}

/** ", parameters abcd…" for a reported digest, nothing for none. */
function digestNote(digest: string | null): string {
  return digest === null ? "" : `, parameters ${digest.slice(0, 12)}…`;
}

/** How an ejection reads in the human log, by cause. */
const EJECTION_CAUSES: Readonly<Record<EjectionCause, string>> = {
  FailedVerification: "failed verification",
  FalseAccusation: "accused an honest result",
  FalseVouch: "vouched for a failed result",
  IdleVerifier: "did not report as a verifier",
  IdleWitness: "did not report as a witness",
};

/** How an epoch's end reads in the human log, by cause. */
const EPOCH_END_CAUSES: Readonly<Record<EpochEndCause, string>> = {
  epoch_time: "after training (its time was up)",
  total_steps: "after training (the run reached total_steps)",
  pause: "after training (paused)",
  too_few_clients: "after training (too few clients left)",
  witness_quorum_lost: "early (its last round lacked a witness quorum)",
  no_witnesses: "unattested (no witness reported in its last round; all must join again)",
  warmup: "in Warmup (too few clients)",
  unknown: "after training",
};

/** How much each event matters in a log (docs/logs.md). */
export function eventLevel(event: ServerEvent): LogLevel {
  switch (event.kind) {
    case "SaveFailed":
      return "error";
    case "JoinRefused":
    case "Kicked":
    case "BackedOff":
    case "HealthCheck":
    case "TelemetryDropped":
    case "ConnectionRefused":
    case "Throttled":
    case "DataRefused":
    case "Ejected":
    case "HeldByBars":
      return "warn";
    case "Rejected":
      return event.late === true ? "info" : "warn";
    case "VerificationReport":
      return event.verdict === "Fail" ? "warn" : "info";
    case "VerificationClosed":
      return event.outcome === "failed" ? "warn" : "info";
    case "EpochEnd":
      return event.cause === "no_witnesses" || event.cause === "witness_quorum_lost"
        ? "warn"
        : "info";
    default:
      return "info";
  }
}

/** A field's name in the JSON log: snake_case, and a round's `height` is its `round`. */
function jsonKey(key: string): string {
  return key === "height" ? "round" : snakeCase(key);
}

function mapKeys(value: unknown, key: (k: string) => string): unknown {
  if (Array.isArray(value)) return value.map((v) => mapKeys(v, key));
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [key(k), mapKeys(v, key)]));
}

/**
 * `event` as one line of the JSON log schema (docs/logs.md): `{"time": ISO-8601, "level",
 * "event": snake_case kind, ...fields in snake_case}`.
 *
 * @example
 * ```ts
 * import { eventJson } from "./log.ts";
 * const line = eventJson({ kind: "Saved", path: "a.toml", step: 3 }, 0);
 * if (line !== '{"time":"1970-01-01T00:00:00.000Z","level":"info","event":"saved","path":"a.toml","step":3}') {
 *   throw new Error(line);
 * }
 * ```
 */
export function eventJson(event: ServerEvent, timeMs: number): string {
  const { kind, ...fields } = event;
  return logLine(
    timeMs,
    eventLevel(event),
    snakeCase(kind),
    mapKeys(fields, jsonKey) as Record<string, unknown>,
  );
}

/**
 * The {@link ServerEvent} a JSON log line's object describes (the inverse of {@link eventJson},
 * without `time` and `level`): how the testnet renders a coordinator's JSON as its human line.
 * Unchecked: the result is only as well formed as the line.
 */
export function eventFromJson(object: Readonly<Record<string, unknown>>): ServerEvent {
  const { event, time: _time, level: _level, ...fields } = object;
  const key = (k: string) => k === "round" ? "height" : fromSnakeCase(k);
  return {
    kind: fromSnakeCase(String(event), true),
    ...(mapKeys(fields, key) as Record<string, unknown>),
  } as ServerEvent;
}

/** A sink for server events in `format`, writing lines through `write` (default stdout). */
export function eventLogger(
  format: LogFormat,
  options: { write?: (line: string) => void; clock?: () => number } = {},
): (event: ServerEvent) => void {
  const write = options.write ?? ((line: string) => console.log(line));
  const clock = options.clock ?? Date.now;
  return format === "json"
    ? (event) => write(eventJson(event, clock()))
    : (event) => write(formatEvent(event));
}
