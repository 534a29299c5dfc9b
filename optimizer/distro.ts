/**
 * The DisTrO optimizer as a plain TypeScript reference (Psyche §3.5), over a list of named
 * f32 parameters. It is the readable specification the GPU optimizer is tested against.
 *
 * Per step `t` with learning rates `lr_t` and `lr_{t−1}`:
 * 1. `lookahead(lr_{t−1})` (before forward/backward): remember θ, then
 *    `θ ← θ − lr_{t−1}·sign(δ)` so the gradient is taken near where θ will be.
 * 2. `generate(grads, lr_t)`: restore θ exactly (Psyche adds the lookahead back, which is
 *    not an exact inverse in floats and would let replicas drift), subtract the client's
 *    own previous transmission from δ (error feedback, unquantized values), decoupled weight
 *    decay `θ ← θ·(1 − lr_t·wd)`, `δ ← decay·δ + lr_t·∇θ`, then per-chunk top-k of
 *    `encode(δ)`. Returns the unquantized result (kept for error feedback) and the one to
 *    transmit (signs only when 1-bit).
 * 3. `apply(results, lr)`: aggregate every peer's result in canonical order with the
 *    exact fixed-point decode (exact.ts) and `θ ← θ − lr·sign(update)`.
 *
 * With `clipGradNorm` set, `generate` first scales (a copy of) the gradients to that global norm.
 *
 * @module
 */

import { quantizeSigns, scatterMean, type SparseParam, topk } from "./compress.ts";
import { decode, encode } from "./dct.ts";
import { aggregateFixed, updateSigns } from "./exact.ts";
import { type ChunkLayout, chunkLayouts, MAX_COMPRESSION_CHUNK } from "./layout.ts";
import { canonicalOrder, type DistroResult } from "./result.ts";
import type { BatchId, OptimizerDefinition } from "../common/mod.ts";

/** DisTrO hyper-parameters (Psyche's `OptimizerDefinition::Distro`). */
export interface DistroConfig {
  /** `compression_chunk`: chunk length bound per dimension (1..256). */
  readonly chunk: number;
  /** `compression_topk`: coefficients kept per chunk. */
  readonly topk: number;
  /** `compression_decay`: momentum decay β of the residual δ. */
  readonly decay: number;
  /** Decoupled weight decay; null or 0 disables. */
  readonly weightDecay: number | null;
  /** Global gradient-norm clip; null or <= 0 disables. */
  readonly clipGradNorm: number | null;
  /** Transmit only the sign of each kept coefficient. */
  readonly quantize1bit: boolean;
}

/** The DisTrO config held in a run's `OptimizerDefinition` (RangeError for other kinds). */
export function distroConfig(def: OptimizerDefinition): DistroConfig {
  if (def.kind !== "Distro") {
    throw new RangeError(`expected a Distro optimizer definition, found ${def.kind}`);
  }
  return {
    chunk: def.compressionChunk,
    topk: def.compressionTopk,
    decay: def.compressionDecay,
    weightDecay: def.weightDecay,
    clipGradNorm: def.clipGradNorm,
    quantize1bit: def.quantize1bit,
  };
}

/**
 * Checks a DisTrO config: `RangeError` naming the field for a chunk outside 1..256, a topk
 * below 1, a decay outside [0, 1], or a negative or non-finite weight decay or clip.
 */
export function validateDistroConfig(c: DistroConfig): void {
  if (!Number.isInteger(c.chunk) || c.chunk < 1 || c.chunk > MAX_COMPRESSION_CHUNK) {
    throw new RangeError(`compression_chunk must be an integer in 1..256, found ${c.chunk}`);
  }
  if (!Number.isInteger(c.topk) || c.topk < 1) {
    throw new RangeError(`compression_topk must be a positive integer, found ${c.topk}`);
  }
  if (!(c.decay >= 0 && c.decay <= 1)) {
    throw new RangeError(`compression_decay must be in [0, 1], found ${c.decay}`);
  }
  for (const [key, v] of [["weight_decay", c.weightDecay], ["clip_grad_norm", c.clipGradNorm]]) {
    if (v !== null && !(typeof v === "number" && v >= 0 && Number.isFinite(v))) {
      throw new RangeError(`${key} must be null or a finite number >= 0, found ${v}`);
    }
  }
}

/** A named f32 parameter tensor (row-major). */
export interface NamedParam {
  readonly name: string;
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

/**
 * Scales `grads` in place so their global L2 norm is at most `maxNorm` (torch's
 * `clip_grad_norm_`: coefficient `maxNorm / (norm + 1e-6)`, applied only when < 1).
 * Returns the norm before clipping.
 */
export function clipGradNorm(grads: readonly Float32Array[], maxNorm: number): number {
  let sq = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) sq += g[i] * g[i];
  const norm = Math.sqrt(sq);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) { for (const g of grads) for (let i = 0; i < g.length; i++) g[i] *= coef; }
  return norm;
}

/** What `generate` produces for one step. */
export interface GeneratedResult {
  /** Unquantized values: kept by the sender for its own error feedback. */
  readonly own: readonly SparseParam[];
  /** What is transmitted: values replaced by ±1 signs when `quantize1bit`. */
  readonly transmit: readonly SparseParam[];
}

/** Identity of a step's result, for building a {@link DistroResult}. */
export interface ResultHeader {
  readonly step: number;
  readonly batch: BatchId;
  readonly trainerNonce: number;
}

