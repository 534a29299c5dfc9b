/**
 * The client's event log: one human line per event (`console`, also used for `tui`), or one
 * JSON object per line (`json`) with snake_case fields, so tests and tools can follow a run:
 * state changes, training (loss, tokens/s), applied steps with the parameter hash, witness
 * and health-check reports, refused announcements and payloads, traffic, checkpoints.
 * The writer and the clock are injected.
 *
 * @module
 */
import { type LogLevel, logLine } from "../cli/entry.ts";
import { uploadProgressLine } from "../model/mod.ts";
import type { ModelLoadPhase, SnapshotPhase } from "./model_sharing/mod.ts";
import type { WarmUpStage } from "./trainer.ts";

/** Every event the client logs, with its fields. */
export interface ClientEvents {
  start: { identity: string; run_id: string; p2p_addresses: string[]; adapter: string };
  /** `--metrics-port`: where the Prometheus metrics are served (`url` ends in `/metrics`). */
  metrics: { url: string };
  state: { run_state: string; epoch: number; step: number; round: number; clients: number };
  model: {
    folder: string;
    weights: string;
    params: number;
    params_hash: string;
    /** The run step whose parameters these are. */
    params_step: number;
  };
  /** The model's memory plan (model/memory_plan.ts), before its buffers are made. */
  memory_plan: { fits: boolean; peak_bytes: number; lines: string[] };
  /**
   * A stage of the warm-up begins (NetworkTrainer.warmUp): `first_step` builds every GPU
   * pipeline with a dry step of `sequences` sequences, `second_step` times one, `apply` applies its
   * result to a scratch copy (θ is never written), digests θ and zeroes δ. Each takes seconds
   * to minutes for a 1B model.
   */
  warmup_stage: { stage: WarmUpStage; sequences: number };
  /** The GPU pipelines are built and a dry step ran: what a step costs on this machine. */
  warmup: {
    /** The first dry step: pipeline builds included. */
    first_step_ms: number;
    /** The second dry step: what a training step costs. */
    step_ms: number;
    /** `max_round_train_time` of the run. */
    allowed_ms: number;
  };
  /** The client's parameters are not the run's: it stops contributing until it resyncs. */
  diverged: {
    step: number;
    params_hash: string | null;
    consensus: string | null;
    reason: string;
  };
  /** After a divergence, the client holds the run's parameters again. */
  resynced: { step: number; params_hash: string; source: string };
  /** No source has the run's parameters yet; the client waits and retries. */
  waiting_for_model: { step: number; consensus: string | null; reason: string; retry_ms: number };
  train: {
    epoch: number;
    step: number;
    batch: [number, number];
    loss: number;
    tokens: number;
    tokens_per_sec: number;
    /** Forward, backward and DisTrO compression of the batch. */
    ms: number;
    payload_bytes: number;
    /** Encoding the payload and announcing it to the peers. */
    publish_ms: number;
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
    /** The run step whose parameters the apply produced (`step + 2`). */
    params_step: number;
    /**
     * Batches left out because their trainer's results of the round are rejected (ejected by
     * verification, or sampled after it left).
     */
    rejected: [number, number][];
    /** Applying the results (decode, aggregate, update) and hashing the parameters. */
    ms: number;
  };
  /**
   * As a seated verifier, this client checked `trainer`'s result of round `round` (step `step`)
   * and reported `verdict` to the coordinator (docs/protocol.md, "Verification"). `detail_ppm`
   * is the measurement; `note` says why there was no replay, when there was none.
   */
  verification: {
    step: number;
    round: number;
    trainer: string;
    stage: string;
    verdict: "Pass" | "Fail";
    evidence: string;
    detail_ppm: number;
    fetch_ms: number;
    replay_ms: number;
    note: string | null;
  };
  /**
   * A verification of round `round`'s result failed with `error` before giving a verdict (a data
   * server or peer that did not answer, a GPU error); the seat still owes its report, so it runs
   * again.
   */
  verification_retry: { round: number; attempt: number; error: string };
  /** The coordinator ejected this client (verification); it sits out until `barred_until`. */
  ejected: { epoch: number; step: number; cause: string; evidence: string; barred_until: number };
  /**
   * At Cooldown, the epoch's final parameters are served to the next epoch's joiners: `rounded`
   * when this client rounded its f32 masters to bf16 first (the run's `snapshot_dtype`), then
   * their digest and the bytes of the blobs served (bf16 tensors count 2 bytes per value).
   */
  /**
   * The snapshot of step `step` under way, before its `model_snapshot` (every 5 s and at the end
   * of each phase): the parameters read off the GPU, encoded into blobs, the blobs hashed (and
   * digested on the host first only by a caller without the GPU's digest).
   */
  model_snapshot_progress: {
    step: number;
    phase: SnapshotPhase;
    done_bytes: number;
    total_bytes: number;
    mb_per_sec: number;
  };
  model_snapshot: {
    epoch: number;
    /** The run step whose parameters these are (the next epoch's first). */
    step: number;
    snapshot_dtype: "f32" | "bf16";
    rounded: boolean;
    params_hash: string;
    bytes: number;
    /** Rounding, reading back, hashing and serving. */
    ms: number;
  };
  /**
   * A finished eval pass over one task (`--eval-tasks`), on the parameters of run step `step`:
   * its documents, `acc` and `acc_norm` (null where the task has none) with standard errors, the
   * chunks it took between rounds and the seconds since the pass began.
   */
  eval: {
    task: string;
    step: number;
    docs: number;
    acc: number;
    acc_stderr: number;
    acc_norm: number | null;
    acc_norm_stderr: number | null;
    chunks: number;
    seconds: number;
  };
  /**
   * The epoch's model on its way to the host, before its upload (every 5 s and at the end of
   * each phase): fetched from peers, downloaded from the Hub (a phase per weights file), read
   * from a folder, made by the seeded init, or digested to check it is the run's.
   */
  model_load: {
    phase: ModelLoadPhase;
    done_bytes: number;
    total_bytes: number;
    mb_per_sec: number;
  };
  /** The model's parameters going to the GPU (every 5 s and at the end), before its warm-up. */
  model_upload: { done_bytes: number; total_bytes: number; mb_per_sec: number };
  /** The eval tasks cannot be scored for this model (unreadable files, no tokenizer): off. */
  eval_disabled: { error: string };
  witness: {
    step: number;
    round: number;
    participants: number;
    commitments: number;
    /** p2p keys (hex) of the clients whose Finished this witness stopped waiting for. */
    not_waited_for: string[];
  };
  warmup_witness: { epoch: number; index: number };
  health_check_sent: { step: number; clients: string[] };
  refused: { what: string; reason: string; from: string; detail: string };
  download_failed: { step: number; from: string; error: string };
  /**
   * The coordinator refused an intent planned from a state it had already left (a request
   * that crossed a transition, or a backlog caught up on after a cut link): expected.
   */
  outdated: { what: string; error: string };
  /** Announcements gossip lost on the way, pulled from the peer that held them. */
  announcements_recovered: { step: number; from: string; count: number; why: string };
  /** A pull of a step's announcements failed (the peer is gone or unreachable; retried). */
  pull_failed: { step: number; from: string; error: string };
  /** A dial to a participant failed (logged again only when its error changes). */
  peer_unreachable: { peer: string; error: string };
  /** A connection to a participant opened: straight to it, or through a circuit relay. */
  peer_connected: { peer: string; via: "direct" | "relay"; address: string };
  /** This client's results missed `missed_rounds` rounds in a row (too slow for the run). */
  too_slow: { step: number; missed_rounds: number; note: string };
  /**
   * The run dropped this client from epoch `epoch` by a health check at step `step`: a quorum
   * of the witnesses did not receive its result in time.
   */
  dropped: { epoch: number; step: number; note: string };
  /** The state read from the coordinator ended `behind_s` seconds ago (once per epoch). */
  lagging: { epoch: number; step: number; behind_s: number; note: string };
  /** A relay could not be reached (logged again only when its error changes; retried). */
  relay_unreachable: { relay: string; error: string };
  /**
   * A relay's connection did not answer a probe within `waited_ms` and was given up (its
   * machine or link died without a reset: net/p2p/relay_probe.ts); it is dialled again.
   */
  relay_silent: { relay: string; waited_ms: number };
  /**
   * Whether a relay saw us from an address not ours (behind NAT), whether a peer's AutoNAT
   * dial-back reached one of our public addresses (`public`: we then relay for peers behind
   * NAT, `relaying_for` of them now), the relays we use and are connected to, and the addresses
   * our peers are told; logged at each change.
   */
  reachability: {
    behind_nat: boolean;
    public: boolean;
    relays: number;
    relays_connected: number;
    relaying_for: number;
    addresses: string[];
  };
  /**
   * Totals since start (`peers`: libp2p connections open now), logged at each RoundTrain;
   * `coordinator_bytes_received`: bytes read from a TCP coordinator (absent on other backends).
   */
  traffic: {
    bytes_sent: number;
    bytes_received: number;
    gossip_delivered: number;
    peers: number;
    coordinator_bytes_received?: number;
  };
  /**
   * A checkpoint of `step` being read off the GPU and written to `dir` (every 5 s and at the
   * end), before its `checkpoint` (or `saved_on_exit`: `step` null between two labelled points).
   */
  checkpoint_progress: {
    step: number | null;
    dir: string;
    done_bytes: number;
    total_bytes: number;
    mb_per_sec: number;
  };
  checkpoint: { step: number; dir: string };
  /**
   * With `--hub-repo`, at each Cooldown checkpoint: whether this client is one of the Cooldown's
   * elected checkpointers (`checkpointers`: their indices in the epoch's client list), so uploads
   * the step's folder.
   */
  checkpointer: { epoch: number; step: number; elected: boolean; checkpointers: number[] };
  /** An elected checkpointer starts uploading the checkpoint of `step` to the Hub. */
  hub_upload: { step: number; repo: string; hub_url: string; files: string[]; bytes: number };
  /** The upload of `step` entered a phase (`preuploading`, `uploadingLargeFiles`, `committing`). */
  hub_upload_phase: { step: number; phase: string };
  /** The upload of `step` is committed: `revision` is the commit's oid. */
  hub_uploaded: { step: number; repo: string; revision: string; bytes: number; ms: number };
  /** The upload of `step` failed; training goes on, the run keeps its previous checkpoint. */
  hub_upload_failed: { step: number; repo: string; error: string; ms: number };
  /** The upload of `step` met a failure the Hub may get over; it is tried again after `delay_ms`. */
  hub_upload_retry: {
    step: number;
    repo: string;
    attempt: number;
    delay_ms: number;
    error: string;
  };
  /** `repo` did not exist: it was created, private, for the upload of `step`. */
  hub_repo_created: { step: number; repo: string; visibility: "private" };
  /** The coordinator took this client's report: the run's checkpoint is now this revision. */
  hub_reported: { step: number; repo: string; revision: string };
  /**
   * An uploaded revision was not reported, or the coordinator refused the report (`reason`):
   * the Cooldown ended first (another checkpointer reported, or its timer), or the run's digest
   * vote chose other parameters.
   */
  hub_report_skipped: { step: number; revision: string; reason: string };
  /** `--delete-old-steps`: an old checkpoint folder beyond `--keep-steps` was deleted. */
  checkpoint_deleted: { step: number; dir: string };
  /**
   * `--claim`: the run's treasury paid `points` tokens for points this wallet earned
   * (`total` paid for in all); decimal strings, as points may pass 2^53.
   */
  claimed: { points: string; total: string; treasury: string };
  /**
   * What an interrupted client (SIGINT/SIGTERM) did with its parameters: saved to `dir` (null:
   * nothing saved, `note` says why); `step` is the run step whose parameters they are exactly,
   * or null between two labelled points (a step's weight decay applied, its results not yet).
   */
  saved_on_exit: { dir: string | null; step: number | null; note: string };
  error: { what: string; error: string };
  /** The connection to the coordinator at `address` dropped; the client reconnects. */
  disconnected: { address: string; reason: string };
  /** The `attempt`-th try to reach the coordinator again, after `delay_ms` of back-off. */
  reconnecting: { address: string; attempt: number; delay_ms: number; error: string | null };
  /** Connected to the coordinator again (and joined again, if it had joined). */
  reconnected: { address: string; attempts: number };
  /** After a stall, stale coordinator states behind newer ones were skipped unread. */
  states_skipped: { skipped: number };
  end: { reason: string };
}

