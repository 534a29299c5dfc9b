/**
 * What a testnet run achieved, gathered from its processes' JSON events: the loss per step
 * (mean over the clients that trained it), steps applied, epochs and rounds completed (rounds
 * whose training timed out, batches left untrained as the coordinator counted them), health
 * checks, checkpoints written, and whether the clients held one model: every client's parameter
 * digest at every step compared (agreement.ts), with every divergence, logged or silent.
 *
 * Pure: fed one event at a time.
 *
 * @module
 */
import {
  type Agreement,
  type AgreementEntry,
  compareDigests,
  type Divergence,
  stepRanges,
} from "./agreement.ts";

/** The rounds as the coordinator logged them (`RoundEnd` events). */
export interface RoundTotals {
  /** Rounds that ended. */
  readonly ended: number;
  /** Of those, rounds whose training ended by `max_round_train_time`, not by the witnesses. */
  readonly timedOut: number;
  /** Batches the ended rounds' witnesses attested (those of the round before each). */
  readonly batches: number;
  /** Of those, batches whose trainer no quorum of witnesses saw: never applied. */
  readonly untrainedBatches: number;
}

/** Totals of a run so far. */
export interface RunSummary {
  /** Mean training loss per step, by step. */
  readonly lossByStep: ReadonlyMap<number, number>;
  /** Epochs the coordinator ended after training. */
  readonly epochs: number;
  /** Of those, epochs whose last round no witness reported (`epoch_end` cause `no_witnesses`). */
  readonly unattestedEpochs: number;
  /** Highest step whose results any client applied (`apply.step`); 0 when none. */
  readonly lastAppliedStep: number;
  /** Distinct steps whose results some client applied. */
  readonly appliedSteps: number;
  /**
   * Batches the clients logged as untrained when applying: per step the most any client
   * reported (every client applies the same step), summed over steps.
   */
  readonly untrainedBatches: number;
  /** The coordinator's rounds, timed-out rounds and untrained batches. */
  readonly rounds: RoundTotals;
  /** Health-check reports the clients sent. */
  readonly healthChecks: number;
  /** Checkpoint folders written, in order. */
  readonly checkpoints: readonly string[];
  /** Each client's parameter hash after its latest apply, by process label. */
  readonly paramsHash: ReadonlyMap<string, { step: number; hash: string }>;
  /** Every client's digest at every step compared, and every divergence. */
  readonly agreement: Agreement;
}

/** Accumulates events into a {@link RunSummary}. */
export class SummaryCollector {
  readonly #losses = new Map<number, number[]>();
  #epochs = 0;
  #unattestedEpochs = 0;
  readonly #applied = new Set<number>();
  #lastApplied = 0;
  readonly #untrained = new Map<number, number>();
  #rounds = { ended: 0, timedOut: 0, batches: 0, untrainedBatches: 0 };
  #healthChecks = 0;
  readonly #checkpoints: string[] = [];
  readonly #hashes = new Map<string, { step: number; hash: string }>();
  readonly #entries = new Map<string, AgreementEntry[]>();
  readonly #records = new Map<number, string>();

  /** Epochs the coordinator ended after training (cheap: no summary built). */
  get epochs(): number {
    return this.#epochs;
  }

  /** Records one event of process `label` (of `kind`); ignores what it does not count. */
  add(label: string, kind: "coordinator" | "client", event: Record<string, unknown>): void {
    if (kind === "coordinator") this.#addCoordinator(event);
    else this.#addClient(label, event);
  }

