/**
 * Training progress output: a human line per step (`console`), or exactly one JSON object per
 * line (`json`): a `start` event, one `step` event per optimizer step, an `end` event. The writer
 * is injected, so tests capture lines and the CLI writes to stdout.
 *
 * @module
 */

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
  precision: "f32" | "f16";
  weights: "loaded" | "seeded";
}

/** One optimizer step's figures. */
export interface StepRecord {
  /** 1-based step number. */
  step: number;
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

/** What the run did, printed once at the end. */
export interface EndInfo {
  steps: number;
  finalLoss: number;
  seconds: number;
  tokensPerSec: number;
  savedTo: string | null;
}

/** Receives the trainer's progress. */
export interface TrainLogger {
  start(info: StartInfo): void;
  step(record: StepRecord): void;
  eval(record: EvalRecord): void;
  end(info: EndInfo): void;
}

/**
 * One JSON object per line: `{"event":"start",...}`, `{"event":"step",...}` per step,
 * `{"event":"eval",...}` per evaluation, `{"event":"end",...}`.
 */
export function jsonLogger(write: (line: string) => void): TrainLogger {
  return {
    start: (i) =>
      write(JSON.stringify({
        event: "start",
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
      })),
    step: (r) =>
      write(JSON.stringify({
        event: "step",
        step: r.step,
        loss: r.loss,
        lr: r.lr,
        grad_norm: r.gradNorm,
        tokens_per_sec: r.tokensPerSec,
        ms: r.ms,
      })),
    eval: (r) =>
      write(JSON.stringify({ event: "eval", step: r.step, loss: r.loss, sequences: r.sequences })),
    end: (e) =>
      write(JSON.stringify({
        event: "end",
        steps: e.steps,
        final_loss: e.finalLoss,
        seconds: e.seconds,
        tokens_per_sec: e.tokensPerSec,
        saved_to: e.savedTo,
      })),
  };
}

/** Human-readable lines. */
export function consoleLogger(write: (line: string) => void): TrainLogger {
  return {
    start: (i) =>
      write(
        `training ${i.model} (${(i.params / 1e6).toFixed(2)}M params, ${i.weights} weights) ` +
          `with ${i.optimizer} for ${i.steps} steps: ${i.totalBatch}×${i.sequenceLength} tokens ` +
          `per step in micro-batches of ${i.microBatch}, ${i.sequences} sequences, on ${i.adapter} ` +
          `in ${i.precision}`,
      ),
    step: (r) =>
      write(
        `step ${r.step} | loss ${r.loss.toFixed(4)} | lr ${r.lr.toExponential(2)} | ` +
          (r.gradNorm === null ? "" : `grad norm ${r.gradNorm.toFixed(3)} | `) +
          `${r.ms.toFixed(0)} ms | ${r.tokensPerSec.toFixed(0)} tok/s`,
      ),
    eval: (r) =>
      write(`eval after step ${r.step} | loss ${r.loss.toFixed(4)} | ${r.sequences} sequences`),
    end: (e) =>
      write(
        `done: ${e.steps} steps in ${e.seconds.toFixed(1)} s, final loss ${
          e.finalLoss.toFixed(4)
        }, ` +
          `${e.tokensPerSec.toFixed(0)} tok/s` + (e.savedTo ? `, saved to ${e.savedTo}` : ""),
      ),
  };
}
