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
    ropeScaling: null,
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

/** Llama 3.2's RoPE scaling as transformers 4 writes it (`rope_scaling`, beside `rope_theta`). */
const LLAMA3_HF = {
  factor: 32.0,
  high_freq_factor: 4.0,
  low_freq_factor: 1.0,
  original_max_position_embeddings: 8192,
  rope_type: "llama3",
};
const LLAMA3 = {
  ropeType: "llama3",
  factor: 32,
  lowFreqFactor: 1,
  highFreqFactor: 4,
  originalMaxPositionEmbeddings: 8192,
} as const;

/** BASE without its RoPE keys. */
function withRope(rope: Record<string, unknown>): Record<string, unknown> {
  const { rope_theta: _, ...rest } = BASE;
  return { ...rest, ...rope };
}

Deno.test("parseLlamaConfig reads the RoPE settings transformers 4 and 5 write", () => {
  const cases: [string, Record<string, unknown>, number, typeof LLAMA3 | null][] = [
    // transformers 5 writes rope_parameters and no top-level rope_theta or rope_scaling.
    [
      "transformers 5, default",
      { rope_parameters: { rope_theta: 500000.0, rope_type: "default" } },
      500000,
      null,
    ],
    [
      "transformers 5, llama3",
      { rope_parameters: { ...LLAMA3_HF, rope_theta: 500000.0 } },
      500000,
      LLAMA3,
    ],
    ["transformers 5, no type", { rope_parameters: { rope_theta: 20000 } }, 20000, null],
    // transformers 4: rope_theta beside rope_scaling (null, or llama3 as `rope_type` or `type`).
    ["transformers 4, null", { rope_theta: 500000, rope_scaling: null }, 500000, null],
    ["transformers 4, llama3", { rope_theta: 500000, rope_scaling: LLAMA3_HF }, 500000, LLAMA3],
    [
      "older, llama3 as type",
      { rope_theta: 500000, rope_scaling: { ...LLAMA3_HF, rope_type: undefined, type: "llama3" } },
      500000,
      LLAMA3,
    ],
    [
      "type and rope_type both",
      { rope_theta: 500000, rope_scaling: { ...LLAMA3_HF, type: "llama3" } },
      500000,
      LLAMA3,
    ],
    ["default named", { rope_theta: 7, rope_scaling: { rope_type: "default" } }, 7, null],
    ["nothing", {}, 10000, null],
    // Both forms at once (what a tool writing for both might do), when they agree.
    [
      "both forms, agreeing",
      {
        rope_theta: 500000,
        rope_scaling: LLAMA3_HF,
        rope_parameters: { ...LLAMA3_HF, rope_theta: 500000, partial_rotary_factor: 1 },
      },
      500000,
      LLAMA3,
    ],
    [
      "both forms, default",
      { rope_theta: 10000, rope_scaling: null, rope_parameters: { rope_type: "default" } },
      10000,
      null,
    ],
  ];
  for (const [label, rope, theta, scaling] of cases) {
    const c = parseLlamaConfig(JSON.parse(JSON.stringify(withRope(rope))));
    assert.equal(c.ropeTheta, theta, label);
    assert.deepEqual(c.ropeScaling, scaling, label);
  }
});

