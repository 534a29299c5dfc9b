/**
 * Replays another trainer's step on this client's GPU, for verification (docs/protocol.md,
 * "Verification"): from the parameters every client held when round `h` trained (kept here per
 * round, {@link ResultReplayer.keep}) and the trainer's DisTrO state before the step (served by
 * the trainer, checked against its result's input digest), it runs exactly the trainer's step —
 * lookahead, forward/backward of the trainer's batch, DisTrO generate — and returns the result
 * and the state after it, to compare with what the trainer published and served.
 *
 * On the same adapter the replay is bit-identical to the trainer's step; across adapters it
 * differs in last bits, which the comparison (client/results/verify_check.ts) tolerates.
 *
 * GPU memory: one copy of θ per kept round, plus θ, δ and the optimizer's scratch for the replay.
 * The replay shares the trainer's model buffers (activations, gradients), so it must run on the
 * client's serial GPU queue, between two of its own steps, never inside one.
 *
 * @module
 */
import type { NetworkTrainer } from "./trainer.ts";
import type { BatchId } from "../common/mod.ts";
import type { DataProvider } from "../data/mod.ts";
import { ParamBuffers } from "../model/mod.ts";
import { DistroOptimizer, type DistroState, type SparseParam } from "../optimizer/mod.ts";
import { encodeGradients, meanLoss } from "../train/mod.ts";

/** What one replayed step produced. */
export interface ReplayedStep {
  /** The step's result, values unquantized (the signs are what a 1-bit payload carries). */
  readonly own: SparseParam[];
  /** The DisTrO state after the step. */
  readonly state: DistroState;
  /** `lr·‖g‖` of the step's (clipped) gradient: the scale the state comparison is relative to. */
  readonly gradientStep: number;
  /** Mean loss of the batch at the trainer's lookahead parameters. */
  readonly loss: number;
}

/** Replays steps of other trainers against kept parameters. Dispose to free its buffers. */
export class ResultReplayer implements Disposable {
  readonly #trainer: NetworkTrainer;
  /** θ as it was when each kept round trained, by round height. */
  readonly #kept = new Map<number, ParamBuffers>();
  /** Buffers of released rounds, reused by the next `keep`. */
  readonly #spare: ParamBuffers[] = [];
  #work: { params: ParamBuffers; distro: DistroOptimizer } | null = null;

  constructor(trainer: NetworkTrainer) {
    this.#trainer = trainer;
  }

  /** The round heights whose parameters are kept. */
  get keptHeights(): number[] {
    return [...this.#kept.keys()].sort((a, b) => a - b);
  }

  /** Whether the parameters of round `height` are kept. */
  has(height: number): boolean {
    return this.#kept.has(height);
  }

  /**
   * Keeps a copy of the trainer's θ as it is now, as the parameters round `height` trains on:
   * call it after the round's apply and before its own training step (whose weight decay changes
   * θ in place). Queued on the GPU, not waited for. Keeping a height again replaces its copy.
   */
  keep(height: number): void {
    const rt = this.#trainer.rt;
    const params = this.#trainer.model.params;
    const copy = this.#kept.get(height) ?? this.#spare.pop() ??
      new ParamBuffers(rt, {
        label: `kept params`,
        layout: params.layout,
        segments: params.segments,
      });
    this.#kept.set(height, copy);
    const step = rt.beginStep(`keep params of round ${height}`);
    params.encodeCopyTo(step.encoder, copy);
    void step.submit({ wait: false });
  }

  /** Frees the kept parameters of every round not in `heights` (their buffers are reused). */
  retain(heights: Iterable<number>): void {
    const wanted = new Set(heights);
    for (const [h, buffers] of this.#kept) {
      if (wanted.has(h)) continue;
      this.#kept.delete(h);
      this.#spare.push(buffers);
    }
  }

  /**
   * Replays the step of round `height` that trained `batch` at `step` from `state` (the
   * trainer's state before it). Throws when that round's parameters are not kept.
   */
  async replay(args: {
    height: number;
    state: DistroState;
    step: number;
    batch: BatchId;
    lr: number;
    prevLr: number;
    data: DataProvider;
    signal?: AbortSignal;
  }): Promise<ReplayedStep> {
    const kept = this.#kept.get(args.height);
    if (kept === undefined) {
      throw new Error(`the parameters of round ${args.height} were not kept: cannot replay it`);
    }
    const trainer = this.#trainer;
    const rt = trainer.rt;
    const work = this.#workBuffers();
    const microBatches = await trainer.readMicroBatches(args.batch, args.data, args.signal);
    // The lookahead pass decays θ in place: replay on a copy, so the kept θ serves again.
    const step = rt.beginStep(`replay step ${args.step}`);
    kept.encodeCopyTo(step.encoder, work.params);
    work.distro.loadState(args.state);
    work.distro.encodeLookaheadApart(step, {
      params: work.params,
      prevLr: args.prevLr,
      lr: args.lr,
    });
    const { predictions, gradSumSq } = encodeGradients(
      trainer.model,
      step,
      microBatches,
      work.distro.lookaheadWeights,
    );
    const clip = work.distro.config.clipGradNorm;
    work.distro.encodeGenerate(step, {
      params: work.params,
      grads: trainer.model.grads,
      lr: args.lr,
      gradSumSq: clip !== null && clip > 0 ? gradSumSq : null,
    });
    await step.submit({ wait: false, signal: args.signal });
    const [stats, state] = await Promise.all([
      trainer.model.readStats(microBatches.length, { signal: args.signal }),
      work.distro.readState({ signal: args.signal }),
    ]);
    if (state.own === null) throw new Error("the replayed step generated no result");
    const norm = Math.sqrt(stats.gradSumSq);
    const clipped = clip !== null && clip > 0 ? Math.min(norm, clip) : norm;
    const own = trainer.distro.layouts.map((layout, n) => {
      const from = entryOffset(trainer, n);
      const count = layout.chunks * layout.k;
      return {
        indices: state.own!.indices.slice(from, from + count),
        values: state.own!.values.slice(from, from + count),
      };
    });
    return {
      own,
      state,
      gradientStep: args.lr * clipped,
      loss: meanLoss(stats.lossSum, predictions),
    };
  }

  #workBuffers(): { params: ParamBuffers; distro: DistroOptimizer } {
    if (this.#work !== null) return this.#work;
    const trainer = this.#trainer;
    const params = trainer.model.params;
    this.#work = {
      params: new ParamBuffers(trainer.rt, {
        label: "replay params",
        layout: params.layout,
        segments: params.segments,
      }),
      distro: new DistroOptimizer(trainer.rt, {
        params: trainer.layout.entries,
        size: trainer.layout.totalSize,
        segments: params.segments,
        config: trainer.distro.config,
        label: "replay distro",
      }),
    };
    return this.#work;
  }

  /** Frees every buffer this replayer made. */
  [Symbol.dispose](): void {
    for (const b of [...this.#kept.values(), ...this.#spare]) b[Symbol.dispose]();
    this.#kept.clear();
    this.#spare.length = 0;
    if (this.#work !== null) {
      this.#work.distro[Symbol.dispose]();
      this.#work.params[Symbol.dispose]();
      this.#work = null;
    }
  }
}

/** First own-result entry of parameter `n` (entries are laid out parameter by parameter). */
function entryOffset(trainer: NetworkTrainer, n: number): number {
  let e = 0;
  for (let i = 0; i < n; i++) e += trainer.distro.layouts[i].chunks * trainer.distro.layouts[i].k;
  return e;
}
