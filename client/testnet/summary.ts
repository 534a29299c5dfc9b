/**
 * What a testnet run achieved, gathered from its processes' JSON events: the loss per step
 * (mean over the clients that trained it), steps and epochs completed, batches dropped,
 * health checks, checkpoints written, and whether the clients' parameters agree.
 *
 * Pure: fed one event at a time.
 *
 * @module
 */

/** Totals of a run so far. */
export interface RunSummary {
  /** Mean training loss per step, by step. */
  readonly lossByStep: ReadonlyMap<number, number>;
  /** Epochs the coordinator ended after training. */
  readonly epochs: number;
  /** Highest step applied by any client. */
  readonly lastAppliedStep: number;
  /**
   * Batches logged as untrained when applying (dropped, counted): per step the most any client
   * reported (every client applies the same step), summed over steps.
   */
  readonly untrainedBatches: number;
  /** Health-check reports the clients sent. */
  readonly healthChecks: number;
  /** Checkpoint folders written, in order. */
  readonly checkpoints: readonly string[];
  /** Each client's parameter hash after its latest apply, by process label. */
  readonly paramsHash: ReadonlyMap<string, { step: number; hash: string }>;
}

/** Accumulates events into a {@link RunSummary}. */
export class SummaryCollector {
  readonly #losses = new Map<number, number[]>();
  #epochs = 0;
  #lastApplied = 0;
  readonly #untrained = new Map<number, number>();
  #healthChecks = 0;
  readonly #checkpoints: string[] = [];
  readonly #hashes = new Map<string, { step: number; hash: string }>();

  /** Records one event of process `label` (of `kind`); ignores what it does not count. */
  add(label: string, kind: "coordinator" | "client", event: Record<string, unknown>): void {
    const name = event.event;
    if (kind === "coordinator") {
      if (name === "EpochEnd" && event.success === true) this.#epochs++;
      return;
    }
    switch (name) {
      case "train": {
        const step = Number(event.step);
        const loss = Number(event.loss);
        if (Number.isFinite(step) && Number.isFinite(loss)) {
          const list = this.#losses.get(step) ?? [];
          list.push(loss);
          this.#losses.set(step, list);
        }
        return;
      }
      case "apply": {
        const step = Number(event.step);
        if (Number.isFinite(step)) this.#lastApplied = Math.max(this.#lastApplied, step);
        const untrained = Number(event.untrained_batches) || 0;
        this.#untrained.set(step, Math.max(this.#untrained.get(step) ?? 0, untrained));
        if (typeof event.params_hash === "string") {
          this.#hashes.set(label, { step, hash: event.params_hash });
        }
        return;
      }
      case "health_check":
        this.#healthChecks++;
        return;
      case "checkpoint":
        if (typeof event.dir === "string") this.#checkpoints.push(event.dir);
        return;
    }
  }

  /** The totals so far. */
  summary(): RunSummary {
    const lossByStep = new Map(
      [...this.#losses].sort(([a], [b]) => a - b).map((
        [step, list],
      ) => [step, list.reduce((s, x) => s + x, 0) / list.length]),
    );
    return {
      lossByStep,
      epochs: this.#epochs,
      lastAppliedStep: this.#lastApplied,
      untrainedBatches: [...this.#untrained.values()].reduce((n, x) => n + x, 0),
      healthChecks: this.#healthChecks,
      checkpoints: [...this.#checkpoints],
      paramsHash: new Map(this.#hashes),
    };
  }
}

/** Mean of the first and of the last `window` steps' losses (null without training). */
export function lossTrend(
  summary: RunSummary,
  window = 3,
): { first: number; last: number; steps: number } | null {
  const losses = [...summary.lossByStep.values()];
  if (losses.length === 0) return null;
  const n = Math.max(1, Math.min(window, Math.floor(losses.length / 2) || 1));
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  return { first: mean(losses.slice(0, n)), last: mean(losses.slice(-n)), steps: losses.length };
}

/**
 * The summary as lines for a person.
 *
 * @example
 * ```ts
 * import { formatSummary, SummaryCollector } from "./summary.ts";
 * const c = new SummaryCollector();
 * c.add("client-1", "client", { event: "train", step: 1, loss: 10 });
 * c.add("client-1", "client", { event: "train", step: 2, loss: 8 });
 * const text = formatSummary(c.summary()).join("\n");
 * if (!text.includes("loss 10.000 -> 8.000")) throw new Error(text);
 * ```
 */
export function formatSummary(summary: RunSummary): string[] {
  const trend = lossTrend(summary);
  const lines: string[] = [];
  lines.push(
    trend === null
      ? "no training step was logged"
      : `loss ${trend.first.toFixed(3)} -> ${trend.last.toFixed(3)} ` +
        `(mean of first/last steps) over ${trend.steps} trained steps`,
  );
  lines.push(
    `${summary.epochs} epochs completed; last applied step ${summary.lastAppliedStep}; ` +
      `${summary.untrainedBatches} untrained batches; ${summary.healthChecks} health checks`,
  );
  const latest = [...summary.paramsHash.values()];
  if (latest.length > 0) {
    const top = Math.max(...latest.map((h) => h.step));
    const atTop = latest.filter((h) => h.step === top);
    const agree = new Set(atTop.map((h) => h.hash)).size === 1;
    lines.push(
      `parameters after step ${top}: ${atTop.length} clients, ` +
        (agree ? `identical (digest ${atTop[0].hash.slice(0, 16)}…)` : "DIFFER"),
    );
  }
  lines.push(
    summary.checkpoints.length === 0
      ? "no checkpoint written"
      : `checkpoint: ${summary.checkpoints[summary.checkpoints.length - 1]}`,
  );
  return lines;
}