/** An event name. */
export type ClientEventName = keyof ClientEvents;

/** Receives the client's events. */
export interface ClientLogger {
  log<K extends ClientEventName>(event: K, fields: ClientEvents[K]): void;
}

/** A logger that passes every event to each of `loggers`, in order. */
export function teeClientLogger(...loggers: ClientLogger[]): ClientLogger {
  return {
    log(event, fields) {
      for (const l of loggers) l.log(event, fields);
    },
  };
}

/** Output formats of `--logs`. */
export const LOG_FORMATS = ["tui", "console", "json"] as const;
/** One of {@link LOG_FORMATS}. */
export type LogFormat = typeof LOG_FORMATS[number];

/** How much each event matters in a log (docs/logs.md). */
export function clientEventLevel(event: ClientEventName): LogLevel {
  switch (event) {
    case "error":
      return "error";
    case "ejected":
      return "error";
    case "diverged":
    case "waiting_for_model":
    case "refused":
    case "download_failed":
    case "peer_unreachable":
    case "relay_unreachable":
    case "relay_silent":
    case "too_slow":
    case "dropped":
    case "lagging":
    case "disconnected":
    case "reconnecting":
    case "verification_retry":
    case "eval_disabled":
    case "hub_report_skipped":
      return "warn";
    case "hub_upload_failed":
      return "error";
    case "hub_upload_retry":
      return "warn";
    default:
      return "info";
  }
}

