/**
 * The client's event log: one human line per event (`console`, also used for `tui`), or one
 * JSON object per line (`json`) with snake_case fields, so tests and tools can follow a run:
 * state changes, training (loss, tokens/s), applied steps with the parameter hash, witness
 * and health-check reports, refused announcements and payloads, traffic, checkpoints.
 * The writer and the clock are injected.
 *
 * @module
 */

/** Every event the client logs, with its fields. */
export interface ClientEvents {
  start: { identity: string; run_id: string; p2p_addresses: string[]; adapter: string };
  state: { run_state: string; epoch: number; step: number; height: number; clients: number };
  model: { folder: string; weights: string; params: number; params_hash: string };
  train: {
    epoch: number;
    step: number;
    batch: [number, number];
    loss: number;
    tokens: number;
    tokens_per_sec: number;
    ms: number;
    payload_bytes: number;
  };
  apply: {
    epoch: number;
    /** The step whose results were applied. */
    step: number;
    applied: number;
    untrained_batches: number;
    untrained: [number, number][];
    lr: number;
    params_hash: string;
  };
  witness: { step: number; height: number; participants: number; commitments: number };
  warmup_witness: { epoch: number; index: number };
  health_check: { step: number; clients: string[] };
  refused: { what: string; reason: string; from: string; detail: string };
  download_failed: { step: number; from: string; error: string };
  traffic: { bytes_sent: number; bytes_received: number; gossip_delivered: number };
  checkpoint: { step: number; dir: string };
  error: { what: string; error: string };
  end: { reason: string };
}

/** An event name. */
export type ClientEventName = keyof ClientEvents;

/** Receives the client's events. */
export interface ClientLogger {
  log<K extends ClientEventName>(event: K, fields: ClientEvents[K]): void;
}

/** Output formats of `--logs`. */
export const LOG_FORMATS = ["tui", "console", "json"] as const;
/** One of {@link LOG_FORMATS}. */
export type LogFormat = typeof LOG_FORMATS[number];

/** One JSON object per line: `{"event": name, "time_ms": …, …fields}`. */
export function jsonClientLogger(
  write: (line: string) => void,
  clock: () => number = Date.now,
): ClientLogger {
  return {
    log(event, fields) {
      write(JSON.stringify({ event, time_ms: clock(), ...fields }));
    },
  };
}

const fmt = (x: number, digits = 4) => (Number.isFinite(x) ? x.toFixed(digits) : String(x));

/** The human line for an event. */
export function describeEvent<K extends ClientEventName>(event: K, f: ClientEvents[K]): string {
  const e = { event, ...f } as { [K in ClientEventName]: { event: K } & ClientEvents[K] }[
    ClientEventName
  ];
  switch (e.event) {
    case "start":
      return `client ${e.identity.slice(0, 12)}… joining run "${e.run_id}" on ${e.adapter}`;
    case "state":
      return `${e.run_state} (epoch ${e.epoch}, step ${e.step}, round ${e.height}, ${e.clients} clients)`;
    case "model":
      return `model from ${e.folder} (${e.weights}, ${e.params} parameters, hash ${
        e.params_hash.slice(0, 12)
      })`;
    case "train":
      return `trained step ${e.step} batch [${e.batch[0]}, ${e.batch[1]}]: loss ${fmt(e.loss)}, ${
        fmt(e.tokens_per_sec, 0)
      } tokens/s, payload ${e.payload_bytes} bytes`;
    case "apply":
      return `applied step ${e.step}: ${e.applied} results, ${e.untrained_batches} untrained, ` +
        `params ${e.params_hash.slice(0, 12)}`;
    case "witness":
      return `witnessed step ${e.step}: ${e.participants} trainers, ${e.commitments} commitments`;
    case "warmup_witness":
      return `ready for epoch ${e.epoch} (index ${e.index})`;
    case "health_check":
      return `health check at step ${e.step}: ${e.clients.length} unhealthy`;
    case "refused":
      return `refused ${e.what} from ${e.from.slice(0, 12)}…: ${e.reason} (${e.detail})`;
    case "download_failed":
      return `payload of step ${e.step} from ${e.from.slice(0, 12)}… failed: ${e.error}`;
    case "traffic":
      return `sent ${e.bytes_sent} bytes, received ${e.bytes_received} bytes`;
    case "checkpoint":
      return `checkpoint of step ${e.step} written to ${e.dir}`;
    case "error":
      return `error in ${e.what}: ${e.error}`;
    case "end":
      return `stopped: ${e.reason}`;
    default: {
      const unreachable: never = e;
      return JSON.stringify(unreachable);
    }
  }
}

/** One human line per event, prefixed with the time. */
export function consoleClientLogger(
  write: (line: string) => void,
  clock: () => number = Date.now,
): ClientLogger {
  return {
    log(event, fields) {
      write(`${new Date(clock()).toISOString()} ${describeEvent(event, fields)}`);
    },
  };
}
