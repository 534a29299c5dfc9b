/**
 * Training progress output: a human line per step (`console`), or exactly one JSON object per
 * line (`json`, the log schema of docs/logs.md): a `start` event, one `step` event per optimizer
 * step, an `end` event. The writer and the clock are injected, so tests capture lines and the
 * CLI writes to stdout.
 *
 * @module
 */
import { logLine } from "../cli/entry.ts";
import { type ModelPrecision, uploadProgressLine } from "../model/mod.ts";

/** What the run is, printed once before the first step. */
export interface StartInfo {
  model: string;
  params: number;
  optimizer: string;
  steps: number;
  sequenceLength: number;
  totalBatch: number;
  microBatch: number;
  sequences: number;
  adapter: string;
  /** Storage precision of the matmul operands (`--precision` resolved). */
  precision: ModelPrecision;
  weights: "loaded" | "seeded" | "resumed";
  /** The first step this run takes (above 1 when resumed). */
  firstStep: number;
  /** Settings a resumed run took from its checkpoint, as flags (`--total-batch 4`). */
  fromCheckpoint?: readonly string[];
}

/** One optimizer step's figures. */
export interface StepRecord {
  /** 1-based step number. */
  step: number;
  /** The run's last step number. */
  steps: number;
  /** Mean cross-entropy over the step's predictions. */
  loss: number;
  /** Learning rate used. */
  lr: number;
  /** Global gradient L2 norm before clipping, when computed. */
  gradNorm: number | null;
  /** Tokens processed by this step divided by its wall time. */
  tokensPerSec: number;
  /** Wall time of the step in milliseconds (data, GPU work and readback). */
  ms: number;
  /** Seconds left at this run's mean step time so far. */
  etaSeconds: number;
}

/** A checkpoint written (periodic, on interrupt, or at the end). */
export interface SaveRecord {
  /** Optimizer steps done in the saved state. */
  step: number;
  /** The checkpoint folder. */
  path: string;
  reason: "periodic" | "interrupt" | "end";
}

/** A held-out loss measurement. */
export interface EvalRecord {
  /** Optimizer steps done before the measurement. */
  step: number;
  /** Mean cross-entropy over the evaluation sequences' predictions. */
  loss: number;
  /** Evaluation sequences used. */
  sequences: number;
}

/**
 * How far an upload to the GPU got: the start weights (a seeded start, a checkpoint's weights),
 * or a resumed run's optimizer state.
 */
export interface UploadRecord {
  /**
   * `seeded`: generated in chunks; `weights`: read from a checkpoint or held on the host;
   * `optimizer`: the optimizer state read from the resumed checkpoint.
   */
  what: "seeded" | "weights" | "optimizer";
  doneBytes: number;
  totalBytes: number;
  mbPerSec: number;
}

/** How far the read of a model folder's weights got: tensor data bytes read and converted. */
export interface ReadRecord {
  /** The model folder. */
  path: string;
  doneBytes: number;
  totalBytes: number;
  mbPerSec: number;
}

/** How far a checkpoint save got: bytes read off the GPU and written, weights and optimizer. */
export interface SaveProgressRecord {
  /** Optimizer steps done in the state being saved. */
  step: number;
  /** The checkpoint folder. */
  path: string;
  doneBytes: number;
  totalBytes: number;
  mbPerSec: number;
}

/** What the run did, printed once at the end. */
export interface EndInfo {
  /** The last step done. */
  steps: number;
  /** True when a signal ended the run before its last step. */
  interrupted: boolean;
  finalLoss: number;
  seconds: number;
  tokensPerSec: number;
  savedTo: string | null;
}

/** The bundled corpus being built before the run (the demo, on first use). */
export interface CorpusRecord {
  /** The corpus folder. */
  dir: string;
  /** Why it is built (missing, stale). */
  reason: string;
}

/** Receives the trainer's progress. */
export interface TrainLogger {
  corpus(record: CorpusRecord): void;
  /** Progress of the read of `--model`'s weights: at most every few seconds, and at its end. */
  readWeights(record: ReadRecord): void;
  /** Progress of an upload (weights, optimizer state): at most every few seconds, and at its end. */
  upload(record: UploadRecord): void;
  /** Progress of a checkpoint save: at most every few seconds, and at its end. */
  saveProgress(record: SaveProgressRecord): void;
  start(info: StartInfo): void;
  step(record: StepRecord): void;
  eval(record: EvalRecord): void;
  save(record: SaveRecord): void;
  end(info: EndInfo): void;
}

/**
 * One JSON object per line in the log schema of docs/logs.md (`logLine`: `time`, `level`,
 * snake_case `event` and fields, the client's names for the same things): `build_corpus`,
 * `read_weights` while `--model`'s weights are read, `upload` while the start weights (and a resumed optimizer state) go to the GPU, `start`, `step` per
 * optimizer step, `eval` per evaluation, `checkpoint_progress` while a checkpoint is written,
 * `checkpoint` per save, `end`.
 * Every event is `info`: the trainer reports failures on stderr and by its exit status.
 */
