import assert from "node:assert/strict";
import { LlamaDecoder } from "./decoder.ts";
import { llamaParamLayout } from "../params.ts";
import { referenceLossAndGrad } from "../reference.ts";
import { seededTokens, smallLlamaConfig, spreadWeights } from "../testing/fixtures.ts";
import { GPU_PROFILE, GpuRuntime } from "../../shaders/mod.ts";

// Two layers, 4 query heads on 2 key/value heads, RoPE, an odd vocabulary (testing/fixtures.ts).
const CONFIG = smallLlamaConfig();
const LAYOUT = llamaParamLayout(CONFIG);
const WEIGHTS = spreadWeights(LAYOUT, 7, 0.3);
const T = 9;
const TOKENS = seededTokens(3, T, CONFIG.vocabSize);
const V = CONFIG.vocabSize;

/** Throws unless every row of `got` is within `rel` of `want`'s largest magnitude in that row. */
function assertRowsClose(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  rel: number,
  what: string,
) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let r = 0; r < want.length / V; r++) {
    let scale = 0;
    for (let j = 0; j < V; j++) scale = Math.max(scale, Math.abs(want[r * V + j]));
    for (let j = 0; j < V; j++) {
      const i = r * V + j;
      assert.ok(
        Math.abs(got[i] - want[i]) <= rel * scale,
        `${what}: position ${r}, token ${j}: ${got[i]} vs ${want[i]} (row scale ${scale})`,
      );
    }
  }
}

Deno.test("the whole-sequence forward matches the f64 reference's logits", async () => {
  using rt = await GpuRuntime.create();
  using decoder = new LlamaDecoder(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights: WEIGHTS,
    contextLength: T,
    logitRows: T,
  });
  const full = await decoder.append(TOKENS, { logits: "all" });
  assert.equal(decoder.position, T);
  const ref = referenceLossAndGrad(CONFIG, LAYOUT, WEIGHTS, {
    tokens: TOKENS,
    count: 1,
    seqLen: T,
  });
  // f32 sums of at most a few dozen O(1) terms per layer: about 1e-6 relative.
  assertRowsClose(full, ref.logits, 1e-4, "GPU against f64");
});

Deno.test("decoding with the cache gives the whole-sequence logits at every position", async () => {
  using rt = await GpuRuntime.create();
  const make = (options: { chunkTokens?: number; logitRows?: number } = {}) =>
    new LlamaDecoder(rt, {
      config: CONFIG,
      layout: LAYOUT,
      weights: WEIGHTS,
      contextLength: T + 3,
      ...options,
    });
  using whole = make({ logitRows: T });
  const full = await whole.append(TOKENS, { logits: "all" });

  // One token at a time: each step reads only its own token and the cache.
  using cached = make();
  const stepwise = new Float32Array(T * V);
  for (let t = 0; t < T; t++) {
    stepwise.set(await cached.append([TOKENS[t]]), t * V);
    assert.equal(cached.position, t + 1);
  }
  // Different row counts may take different matmul variants: equal to f32 rounding.
  assertRowsClose(stepwise, full, 1e-5, "token by token against whole");

  // A prompt's prefill, then decoding; and a prefill split into passes of 2 tokens.
  cached.reset();
  assert.equal(cached.position, 0);
  const prefill = await cached.append(TOKENS.subarray(0, 5));
  assertRowsClose(prefill, full.subarray(4 * V, 5 * V), 1e-5, "prefill's last logits");
  for (let t = 5; t < T; t++) {
    const row = await cached.append([TOKENS[t]]);
    assertRowsClose(row, full.subarray(t * V, (t + 1) * V), 1e-5, `decode after prefill, ${t}`);
  }
  using chunked = make({ chunkTokens: 2, logitRows: 3 });
  assertRowsClose(await chunked.append(TOKENS, { logits: "all" }), full, 1e-5, "passes of 2");
  chunked.reset();
  const last = await chunked.append(TOKENS);
  assertRowsClose(last, full.subarray((T - 1) * V), 1e-5, "passes of 2, last logits");
});

Deno.test("under the GPU profile too, decoding with the cache gives the whole-sequence logits", async () => {
  // The GPU profile's kernels (tiled-vec4 matmuls, 256-wide workgroups) run on lavapipe as well.
  using rt = await GpuRuntime.create({ profile: GPU_PROFILE });
  const make = (logitRows: number) =>
    new LlamaDecoder(rt, {
      config: CONFIG,
      layout: LAYOUT,
      weights: WEIGHTS,
      contextLength: T,
      logitRows,
    });
  using whole = make(T);
  const full = await whole.append(TOKENS, { logits: "all" });
  const ref = referenceLossAndGrad(CONFIG, LAYOUT, WEIGHTS, {
    tokens: TOKENS,
    count: 1,
    seqLen: T,
  });
  assertRowsClose(full, ref.logits, 1e-4, "GPU profile against f64");
  using cached = make(1);
  for (let t = 0; t < T; t++) {
    const row = await cached.append([TOKENS[t]]);
    assertRowsClose(row, full.subarray(t * V, (t + 1) * V), 1e-5, `GPU profile, position ${t}`);
  }
});

Deno.test("an LM head over one storage binding is run in vocabulary blocks", async () => {
  // V = 300 × C = 32 floats is 38 KB: with 8 KiB bindings the head runs in 5 blocks (and the
  // embedding lookup in blocks too).
  const config = smallLlamaConfig({ vocab_size: 300 });
  const layout = llamaParamLayout(config);
  const weights = spreadWeights(layout, 5, 0.3);
  const tokens = seededTokens(9, 6, 300);
  const logitsWith = async (maxBindingBytes?: number) => {
    using rt = await GpuRuntime.create({ maxBindingBytes });
    using decoder = new LlamaDecoder(rt, {
      config,
      layout,
      weights,
      contextLength: 6,
      logitRows: 6,
    });
    assert.equal(decoder.headBlocks.length, maxBindingBytes === undefined ? 1 : 5);
    return await decoder.append(tokens, { logits: "all" });
  };
  const blocked = await logitsWith(8192);
  const whole = await logitsWith();
  assert.equal(blocked.length, 6 * 300);
  for (let i = 0; i < whole.length; i++) {
    assert.ok(Math.abs(blocked[i] - whole[i]) <= 1e-5 * (1 + Math.abs(whole[i])), `logit ${i}`);
  }
});

Deno.test("the decoder refuses tokens past its context or outside the vocabulary", async () => {
  using rt = await GpuRuntime.create();
  using decoder = new LlamaDecoder(rt, {
    config: CONFIG,
    layout: LAYOUT,
    weights: WEIGHTS,
    contextLength: 4,
  });
  await decoder.append([1, 2, 3]);
  await assert.rejects(
    () => decoder.append([1, 2]),
    /2 more tokens at position 3 do not fit the context of 4 positions/,
  );
  await assert.rejects(
    () => decoder.append([V]),
    /token 37 at index 0 is outside the vocabulary \(37\)/,
  );
  assert.equal(decoder.position, 3);
  await assert.rejects(() => decoder.append([]), /at least one token/);
  assert.throws(
    () =>
      new LlamaDecoder(rt, { config: CONFIG, layout: LAYOUT, weights: WEIGHTS, contextLength: 65 }),
    /contextLength must be in \[1, 64\]/,
  );
});
