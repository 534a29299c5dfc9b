/**
 * A byte-level test model and the f64 reference of what the scorer computes: the
 * log-likelihood of a continuation from the reference forward's logits (model/reference.ts).
 *
 * @module
 */
import { llamaParamLayout, referenceLossAndGrad } from "../../model/mod.ts";
import { smallLlamaConfig, spreadWeights } from "../../model/testing/fixtures.ts";

/** A byte-level model, so requests are plain text. */
export const CONFIG = smallLlamaConfig({ vocab_size: 256, max_position_embeddings: 128 });
export const LAYOUT = llamaParamLayout(CONFIG);
export const WEIGHTS = spreadWeights(LAYOUT, 11, 0.3);

/** log p(tokens[start..] | tokens[..start]) by the f64 reference forward. */
export function referenceLogLikelihood(tokens: readonly number[], start: number): number {
  const t = tokens.length;
  const { logits } = referenceLossAndGrad(CONFIG, LAYOUT, WEIGHTS, {
    tokens: Uint32Array.from(tokens),
    count: 1,
    seqLen: t,
  });
  const V = CONFIG.vocabSize;
  let ll = 0;
  for (let i = start - 1; i <= t - 2; i++) {
    const row = logits.subarray(i * V, (i + 1) * V);
    const max = row.reduce((a, b) => Math.max(a, b), -Infinity);
    const lse = max + Math.log(row.reduce((a, b) => a + Math.exp(b - max), 0));
    ll += row[tokens[i + 1]] - lse;
  }
  return ll;
}