/**
 * One JSON object per line, in the log schema of docs/logs.md:
 * `{"time": ISO-8601, "level", "event": name, …fields}`.
 */
export function jsonClientLogger(
  write: (line: string) => void,
  clock: () => number = Date.now,
): ClientLogger {
  return {
    log(event, fields) {
      write(logLine(clock(), clientEventLevel(event), event, fields));
    },
  };
}

/** What a person reads for each phase of a `model_load`. */
const MODEL_LOAD_WORDS: Record<ModelLoadPhase, string> = {
  fetch: "fetching the model from peers",
  download: "downloading the model from the Hub",
  read: "reading the model's weights",
  seeded_init: "making the seeded init of the model",
  digest: "checking the model's digest",
};

/** What a person reads for each phase of a `model_snapshot_progress`. */
const SNAPSHOT_WORDS: Record<SnapshotPhase, string> = {
  read: "reading the parameters off the GPU",
  digest: "digesting the parameters",
  encode: "encoding the blobs",
  hash: "hashing the blobs",
};

/** What a person reads as each warm-up stage begins. */
const WARMUP_STAGE_WORDS: Record<WarmUpStage, (sequences: number) => string> = {
  first_step: (n) => `warming up: building the GPU pipelines with a dry step of ${n} sequences`,
  second_step: (n) => `warming up: timing a second dry step of ${n} sequences`,
  apply: () => "warming up: applying a dry result to scratch and resetting the optimizer",
};