/**
 * Reference DisTrO over named parameters, updating their `data` arrays in place.
 * Keeps the residual δ per parameter and the client's own previous result.
 */
export class DistroReference {
  /** Chunking of every parameter, in order. */
  readonly layouts: readonly ChunkLayout[];
  /** Residual momentum δ per parameter (same shape as the parameter). */
  readonly delta: Float32Array[];
  #params: readonly NamedParam[];
  #config: DistroConfig;
  #prevOwn: readonly SparseParam[] | null = null;
  #saved: Float32Array[] | null = null;

  constructor(params: readonly NamedParam[], config: DistroConfig) {
    validateDistroConfig(config);
    this.#params = params;
    this.#config = config;
    this.layouts = chunkLayouts(params, config);
    this.delta = params.map((p, i) => {
      if (p.data.length !== this.layouts[i].size) {
        throw new RangeError(
          `parameter "${p.name}": data has ${p.data.length} elements, shape [${p.shape}] needs ` +
            this.layouts[i].size,
        );
      }
      return new Float32Array(p.data.length);
    });
  }

  /** The own result of the previous `generate` (unquantized), or null before the first. */
  get previousOwn(): readonly SparseParam[] | null {
    return this.#prevOwn;
  }

  /** Zeroes δ and forgets the previous result (Psyche's `zero_optim`, cold starts). */
  reset(): void {
    for (const d of this.delta) d.fill(0);
    this.#prevOwn = null;
    this.#saved = null;
  }

  /**
   * Step 1: remember θ and move it to `θ − prevLr·sign(δ)` for the forward/backward pass.
   * Skipped (θ unchanged) before the first result, as in Psyche.
   */
  lookahead(prevLr: number): void {
    if (this.#prevOwn === null) return;
    this.#saved = this.#params.map((p) => p.data.slice());
    const lr = Math.fround(prevLr);
    for (const [n, p] of this.#params.entries()) {
      const d = this.delta[n];
      for (let i = 0; i < d.length; i++) p.data[i] = p.data[i] - lr * Math.sign(d[i]);
    }
  }

  /**
   * Step 2: fold the gradients (clipped to `clipGradNorm` when set; the caller's arrays are
   * not modified) into δ and select this step's coefficients. `grads[n]` matches parameter `n`.
   */
  generate(grads: readonly Float32Array[], lr: number): GeneratedResult {
    if (grads.length !== this.#params.length) {
      throw new RangeError(`generate: ${grads.length} gradients for ${this.#params.length} params`);
    }
    const clip = this.#config.clipGradNorm;
    if (clip !== null && clip > 0) {
      grads = grads.map((g) => g.slice());
      clipGradNorm(grads, clip);
    }
    const { decay, weightDecay, quantize1bit } = this.#config;
    const wdFactor = Math.fround(1 - lr * (weightDecay ?? 0));
    const lrF = Math.fround(lr);
    const decayF = Math.fround(decay);
    const own: SparseParam[] = [];
    for (const [n, p] of this.#params.entries()) {
      const layout = this.layouts[n];
      const g = grads[n];
      if (g.length !== layout.size) {
        throw new RangeError(
          `generate: gradient of "${p.name}" has ${g.length} elements, expected ${layout.size}`,
        );
      }
      if (this.#saved) p.data.set(this.#saved[n]);
      const d = this.delta[n];
      if (this.#prevOwn) {
        const sent = decode(layout, scatterMean(layout, [this.#prevOwn[n]]));
        for (let i = 0; i < d.length; i++) d[i] -= sent[i];
      }
      if (weightDecay) { for (let i = 0; i < d.length; i++) p.data[i] *= wdFactor; }
      for (let i = 0; i < d.length; i++) d[i] = decayF * d[i] + lrF * g[i];
      own.push(topk(layout, encode(layout, d)));
    }
    this.#saved = null;
    this.#prevOwn = own;
    const transmit = quantize1bit
      ? own.map((r) => ({ indices: r.indices, values: quantizeSigns(r.values) }))
      : own;
    return { own, transmit };
  }

  /** Wraps a transmitted result with its step, batch and nonce. */
  static result(header: ResultHeader, generated: GeneratedResult): DistroResult {
    return { ...header, params: generated.transmit };
  }

  /**
   * Step 3: `θ ← θ − lr·sign(update)` with the update aggregated exactly from `results`
   * (any arrival order). An active lookahead is undone first. Returns false (and changes
   * nothing) when `results` is empty.
   */
  apply(results: readonly DistroResult[], lr: number): boolean {
    if (results.length === 0) return false;
    if (this.#saved) {
      for (const [n, p] of this.#params.entries()) p.data.set(this.#saved[n]);
      this.#saved = null;
    }
    const ordered = canonicalOrder(results);
    for (const r of ordered) {
      if (r.params.length !== this.#params.length) {
        throw new RangeError(
          `apply: result for batch [${r.batch.start}, ${r.batch.end}] has ${r.params.length} ` +
            `parameters, the model has ${this.#params.length}`,
        );
      }
    }
    const lrF = Math.fround(lr);
    for (const [n, p] of this.#params.entries()) {
      const layout = this.layouts[n];
      const signs = updateSigns(layout, aggregateFixed(layout, ordered.map((r) => r.params[n])));
      for (let i = 0; i < signs.length; i++) p.data[i] = p.data[i] - lrF * signs[i];
    }
    return true;
  }
}