Deno.test("parseLlamaConfig refuses other rope types by name, and contradictions by key", () => {
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [
      { rope_scaling: { type: "linear", factor: 2 } },
      "rope_scaling.type",
      /rope type "linear", which is not supported \(supported: default, llama3\)/,
    ],
    [
      { rope_parameters: { rope_type: "yarn", rope_theta: 1e4, factor: 4 } },
      "rope_parameters.rope_type",
      /rope type "yarn", which is not supported \(supported: default, llama3\)/,
    ],
    [{ rope_scaling: { rope_type: "dynamic", factor: 2 } }, "rope_scaling.rope_type", /"dynamic"/],
    [{ rope_scaling: { rope_type: "longrope" } }, "rope_scaling.rope_type", /"longrope"/],
    [{ rope_scaling: { rope_type: 3 } }, "rope_scaling.rope_type", /must be a string/],
    [{ rope_scaling: "llama3" }, "rope_scaling", /must be an object or null/],
    [{ rope_parameters: [1] }, "rope_parameters", /must be an object or null/],
    [
      { rope_scaling: { ...LLAMA3_HF, type: "default" } },
      "rope_scaling.type",
      /is "default" but "rope_scaling.rope_type" is "llama3"/,
    ],
    [
      { rope_scaling: { ...LLAMA3_HF, factor: undefined } },
      "rope_scaling.factor",
      /is required for rope type "llama3"/,
    ],
    [
      { rope_scaling: { ...LLAMA3_HF, original_max_position_embeddings: undefined } },
      "rope_scaling.original_max_position_embeddings",
      /is required/,
    ],
    [
      { rope_scaling: { ...LLAMA3_HF, original_max_position_embeddings: 8192.5 } },
      "rope_scaling.original_max_position_embeddings",
      /must be a positive integer, found 8192.5/,
    ],
    [
      { rope_scaling: { ...LLAMA3_HF, factor: -2 } },
      "rope_scaling.factor",
      /must be a positive number/,
    ],
    [
      { rope_scaling: { ...LLAMA3_HF, low_freq_factor: 4 } },
      "rope_scaling.high_freq_factor",
      /must be greater than low_freq_factor 4, found 4/,
    ],
    [
      { rope_scaling: { ...LLAMA3_HF, attention_factor: 1 } },
      "rope_scaling.attention_factor",
      /is not a setting of rope type "llama3"/,
    ],
    [
      { rope_parameters: { rope_type: "default", factor: 8 } },
      "rope_parameters.factor",
      /is not a setting of rope type "default"/,
    ],
    [
      { rope_parameters: { rope_type: "default", partial_rotary_factor: 0.5 } },
      "rope_parameters.partial_rotary_factor",
      /unsupported value 0.5/,
    ],
    [
      { rope_scaling: LLAMA3_HF, rope_parameters: { rope_type: "default" } },
      "rope_scaling",
      /describes \{"rope_type":"llama3",.*\} but "rope_parameters" describes rope type "default"/,
    ],
    [
      { rope_scaling: LLAMA3_HF, rope_parameters: { ...LLAMA3_HF, factor: 8 } },
      "rope_scaling",
      /"factor":32.* but "rope_parameters" describes .*"factor":8/,
    ],
    [
      { rope_theta: 10000, rope_parameters: { rope_type: "default", rope_theta: 500000 } },
      "rope_parameters.rope_theta",
      /is 500000 but "rope_theta" is 10000/,
    ],
    [
      { rope_theta: 10000, rope_scaling: { ...LLAMA3_HF, rope_theta: 500000 } },
      "rope_scaling.rope_theta",
      /is 500000 but "rope_theta" is 10000/,
    ],
    [{ rope_theta: -1 }, "rope_theta", /must be a positive number/],
  ];
  for (const [rope, key, detail] of cases) {
    assert.throws(
      () => parseLlamaConfig(JSON.parse(JSON.stringify(withRope(rope)))),
      (e: unknown) => {
        assert.ok(e instanceof HfConfigError, `${key}: ${e}`);
        assert.equal(e.key, key, e.message);
        assert.ok(e.message.includes(`key "${key}"`), e.message);
        assert.match(e.detail, detail);
        return true;
      },
      key,
    );
  }
});

Deno.test("llamaConfigToHf round-trips through parseLlamaConfig, RoPE in the legacy keys", () => {
  const plain = parseLlamaConfig(BASE);
  const llama3 = parseLlamaConfig(
    withRope({ rope_parameters: { ...LLAMA3_HF, rope_theta: 500000 } }),
  );
  for (const c of [plain, llama3]) {
    const hf = JSON.parse(JSON.stringify(llamaConfigToHf(c)));
    assert.deepEqual(parseLlamaConfig(hf), c);
    // Top-level rope_theta and rope_scaling, which transformers 4 and 5 both read.
    assert.equal(hf.rope_theta, 500000);
    assert.equal(hf.rope_parameters, undefined);
  }
  assert.equal(llamaConfigToHf(plain).rope_scaling, null);
  assert.deepEqual(llamaConfigToHf(llama3).rope_scaling, LLAMA3_HF);
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

Deno.test("llama-1b has Llama-3.2-1B's published size and RoPE, with tied embeddings", async () => {
  const c = await readLlamaConfig(
    new URL("../config/models/llama-1b/config.json", import.meta.url).pathname,
  );
  assert.equal(c.tieWordEmbeddings, true);
  assert.equal(c.ropeTheta, 500000);
  assert.deepEqual(c.ropeScaling, LLAMA3);
  assert.equal(c.maxPositionEmbeddings, 131072);
  assert.equal(countParameters(c), 1_235_814_400);
  assert.equal(countParameters({ ...c, tieWordEmbeddings: false }), 1_235_814_400 + 128256 * 2048);
  assert.equal(llamaConfigToHf(c).tie_word_embeddings, true);
});
