/**
 * Log-likelihoods of continuations on the GPU: each request is one row of a forward-only pass
 * of the Llama model (model/llama.ts `encodeLoss`), padded to the model's window. The per-row
 * losses the pass keeps are −log p(next token); a continuation's log-likelihood is minus their
 * sum over the positions that predict it. Padding after a request cannot change those
 * positions, since attention is causal.
 *
 * @module
 */
import { type LlamaConfig, LlamaModel, type ParamLayout } from "../model/mod.ts";
import type { GpuRuntime } from "../shaders/mod.ts";
import type { ScoreRequest } from "./requests.ts";

/** What the scorer runs. */
export interface ScorerOptions {
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  readonly weights: Float32Array;
  /** The window: every request's tokens fit in it. */
  readonly seqLen: number;
  /** Requests per forward pass (default 8). */
  readonly microBatch?: number;
  /** Forward passes per submission (default 4). */
  readonly slots?: number;
}

/** Scores requests on one GPU model; dispose it to free the model. */
export class LogLikelihoodScorer implements Disposable {
  readonly #rt: GpuRuntime;
  readonly #model: LlamaModel;

  constructor(rt: GpuRuntime, options: ScorerOptions) {
    this.#rt = rt;
    this.#model = new LlamaModel(rt, {
      precision: "f32",
      config: options.config,
      layout: options.layout,
      weights: options.weights,
      microBatch: options.microBatch ?? 8,
      seqLen: options.seqLen,
      slots: options.slots ?? 4,
    });
  }

  /** Requests one submission scores. */
  get batchSize(): number {
    return this.#model.microBatch * this.#model.slots;
  }

  /** The window. */
  get seqLen(): number {
    return this.#model.seqLen;
  }

  /**
   * The log-likelihood of each request's continuation, in order; `onBatch` hears how many are
   * done after each submission.
   */
  async score(
    requests: readonly ScoreRequest[],
    onBatch?: (done: number) => void,
  ): Promise<Float64Array> {
    const model = this.#model;
    const B = model.microBatch, T = model.seqLen;
    const out = new Float64Array(requests.length);
    for (let first = 0; first < requests.length; first += this.batchSize) {
      const group = requests.slice(first, first + this.batchSize);
      const slots = Math.ceil(group.length / B);
      for (let s = 0; s < slots; s++) {
        const tokens = new Uint32Array(B * T);
        group.slice(s * B, (s + 1) * B).forEach((r, b) => {
          if (r.tokens.length > T || r.start < 1 || r.start >= r.tokens.length) {
            throw new RangeError(
              `request of document ${r.doc} choice ${r.choice} (${r.tokens.length} tokens, ` +
                `continuation at ${r.start}) does not fit a window of ${T}`,
            );
          }
          tokens.set(r.tokens, b * T);
        });
        model.writeTokens(s, tokens);
      }
      const step = this.#rt.beginStep(`score requests ${first}..`);
      for (let s = 0; s < slots; s++) model.encodeLoss(step, { slot: s });
      await step.submit({ wait: false });
      for (let s = 0; s < slots; s++) {
        const losses = await model.readLosses(s);
        group.slice(s * B, (s + 1) * B).forEach((r, b) => {
          let sum = 0;
          // Row i's loss predicts token i + 1: the continuation's tokens are predicted by rows
          // start − 1 .. length − 2.
          for (let i = r.start - 1; i <= r.tokens.length - 2; i++) sum += losses[b * T + i];
          out[first + s * B + b] = -sum;
        });
      }
      onBatch?.(Math.min(requests.length, first + group.length));
    }
    return out;
  }

  [Symbol.dispose](): void {
    this.#model[Symbol.dispose]();
  }
}
