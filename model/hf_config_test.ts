import assert from "node:assert/strict";
import {
  countParameters,
  HfConfigError,
  llamaConfigToHf,
  parseLlamaConfig,
  readLlamaConfig,
} from "./hf_config.ts";

const BASE = {
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 512,
  max_position_embeddings: 256,
  rms_norm_eps: 1e-5,
  rope_theta: 500000,
  bos_token_id: 1,
  eos_token_id: [2, 3],
  torch_dtype: "bfloat16",
  _name_or_path: "somewhere",
};

Deno.test("parseLlamaConfig reads every field and applies defaults", () => {
  const c = parseLlamaConfig(BASE);
  assert.deepEqual(c, {
    hiddenSize: 64,
    intermediateSize: 128,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    vocabSize: 512,
    maxPositionEmbeddings: 256,
    rmsNormEps: 1e-5,
    ropeTheta: 500000,
    initializerRange: 0.02,
    bosTokenId: 1,
    eosTokenId: 2,
    tieWordEmbeddings: false,
  });
  const { num_key_value_heads: _kv, rope_theta: _rt, rms_norm_eps: _eps, ...rest } = BASE;
  const d = parseLlamaConfig(rest);
  assert.equal(d.numKvHeads, 4);
  assert.equal(d.ropeTheta, 10000);
  assert.equal(d.rmsNormEps, 1e-6);
});

Deno.test("parseLlamaConfig rejects unsupported features naming the key", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ rope_scaling: { type: "linear", factor: 2 } }, "rope_scaling"],
    [{ attention_bias: true }, "attention_bias"],
    [{ mlp_bias: true }, "mlp_bias"],
    [{ hidden_act: "gelu" }, "hidden_act"],
    [{ tie_word_embeddings: "yes" }, "tie_word_embeddings"],
    [{ head_dim: 32 }, "head_dim"],
    [{ architectures: ["MistralForCausalLM"] }, "architectures"],
    [{ sliding_window: 4096 }, "sliding_window"],
    [{ num_key_value_heads: 3 }, "num_key_value_heads"],
    [{ num_attention_heads: 5 }, "num_attention_heads"],
    [{ hidden_size: 64.5 }, "hidden_size"],
    [{ rms_norm_eps: -1 }, "rms_norm_eps"],
    [{ vocab_size: "512" }, "vocab_size"],
  ];
  for (const [patch, key] of cases) {
    assert.throws(
      () => parseLlamaConfig({ ...BASE, ...patch }),
      (e: unknown) => e instanceof HfConfigError && e.key === key && e.message.includes(`"${key}"`),
      key,
    );
  }
  const { intermediate_size: _i, ...missing } = BASE;
  assert.throws(() => parseLlamaConfig(missing), /key "intermediate_size" is required/);
  assert.throws(() => parseLlamaConfig([1]), HfConfigError);
});

Deno.test("llamaConfigToHf round-trips through parseLlamaConfig", () => {
  const c = parseLlamaConfig(BASE);
  assert.deepEqual(parseLlamaConfig(JSON.parse(JSON.stringify(llamaConfigToHf(c)))), c);
});

Deno.test("readLlamaConfig names the file in errors", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/config.json`;
    await Deno.writeTextFile(path, JSON.stringify({ ...BASE, mlp_bias: true }));
    await assert.rejects(() => readLlamaConfig(path), (e: unknown) => {
      return e instanceof HfConfigError && e.message.startsWith(`${path}: key "mlp_bias"`);
    });
    await Deno.writeTextFile(path, "{ not json");
    await assert.rejects(() => readLlamaConfig(path), /is not valid JSON/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("countParameters matches Llama-2-7B's published size", () => {
  const c = parseLlamaConfig({
    hidden_size: 4096,
    intermediate_size: 11008,
    num_hidden_layers: 32,
    num_attention_heads: 32,
    vocab_size: 32000,
    max_position_embeddings: 4096,
    rms_norm_eps: 1e-5,
  });
  assert.equal(countParameters(c), 6_738_415_616);
});

Deno.test("bundled model configs parse, and llama-20m has about 20M parameters", async () => {
  const tiny = await readLlamaConfig(
    new URL("../config/models/llama-tiny/config.json", import.meta.url).pathname,
  );
  assert.equal(tiny.numKvHeads, 2);
  const c20 = await readLlamaConfig(
    new URL("../config/models/llama-20m/config.json", import.meta.url).pathname,
  );
  const n = countParameters(c20);
  assert.ok(n > 18e6 && n < 22e6, `${n} parameters`);
});

Deno.test("llama-1b has Llama-3.2-1B's published size, with tied embeddings", async () => {
  const c = await readLlamaConfig(
    new URL("../config/models/llama-1b/config.json", import.meta.url).pathname,
  );
  assert.equal(c.tieWordEmbeddings, true);
  assert.equal(countParameters(c), 1_235_814_400);
  assert.equal(countParameters({ ...c, tieWordEmbeddings: false }), 1_235_814_400 + 128256 * 2048);
  assert.equal(llamaConfigToHf(c).tie_word_embeddings, true);
});
