/**
 * Choosing the next token from a row of logits: greedy (temperature 0: the most likely token),
 * or a draw from the softmax of `logits / temperature` cut to the `topK` most likely tokens, then
 * to the smallest set of most likely tokens whose probability reaches `topP`, in the order
 * Hugging Face's `generate` applies them (temperature, top-k, top-p). Pure: the draw's uniform
 * number comes in (generate/sampler.ts draws it from a seeded stream).
 *
 * @module
 */

/** How the next token is chosen. */
export interface SamplingOptions {
  /** 0: greedy (the most likely token); otherwise the logits are divided by it. */
  readonly temperature: number;
  /** Keep the k most likely tokens, and any tied with the k-th (0: all). */
  readonly topK: number;
  /** Keep the most likely tokens until their probability reaches p (1: all). */
  readonly topP: number;
}

/** Greedy decoding: always the most likely token. */
export const GREEDY: SamplingOptions = { temperature: 0, topK: 0, topP: 1 };

/** Throws a RangeError naming the option that is out of range. */
export function checkSampling(options: SamplingOptions): void {
  const { temperature, topK, topP } = options;
  if (!Number.isFinite(temperature) || temperature < 0) {
    throw new RangeError(`temperature must be a finite number >= 0, got ${temperature}`);
  }
  if (!Number.isSafeInteger(topK) || topK < 0) {
    throw new RangeError(`top-k must be an integer >= 0 (0: off), got ${topK}`);
  }
  if (!(topP > 0 && topP <= 1)) {
    throw new RangeError(`top-p must be in (0, 1] (1: off), got ${topP}`);
  }
}

/**
 * The index of the largest logit (the first of equals). Throws a RangeError on an empty row or a
 * NaN, which only a broken model produces.
 *
 * @example
 * ```ts
 * import { argmax } from "./sampling.ts";
 * if (argmax(new Float32Array([0.1, 2, 2, -1])) !== 1) throw new Error("the first of equals");
 * ```
 */
export function argmax(logits: ArrayLike<number>): number {
  if (logits.length === 0) throw new RangeError("argmax of no logits");
  let best = 0;
  for (let i = 0; i < logits.length; i++) {
    if (Number.isNaN(logits[i])) throw new RangeError(`logit ${i} is NaN`);
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

/** The tokens a draw chooses among, most likely first, with probabilities summing to 1. */
export interface Candidates {
  readonly ids: Uint32Array;
  readonly probs: Float64Array;
}

/**
 * The candidates of a draw (temperature > 0): softmax of `logits / temperature` in f64 over the
 * tokens top-k keeps, cut by top-p, renormalised. Ties are ordered by token id.
 */
export function candidates(logits: ArrayLike<number>, options: SamplingOptions): Candidates {
  checkSampling(options);
  const { temperature, topK, topP } = options;
  if (temperature === 0) throw new RangeError("candidates need a temperature above 0");
  const n = logits.length;
  if (n === 0) throw new RangeError("no logits to sample from");
  const z = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    if (Number.isNaN(logits[i])) throw new RangeError(`logit ${i} is NaN`);
    z[i] = logits[i] / temperature;
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => z[b] - z[a] || a - b);
  let kept = n;
  if (topK > 0 && topK < n) {
    // As Hugging Face: every token at least as likely as the k-th stays.
    const threshold = z[order[topK - 1]];
    kept = topK;
    while (kept < n && z[order[kept]] >= threshold) kept++;
  }
  const max = z[order[0]];
  const probs = new Float64Array(kept);
  let sum = 0;
  for (let j = 0; j < kept; j++) sum += probs[j] = Math.exp(z[order[j]] - max);
  for (let j = 0; j < kept; j++) probs[j] /= sum;
  if (topP < 1) {
    // The smallest prefix of the most likely tokens whose probability reaches top-p.
    let mass = 0, j = 0;
    while (j < kept && mass < topP) mass += probs[j++];
    kept = Math.max(1, j);
    let rest = 0;
    for (let i = 0; i < kept; i++) rest += probs[i];
    for (let i = 0; i < kept; i++) probs[i] /= rest;
  }
  return { ids: Uint32Array.from(order.slice(0, kept)), probs: probs.slice(0, kept) };
}

/**
 * The candidate a uniform number `u` in [0, 1) picks: the first whose cumulative probability
 * exceeds `u` (the last when rounding leaves `u` above the total).
 */
export function drawCandidate(c: Candidates, u: number): number {
  if (!(u >= 0 && u < 1)) throw new RangeError(`u must be in [0, 1), got ${u}`);
  let cumulative = 0;
  for (let j = 0; j < c.ids.length; j++) {
    cumulative += c.probs[j];
    if (u < cumulative) return c.ids[j];
  }
  return c.ids[c.ids.length - 1];
}

/**
 * The next token: the argmax at temperature 0 (`uniform` is not called), else a draw among the
 * {@link candidates} with one call of `uniform` (numbers in [0, 1)).
 *
 * @example
 * ```ts
 * import { chooseToken } from "./sampling.ts";
 * const logits = new Float32Array([0, 3, 1]);
 * if (chooseToken(logits, { temperature: 0, topK: 0, topP: 1 }, () => 0.5) !== 1) {
 *   throw new Error("greedy takes the largest logit");
 * }
 * // top-k 1 leaves one candidate whatever the draw.
 * if (chooseToken(logits, { temperature: 2, topK: 1, topP: 1 }, () => 0.99) !== 1) {
 *   throw new Error("top-k 1 is greedy");
 * }
 * ```
 */
export function chooseToken(
  logits: ArrayLike<number>,
  options: SamplingOptions,
  uniform: () => number,
): number {
  checkSampling(options);
  if (options.temperature === 0) return argmax(logits);
  return drawCandidate(candidates(logits, options), uniform());
}