  #addCoordinator(event: Record<string, unknown>): void {
    switch (event.event) {
      case "epoch_end":
        if (event.success !== true) return;
        this.#epochs++;
        if (event.cause === "no_witnesses") this.#unattestedEpochs++;
        return;
      case "digest_recorded": {
        const step = Number(event.step);
        // The first record of a step is final (docs/protocol.md, "Parameter digests").
        if (isStep(step) && typeof event.digest === "string" && !this.#records.has(step)) {
          this.#records.set(step, event.digest.toLowerCase());
        }
        return;
      }
      case "round_end":
        this.#rounds = {
          ended: this.#rounds.ended + 1,
          timedOut: this.#rounds.timedOut + (event.train_timed_out === true ? 1 : 0),
          batches: this.#rounds.batches + count(event.batches),
          untrainedBatches: this.#rounds.untrainedBatches + count(event.untrained_batches),
        };
        return;
    }
  }

  #addClient(label: string, event: Record<string, unknown>): void {
    switch (event.event) {
      case "start":
        this.#log(label, { kind: "start" });
        return;
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
        if (!isStep(step)) return;
        this.#applied.add(step);
        this.#lastApplied = Math.max(this.#lastApplied, step);
        this.#untrained.set(
          step,
          Math.max(this.#untrained.get(step) ?? 0, count(event.untrained_batches)),
        );
        if (typeof event.params_hash === "string") {
          this.#hashes.set(label, { step, hash: event.params_hash });
        }
        this.#digest(label, event);
        return;
      }
      case "model":
        this.#digest(label, event);
        return;
      case "diverged": {
        const step = Number(event.step);
        const reason = typeof event.reason === "string" ? event.reason : "no reason given";
        this.#log(label, { kind: "diverged", step: isStep(step) ? step : 0, reason });
        return;
      }
      case "resynced": {
        const step = Number(event.step);
        this.#log(label, { kind: "resynced", step: isStep(step) ? step : 0 });
        return;
      }
      case "health_check_sent":
        this.#healthChecks++;
        return;
      case "checkpoint":
        if (typeof event.dir === "string") this.#checkpoints.push(event.dir);
        return;
    }
  }

  /** An `apply` or `model` event's digest of the parameters of `params_step`. */
  #digest(label: string, event: Record<string, unknown>): void {
    const step = Number(event.params_step);
    if (!isStep(step) || typeof event.params_hash !== "string") return;
    this.#log(label, { kind: "digest", step, hash: event.params_hash.toLowerCase() });
  }

  #log(label: string, entry: AgreementEntry): void {
    const list = this.#entries.get(label) ?? [];
    list.push(entry);
    this.#entries.set(label, list);
  }

  /** The totals so far (the digest comparison is made here, over everything logged). */
  summary(): RunSummary {
    const lossByStep = new Map(
      [...this.#losses].sort(([a], [b]) => a - b).map((
        [step, list],
      ) => [step, list.reduce((s, x) => s + x, 0) / list.length]),
    );
    return {
      lossByStep,
      epochs: this.#epochs,
      unattestedEpochs: this.#unattestedEpochs,
      lastAppliedStep: this.#lastApplied,
      appliedSteps: this.#applied.size,
      untrainedBatches: [...this.#untrained.values()].reduce((n, x) => n + x, 0),
      rounds: { ...this.#rounds },
      healthChecks: this.#healthChecks,
      checkpoints: [...this.#checkpoints],
      paramsHash: new Map(this.#hashes),
      agreement: compareDigests(this.#entries, this.#records),
    };
  }
}

function isStep(x: number): boolean {
  return Number.isSafeInteger(x) && x >= 0;
}

/** A count from an event: a non-negative integer, else 0. */
function count(x: unknown): number {
  return typeof x === "number" && Number.isSafeInteger(x) && x > 0 ? x : 0;
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
 * The summary as lines for a person: learning, then what was applied, then whether the clients
 * held one model (with a line per divergence), then the checkpoint.
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
  const { rounds } = summary;
  const applied = summary.appliedSteps === 0
    ? "NO step applied"
    : `${summary.appliedSteps} steps applied (last: step ${summary.lastAppliedStep})`;
  const clientsCount = summary.untrainedBatches === rounds.untrainedBatches
    ? ""
    : ` (clients counted ${summary.untrainedBatches})`;
  const unattested = summary.unattestedEpochs === 0
    ? ""
    : ` (${summary.unattestedEpochs} unattested: no witness reported in their last round)`;
  lines.push(
    `${summary.epochs} epochs${unattested}; ${applied}; ${rounds.ended} rounds (${rounds.timedOut} timed out); ` +
      `${rounds.untrainedBatches} of ${rounds.batches} batches untrained${clientsCount}; ` +
      `${summary.healthChecks} health checks`,
  );
  lines.push(...formatAgreement(summary.agreement));
  lines.push(
    summary.checkpoints.length === 0
      ? "no checkpoint written"
      : `checkpoint: ${summary.checkpoints[summary.checkpoints.length - 1]}`,
  );
  return lines;
}

/**
 * The fields of the testnet's JSON `summary` event (docs/logs.md): what {@link formatSummary}
 * says, as numbers; `loss_first`/`loss_last` are null when no step was trained.
 */
export function summaryFields(summary: RunSummary): Record<string, unknown> {
  const trend = lossTrend(summary);
  const a = summary.agreement;
  return {
    loss_first: trend?.first ?? null,
    loss_last: trend?.last ?? null,
    trained_steps: trend?.steps ?? 0,
    epochs: summary.epochs,
    unattested_epochs: summary.unattestedEpochs,
    applied_steps: summary.appliedSteps,
    last_applied_step: summary.lastAppliedStep,
    rounds: summary.rounds.ended,
    rounds_timed_out: summary.rounds.timedOut,
    batches: summary.rounds.batches,
    untrained_batches: summary.rounds.untrainedBatches,
    untrained_batches_clients: summary.untrainedBatches,
    health_checks: summary.healthChecks,
    clients: a.clients,
    digests: a.digests,
    steps_compared: a.stepsCompared,
    steps_recorded: a.stepsRecorded,
    disagreement_steps: a.disagreements.map((d) => d.step),
    divergences: a.divergences.length,
    checkpoint: summary.checkpoints.at(-1) ?? null,
  };
}

/** The agreement line, then one indented line per divergence. */
function formatAgreement(a: Agreement): string[] {
  const across = `${a.stepsCompared} steps compared across ${a.clients} clients` +
    ` (${a.stepsRecorded} with the coordinator's record)`;
  const lines: string[] = [];
  if (a.stepsCompared === 0) {
    lines.push(`parameters: nothing to compare (${a.digests} digests from ${a.clients} clients)`);
  } else if (a.disagreements.length === 0) {
    lines.push(`parameters identical at every step: ${across}`);
  } else {
    const steps = a.disagreements.map((d) => d.step);
    const ties = a.disagreements.filter((d) => d.run === null).map((d) => d.step);
    lines.push(
      `parameters DIFFER at ${a.disagreements.length} of ${across}: steps ${stepRanges(steps)}` +
        (ties.length === 0 ? "" : `; no majority at steps ${stepRanges(ties)}`),
    );
  }
  for (const d of a.divergences) lines.push(`  ${describeDivergence(d)}`);
  return lines;
}

const REASON_CHARS = 80;

/** `step 7` or `steps 7-9, 12`. */
function stepsText(steps: readonly number[]): string {
  return `${steps.length === 1 ? "step" : "steps"} ${stepRanges(steps)}`;
}

/**
 * One divergence for a person: where it differed, what it logged, which differing steps no
 * `diverged` event of the same process owned up to, and whether it recovered.
 */
export function describeDivergence(d: Divergence): string {
  const parts: string[] = [];
  // A silent step of a client that logged `diverged` came from another process of it.
  const unowned = d.logged === null
    ? "(no diverged event)"
    : "(no diverged event from that process)";
  const allSilent = d.steps.length > 0 && d.silentSteps.length === d.steps.length;
  if (allSilent) parts.push(`differs SILENTLY at ${stepsText(d.steps)} ${unowned}`);
  else if (d.steps.length > 0) parts.push(`differs at ${stepsText(d.steps)}`);
  if (d.logged !== null) {
    const reason = d.logged.reason.length > REASON_CHARS
      ? `${d.logged.reason.slice(0, REASON_CHARS - 1)}…`
      : d.logged.reason;
    parts.push(`logged diverged at step ${d.logged.step} (${reason})`);
  }
  if (d.silentSteps.length > 0 && !allSilent) {
    parts.push(`SILENTLY at ${stepsText(d.silentSteps)} ${unowned}`);
  }
  parts.push(
    d.recoveredAt === null
      ? "NOT resynced"
      : `holds the run's parameters again at step ${d.recoveredAt}`,
  );
  return `${d.label} ${parts.join("; ")}`;
}
