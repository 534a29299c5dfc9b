import assert from "node:assert/strict";
import { type LlamaConfig, parseLlamaConfig } from "./hf_config.ts";
import { llamaParamLayout, type ParamLayout, seededNormals } from "./params.ts";
import { referenceLossAndGrad } from "./reference.ts";

/** Two layers, grouped-query attention (4 heads on 2 kv heads), odd vocab: every code path. */
const CONFIG = parseLlamaConfig({
  hidden_size: 8,
  intermediate_size: 12,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 11,
  max_position_embeddings: 16,
  rms_norm_eps: 1e-5,
  rope_theta: 100,
});
const LAYOUT = llamaParamLayout(CONFIG);
/** The same with tied embeddings: no lm_head.weight, the head multiplies by the embedding. */
const TIED = { ...CONFIG, tieWordEmbeddings: true };
const TIED_LAYOUT = llamaParamLayout(TIED);

/** Weights far from init (std 0.5, norm gains around 1) so every gradient term is sizeable. */
function randomParams(seed: number, layout = LAYOUT): Float64Array {
  const p = new Float64Array(layout.totalSize);
  for (const e of layout.entries) {
    const z = seededNormals(seed, e.name, e.size);
    for (let i = 0; i < e.size; i++) p[e.offset + i] = (e.init === "ones" ? 1 : 0) + 0.5 * z[i];
  }
  return p;
}

const BATCH = { count: 2, seqLen: 5, tokens: new Uint32Array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3]) };

/** Checks every analytic gradient of the reference against central finite differences. */
function checkFiniteDifferences(config: LlamaConfig, layout: ParamLayout): void {
  const CONFIG = config, LAYOUT = layout;
  const params = randomParams(1, layout);
  const { loss, grads } = referenceLossAndGrad(CONFIG, LAYOUT, params, BATCH);
  assert.ok(loss > 0 && Number.isFinite(loss));
  const h = 1e-5;
  let worst = 0;
  let checked = 0;
  for (const e of LAYOUT.entries) {
    for (let i = 0; i < e.size; i++) {
      const at = e.offset + i;
      const keep = params[at];
      params[at] = keep + h;
      const up = referenceLossAndGrad(CONFIG, LAYOUT, params, BATCH).loss;
      params[at] = keep - h;
      const down = referenceLossAndGrad(CONFIG, LAYOUT, params, BATCH).loss;
      params[at] = keep;
      const numeric = (up - down) / (2 * h);
      const err = Math.abs(numeric - grads[at]) /
        Math.max(1e-3, Math.abs(numeric) + Math.abs(grads[at]));
      if (err > worst) worst = err;
      assert.ok(err < 1e-5, `${e.name}[${i}]: analytic ${grads[at]}, numeric ${numeric}`);
      checked++;
    }
  }
  assert.equal(checked, LAYOUT.paramCount);
}

Deno.test("reference gradients match central finite differences for every parameter", () => {
  checkFiniteDifferences(CONFIG, LAYOUT);
});

Deno.test("tied embeddings: gradients match finite differences, the embedding's gets both parts", () => {
  assert.equal(TIED_LAYOUT.byName.has("lm_head.weight"), false);
  const vc = CONFIG.vocabSize * CONFIG.hiddenSize;
  assert.equal(TIED_LAYOUT.paramCount, LAYOUT.paramCount - vc);
  checkFiniteDifferences(TIED, TIED_LAYOUT);
  // An untied model whose head equals its embedding computes the same function; the tied
  // embedding gradient is its embedding gradient plus its head gradient.
  const tied = randomParams(2, TIED_LAYOUT);
  const untied = new Float64Array(LAYOUT.totalSize);
  for (const e of TIED_LAYOUT.entries) {
    untied.set(tied.subarray(e.offset, e.offset + e.size), LAYOUT.byName.get(e.name)!.offset);
  }
  const embed = TIED_LAYOUT.byName.get("model.embed_tokens.weight")!;
  const head = LAYOUT.byName.get("lm_head.weight")!;
  untied.set(tied.subarray(embed.offset, embed.offset + embed.size), head.offset);
  const a = referenceLossAndGrad(TIED, TIED_LAYOUT, tied, BATCH);
  const b = referenceLossAndGrad(CONFIG, LAYOUT, untied, BATCH);
  assert.equal(a.loss, b.loss);
  const uEmbed = LAYOUT.byName.get("model.embed_tokens.weight")!;
  for (let i = 0; i < vc; i++) {
    const sum = b.grads[uEmbed.offset + i] + b.grads[head.offset + i];
    assert.ok(Math.abs(a.grads[embed.offset + i] - sum) <= 1e-12 * (1 + Math.abs(sum)), `[${i}]`);
  }
});

Deno.test("reference loss of a uniform model is ln(V), and logits are causal", () => {
  const zeros = new Float64Array(LAYOUT.totalSize);
  const { loss } = referenceLossAndGrad(CONFIG, LAYOUT, zeros, BATCH);
  assert.ok(Math.abs(loss - Math.log(CONFIG.vocabSize)) < 1e-12);
  // Changing the last token of a sequence must not change earlier logits.
  const params = randomParams(2);
  const a = referenceLossAndGrad(CONFIG, LAYOUT, params, BATCH).logits;
  const tokens = BATCH.tokens.slice();
  tokens[4] = 0;
  const b = referenceLossAndGrad(CONFIG, LAYOUT, params, { ...BATCH, tokens }).logits;
  const v = CONFIG.vocabSize;
  assert.deepEqual(a.subarray(0, 4 * v), b.subarray(0, 4 * v));
  assert.notDeepEqual(a.subarray(4 * v, 5 * v), b.subarray(4 * v, 5 * v));
});