const fmt = (x: number, digits = 4) => (Number.isFinite(x) ? x.toFixed(digits) : String(x));

/** The human line for an event. */
export function describeEvent<K extends ClientEventName>(event: K, f: ClientEvents[K]): string {
  const e = { event, ...f } as { [K in ClientEventName]: { event: K } & ClientEvents[K] }[
    ClientEventName
  ];
  switch (e.event) {
    case "start":
      return `client ${e.identity.slice(0, 12)}… joining run "${e.run_id}" on ${e.adapter}`;
    case "metrics":
      return `Prometheus metrics at ${e.url}`;
    case "state":
      return `${e.run_state} (epoch ${e.epoch}, step ${e.step}, round ${e.round}, ${e.clients} clients)`;
    case "model":
      return `model from ${e.folder} (${e.weights}, ${e.params} parameters, hash ${
        e.params_hash.slice(0, 12)
      })`;
    case "memory_plan":
      return e.lines.join("\n");
    case "warmup_stage":
      return WARMUP_STAGE_WORDS[e.stage](e.sequences);
    case "warmup":
      return `ready to train: a step takes ${fmt(e.step_ms / 1000, 1)} s here (the first, ` +
        `building the GPU pipelines, ${fmt(e.first_step_ms / 1000, 1)} s); the run allows ` +
        `${fmt(e.allowed_ms / 1000, 1)} s` +
        (e.step_ms > e.allowed_ms ? ": THIS CLIENT WILL BE DROPPED (too slow for the run)" : "");
    case "diverged":
      return `DIVERGED at step ${e.step}: ${e.reason} (own ${
        e.params_hash?.slice(0, 12) ?? "none"
      }, run ${e.consensus?.slice(0, 12) ?? "none"}); no longer training or witnessing ` +
        `until it resyncs`;
    case "resynced":
      return `resynced: parameters of step ${e.step} from ${e.source} (${
        e.params_hash.slice(0, 12)
      }), the run's again`;
    case "waiting_for_model":
      return `waiting for the parameters of step ${e.step}${
        e.consensus === null ? "" : ` (run digest ${e.consensus.slice(0, 12)})`
      }: ${e.reason}; retrying in ${fmt(e.retry_ms / 1000, 0)} s`;
    case "train":
      return `trained step ${e.step} batch [${e.batch[0]}, ${e.batch[1]}]: loss ${fmt(e.loss)}, ${
        fmt(e.tokens_per_sec, 0)
      } tokens/s, payload ${e.payload_bytes} bytes`;
    case "apply":
      return `applied step ${e.step}: ${e.applied} results, ${e.untrained_batches} untrained, ` +
        (e.rejected.length > 0 ? `${e.rejected.length} rejected, ` : "") +
        `params ${e.params_hash.slice(0, 12)}`;
    case "verification":
      return `verified ${e.trainer.slice(0, 12)}…'s result of step ${e.step}: ${e.verdict}` +
        (e.verdict === "Fail" ? ` (${e.evidence}, ${e.detail_ppm} ppm)` : "") +
        (e.note === null ? `, replayed in ${fmt(e.replay_ms, 0)} ms` : ` (${e.note})`);
    case "verification_retry":
      return `verifying round ${e.round} failed (attempt ${e.attempt}): ${e.error}; trying again`;
    case "ejected":
      return `EJECTED by verification at step ${e.step} (${e.cause}` +
        (e.evidence === "None" ? "" : `, ${e.evidence}`) +
        `); barred from the run until epoch ${e.barred_until}`;
    case "model_snapshot_progress":
      return uploadProgressLine(
        `snapshot of step ${e.step}: ${SNAPSHOT_WORDS[e.phase]}`,
        e.done_bytes,
        e.total_bytes,
        e.mb_per_sec,
      );
    case "model_snapshot":
      return `serving the parameters of step ${e.step} (${
        e.rounded ? "rounded to bf16" : "as they are"
      }, hash ${e.params_hash.slice(0, 12)}): ${e.bytes} bytes`;
    case "eval":
      return `eval ${e.task} on step ${e.step}'s parameters: acc ${fmt(100 * e.acc, 2)}%` +
        (e.acc_norm === null ? "" : `, acc_norm ${fmt(100 * e.acc_norm, 2)}%`) +
        ` over ${e.docs} documents (${e.chunks} chunks between rounds, ${fmt(e.seconds, 1)} s)`;
    case "eval_disabled":
      return `evals are off: ${e.error}`;
    case "model_load":
      return uploadProgressLine(
        MODEL_LOAD_WORDS[e.phase],
        e.done_bytes,
        e.total_bytes,
        e.mb_per_sec,
      );
    case "model_upload":
      return uploadProgressLine("uploading the model", e.done_bytes, e.total_bytes, e.mb_per_sec);
    case "witness":
      return `witnessed step ${e.step}: ${e.participants} trainers, ${e.commitments} commitments` +
        (e.not_waited_for.length === 0
          ? ""
          : `; did not wait longer for ${
            e.not_waited_for.map((k) => `${k.slice(0, 12)}…`).join(", ")
          }, still training or too slow`);
    case "warmup_witness":
      return `ready for epoch ${e.epoch} (index ${e.index})`;
    case "health_check_sent":
      return `health check at step ${e.step}: ${e.clients.length} unhealthy`;
    case "refused":
      return `refused ${e.what} from ${e.from.slice(0, 12)}…: ${e.reason} (${e.detail})`;
    case "outdated":
      return `${e.what} came too late, the run had moved on: ${e.error}`;
    case "announcements_recovered":
      return `recovered ${e.count} announcement${e.count === 1 ? "" : "s"} of step ${e.step} ` +
        `from ${e.from.slice(0, 12)}… that gossip lost (${e.why})`;
    case "pull_failed":
      return `could not pull step ${e.step}'s announcements from ${
        e.from.slice(0, 12)
      }…: ${e.error}`;
    case "download_failed":
      return `payload of step ${e.step} from ${e.from.slice(0, 12)}… failed: ${e.error}`;
    case "peer_unreachable":
      return `cannot reach peer ${e.peer.slice(0, 12)}…: ${e.error}`;
    case "peer_connected":
      return `connected to peer ${e.peer.slice(0, 12)}… ${
        e.via === "relay" ? "through a relay" : "directly"
      }`;
    case "relay_unreachable":
      return `cannot reach relay ${e.relay}: ${e.error}`;
    case "relay_silent":
      return `relay ${e.relay} did not answer for ${e.waited_ms} ms: gave its connection up ` +
        `(its machine or link may have died); dialling it again`;
    case "dropped":
      return `DROPPED from epoch ${e.epoch} at step ${e.step}: ${e.note}`;
    case "lagging":
      return `LAGGING: the state of step ${e.step} read now ended ${e.behind_s} s ago: ${e.note}`;
    case "too_slow":
      return `too slow for this run: the results of the last ${e.missed_rounds} steps it ` +
        `trained (to step ${e.step}) reached the witnesses after their rounds closed, so the ` +
        `run counted those batches untrained; it keeps training, and the run does not wait`;
    case "reachability":
      return (e.behind_nat
        ? "behind NAT: peers reach this client through a relay"
        : e.public
        ? `publicly reachable (a peer dialled it back): relays for peers behind NAT (${e.relaying_for} now)`
        : "reachable at its own addresses") +
        ` (${e.relays_connected} of ${e.relays} relays connected; announcing ` +
        `${e.addresses.join(", ") || "nothing yet"})`;
    case "traffic":
      return `sent ${e.bytes_sent} bytes, received ${e.bytes_received} bytes, ${e.peers} peers`;
    case "checkpoint_progress":
      return uploadProgressLine(
        e.step === null
          ? `saving the parameters to ${e.dir}`
          : `writing the checkpoint of step ${e.step}`,
        e.done_bytes,
        e.total_bytes,
        e.mb_per_sec,
      );
    case "checkpoint":
      return `checkpoint of step ${e.step} written to ${e.dir}`;
    case "checkpointer":
      return e.elected
        ? `elected checkpointer of epoch ${e.epoch}: uploading step ${e.step}`
        : `not a checkpointer of epoch ${e.epoch} (elected: ${e.checkpointers.join(", ")})`;
    case "hub_upload":
      return `uploading step ${e.step} to ${e.hub_url}/${e.repo} (${e.files.length} files, ` +
        `${e.bytes} bytes)`;
    case "hub_upload_phase":
      return `upload of step ${e.step}: ${e.phase}`;
    case "hub_uploaded":
      return `step ${e.step} uploaded to ${e.repo} at revision ${e.revision} in ${
        Math.round(e.ms)
      } ms`;
    case "hub_upload_failed":
      return `upload of step ${e.step} to ${e.repo} failed (training goes on): ${e.error}`;
    case "hub_upload_retry":
      return `upload of step ${e.step} to ${e.repo} failed (try ${e.attempt}), trying again in ${
        Math.round(e.delay_ms / 1000)
      } s: ${e.error}`;
    case "hub_repo_created":
      return `created the Hub repo ${e.repo} (${e.visibility}) for the checkpoint of step ${e.step}`;
    case "hub_reported":
      return `the run's checkpoint is now ${e.repo}@${e.revision} (step ${e.step})`;
    case "hub_report_skipped":
      return `revision ${e.revision} of step ${e.step} not reported: ${e.reason}`;
    case "checkpoint_deleted":
      return `deleted old checkpoint of step ${e.step}: ${e.dir}`;
    case "claimed":
      return `claimed ${e.points} tokens from the run's treasury ${e.treasury} (${e.total} in all)`;
    case "saved_on_exit":
      return e.dir === null
        ? `interrupted: parameters not saved (${e.note})`
        : `interrupted: parameters saved to ${e.dir} (${e.note})`;
    case "error":
      return `error in ${e.what}: ${e.error}`;
    case "disconnected":
      return `lost the coordinator at ${e.address}: ${e.reason}; reconnecting`;
    case "reconnecting":
      return `reconnecting to ${e.address} (attempt ${e.attempt}, in ${
        fmt(e.delay_ms / 1000, 2)
      } s)` +
        (e.error === null ? "" : `; last try: ${e.error}`);
    case "reconnected":
      return `reconnected to ${e.address} after ${e.attempts} attempt${
        e.attempts === 1 ? "" : "s"
      }`;
    case "states_skipped":
      return `caught up with the coordinator, skipping ${e.skipped} stale state${
        e.skipped === 1 ? "" : "s"
      }`;
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