export function jsonLogger(
  write: (line: string) => void,
  clock: () => number = Date.now,
): TrainLogger {
  const log = (event: string, fields: Record<string, unknown>) =>
    write(logLine(clock(), "info", event, fields));
  return {
    corpus: (r) => log("build_corpus", { dir: r.dir, reason: r.reason }),
    readWeights: (r) =>
      log("read_weights", {
        dir: r.path,
        done_bytes: r.doneBytes,
        total_bytes: r.totalBytes,
        mb_per_sec: r.mbPerSec,
      }),
    upload: (r) =>
      log("upload", {
        what: r.what,
        done_bytes: r.doneBytes,
        total_bytes: r.totalBytes,
        mb_per_sec: r.mbPerSec,
      }),
    saveProgress: (r) =>
      log("checkpoint_progress", {
        step: r.step,
        dir: r.path,
        done_bytes: r.doneBytes,
        total_bytes: r.totalBytes,
        mb_per_sec: r.mbPerSec,
      }),
    start: (i) =>
      log("start", {
        model: i.model,
        params: i.params,
        optimizer: i.optimizer,
        steps: i.steps,
        sequence_length: i.sequenceLength,
        total_batch: i.totalBatch,
        micro_batch: i.microBatch,
        sequences: i.sequences,
        adapter: i.adapter,
        precision: i.precision,
        weights: i.weights,
        first_step: i.firstStep,
        from_checkpoint: i.fromCheckpoint ?? [],
      }),
    step: (r) =>
      log("step", {
        step: r.step,
        steps: r.steps,
        loss: r.loss,
        lr: r.lr,
        grad_norm: r.gradNorm,
        tokens_per_sec: r.tokensPerSec,
        ms: r.ms,
        eta_ms: Number.isFinite(r.etaSeconds) ? Math.round(r.etaSeconds * 1000) : null,
      }),
    eval: (r) => log("eval", { step: r.step, held_out_loss: r.loss, sequences: r.sequences }),
    save: (r) => log("checkpoint", { step: r.step, dir: r.path, reason: r.reason }),
    end: (e) =>
      log("end", {
        step: e.steps,
        interrupted: e.interrupted,
        final_loss: Number.isFinite(e.finalLoss) ? e.finalLoss : null,
        elapsed_ms: Math.round(e.seconds * 1000),
        tokens_per_sec: e.tokensPerSec,
        saved_to: e.savedTo,
      }),
  };
}

/** What a person reads for each kind of upload. */
const UPLOAD_WORDS: Record<UploadRecord["what"], string> = {
  seeded: "seeding the weights on the GPU",
  weights: "uploading the weights",
  optimizer: "uploading the optimizer state",
};

/** Human-readable lines. */
export function consoleLogger(write: (line: string) => void): TrainLogger {
  return {
    corpus: (r) => write(`building the byte corpus in ${r.dir} (${r.reason})`),
    readWeights: (r) =>
      write(
        uploadProgressLine(
          `reading the weights of ${r.path}`,
          r.doneBytes,
          r.totalBytes,
          r.mbPerSec,
        ),
      ),
    upload: (r) =>
      write(
        uploadProgressLine(
          UPLOAD_WORDS[r.what],
          r.doneBytes,
          r.totalBytes,
          r.mbPerSec,
        ),
      ),
    saveProgress: (r) =>
      write(
        uploadProgressLine(
          `saving the checkpoint of step ${r.step}`,
          r.doneBytes,
          r.totalBytes,
          r.mbPerSec,
        ),
      ),
    start: (i) =>
      write(
        `training ${i.model} (${(i.params / 1e6).toFixed(2)}M params, ${i.weights} weights) ` +
          `with ${i.optimizer} ` +
          (i.firstStep > 1 ? `from step ${i.firstStep} to ${i.steps}` : `for ${i.steps} steps`) +
          `: ${i.totalBatch}×${i.sequenceLength} tokens ` +
          `per step in micro-batches of ${i.microBatch}, ${i.sequences} sequences, on ${i.adapter} ` +
          `in ${i.precision}` +
          ((i.fromCheckpoint?.length ?? 0) > 0
            ? ` (from the checkpoint: ${i.fromCheckpoint!.join(", ")})`
            : ""),
      ),
    step: (r) =>
      write(
        `step ${r.step}/${r.steps} | loss ${r.loss.toFixed(4)} | lr ${r.lr.toExponential(2)} | ` +
          (r.gradNorm === null ? "" : `grad norm ${r.gradNorm.toFixed(3)} | `) +
          `${r.ms.toFixed(0)} ms | ${r.tokensPerSec.toFixed(0)} tok/s | ETA ${
            formatDuration(r.etaSeconds)
          }`,
      ),
    eval: (r) =>
      write(`eval after step ${r.step} | loss ${r.loss.toFixed(4)} | ${r.sequences} sequences`),
    save: (r) =>
      write(
        r.reason === "interrupt"
          ? `interrupted: saved the state after step ${r.step} to ${r.path} ` +
            `(continue with --resume ${r.path})`
          : `checkpoint of step ${r.step} saved to ${r.path}`,
      ),
    end: (e) =>
      write(
        `${e.interrupted ? "stopped after" : "done:"} ${e.steps} steps in ${
          e.seconds.toFixed(1)
        } s, final loss ${Number.isFinite(e.finalLoss) ? e.finalLoss.toFixed(4) : "n/a"}, ` +
          `${e.tokensPerSec.toFixed(0)} tok/s` + (e.savedTo ? `, saved to ${e.savedTo}` : ""),
      ),
  };
}

/** `42s`, `3m05s`, `2h07m`: a duration for the ETA. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  return `${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
}
