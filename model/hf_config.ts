/**
 * Reads and writes a Hugging Face Llama `config.json`.
 *
 * Only the plain Llama architecture is supported (RMSNorm, RoPE without scaling, grouped-query
 * attention without biases, SwiGLU MLP), with or without tied embeddings (the LM head reusing
 * the embedding matrix; model/params.ts). Anything else is rejected by the name of the key that
 * asks for it, so a model never trains silently with the wrong maths.
 *
 * @module
 */

/** The Llama hyperparameters this project trains, with the dimension names used everywhere. */
export interface LlamaConfig {
  /** C: the residual stream width (`hidden_size`). */
  hiddenSize: number;
  /** F: the MLP inner width (`intermediate_size`). */
  intermediateSize: number;
  /** L: transformer blocks (`num_hidden_layers`). */
  numLayers: number;
  /** NH: query heads (`num_attention_heads`). */
  numHeads: number;
  /** NKV: key/value heads (`num_key_value_heads`, defaults to NH); NH is a multiple of it. */
  numKvHeads: number;
  /** HD: per-head width, always C / NH. */
  headDim: number;
  /** V: vocabulary size. */
  vocabSize: number;
  /** Longest sequence the positional encoding is meant for. */
  maxPositionEmbeddings: number;
  /** Epsilon inside RMSNorm's square root. */
  rmsNormEps: number;
  /** RoPE base frequency. */
  ropeTheta: number;
  /** Standard deviation of the normal init of matrices (`initializer_range`). */
  initializerRange: number;
  /** Beginning-of-sequence token id, if the config names one. */
  bosTokenId: number | null;
  /** End-of-sequence token id, if the config names one. */
  eosTokenId: number | null;
  /**
   * The LM head reuses the embedding matrix (`tie_word_embeddings`, as Llama 3.2 1B/3B do):
   * the layout has no `lm_head.weight` (model/params.ts `lmHeadWeightName`).
   */
  tieWordEmbeddings: boolean;
}

/** A `config.json` that cannot be used: the message names the key and what was wrong with it. */
export class HfConfigError extends Error {
  /** The offending key, or `null` when the problem is the file as a whole. */
  readonly key: string | null;
  /** What was wrong, without the file and key prefix. */
  readonly detail: string;
  constructor(key: string | null, detail: string, options?: { file?: string }) {
    const where = options?.file ?? "config.json";
    super(key === null ? `${where}: ${detail}` : `${where}: key "${key}" ${detail}`);
    this.name = "HfConfigError";
    this.key = key;
    this.detail = detail;
  }
}

/** Keys HF writes that do not change the maths (bookkeeping and inference-only settings). */
const IGNORED_KEYS = new Set([
  "model_type",
  "torch_dtype",
  "dtype",
  "transformers_version",
  "use_cache",
  "pad_token_id",
  "tokenizer_class",
  "bos_token",
  "eos_token",
  "output_attentions",
  "output_hidden_states",
  "return_dict",
]);

/** Keys that are fine only with one particular value. */
const REQUIRED_VALUES: Record<string, unknown> = {
  hidden_act: "silu",
  attention_bias: false,
  mlp_bias: false,
  pretraining_tp: 1,
  attention_dropout: 0,
  rope_scaling: null,
};

const KNOWN_KEYS = new Set([
  "architectures",
  "hidden_size",
  "intermediate_size",
  "num_hidden_layers",
  "num_attention_heads",
  "num_key_value_heads",
  "head_dim",
  "vocab_size",
  "max_position_embeddings",
  "rms_norm_eps",
  "rope_theta",
  "initializer_range",
  "bos_token_id",
  "eos_token_id",
  "tie_word_embeddings",
  ...Object.keys(REQUIRED_VALUES),
]);

function positiveInt(raw: Record<string, unknown>, key: string): number {
  const v = raw[key];
  if (v === undefined) throw new HfConfigError(key, "is required");
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
    throw new HfConfigError(key, `must be a positive integer, found ${JSON.stringify(v)}`);
  }
  return v;
}

function positiveNumber(raw: Record<string, unknown>, key: string, fallback?: number): number {
  const v = raw[key] ?? fallback;
  if (v === undefined) throw new HfConfigError(key, "is required");
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) {
    throw new HfConfigError(key, `must be a positive number, found ${JSON.stringify(v)}`);
  }
  return v;
}

function tokenId(raw: Record<string, unknown>, key: string): number | null {
  const v = raw[key];
  if (v === undefined || v === null) return null;
  // Some configs list several eos ids; the first is the one generation stops on.
  const first = Array.isArray(v) ? v[0] : v;
  if (typeof first !== "number" || !Number.isSafeInteger(first) || first < 0) {
    throw new HfConfigError(key, `must be a token id, found ${JSON.stringify(v)}`);
  }
  return first;
}

/**
 * Validates a parsed `config.json` object and returns the typed config.
 * Throws {@link HfConfigError} naming the first key that is missing, mistyped, unknown or asks
 * for an unsupported feature (rope_scaling, biases, another activation, ...).
 *
 * @example
 * ```ts
 * import { parseLlamaConfig } from "./hf_config.ts";
 * const c = parseLlamaConfig({
 *   architectures: ["LlamaForCausalLM"], hidden_size: 64, intermediate_size: 128,
 *   num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 512,
 *   max_position_embeddings: 128, rms_norm_eps: 1e-5,
 * });
 * if (c.headDim !== 16 || c.ropeTheta !== 10000) throw new Error("unexpected defaults");
 * ```
 */
export function parseLlamaConfig(raw: unknown): LlamaConfig {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new HfConfigError(null, "must hold a JSON object");
  }
  const obj = raw as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (key.startsWith("_") || IGNORED_KEYS.has(key)) continue;
    if (!KNOWN_KEYS.has(key)) throw new HfConfigError(key, "is not a supported Llama setting");
  }
  const arch = obj.architectures;
  if (arch !== undefined) {
    if (!Array.isArray(arch) || arch.length !== 1 || arch[0] !== "LlamaForCausalLM") {
      throw new HfConfigError(
        "architectures",
        `must be ["LlamaForCausalLM"], found ${JSON.stringify(arch)}`,
      );
    }
  }
  for (const [key, want] of Object.entries(REQUIRED_VALUES)) {
    if (obj[key] !== undefined && obj[key] !== want) {
      throw new HfConfigError(
        key,
        `has unsupported value ${JSON.stringify(obj[key])} (only ${
          JSON.stringify(want)
        } is supported)`,
      );
    }
  }
  const hiddenSize = positiveInt(obj, "hidden_size");
  const numHeads = positiveInt(obj, "num_attention_heads");
  const numKvHeads = obj.num_key_value_heads === undefined || obj.num_key_value_heads === null
    ? numHeads
    : positiveInt(obj, "num_key_value_heads");
  if (hiddenSize % numHeads !== 0) {
    throw new HfConfigError(
      "num_attention_heads",
      `must divide hidden_size ${hiddenSize}, found ${numHeads}`,
    );
  }
  if (numHeads % numKvHeads !== 0) {
    throw new HfConfigError(
      "num_key_value_heads",
      `must divide num_attention_heads ${numHeads}, found ${numKvHeads}`,
    );
  }
  const tie = obj.tie_word_embeddings ?? false;
  if (typeof tie !== "boolean") {
    throw new HfConfigError(
      "tie_word_embeddings",
      `must be a boolean, found ${JSON.stringify(tie)}`,
    );
  }
  const headDim = hiddenSize / numHeads;
  if (obj.head_dim !== undefined && obj.head_dim !== null && obj.head_dim !== headDim) {
    throw new HfConfigError(
      "head_dim",
      `must equal hidden_size / num_attention_heads = ${headDim}, found ${
        JSON.stringify(obj.head_dim)
      }`,
    );
  }
  if (headDim % 2 !== 0) {
    throw new HfConfigError("head_dim", `must be even for RoPE, found ${headDim}`);
  }
  return {
    hiddenSize,
    intermediateSize: positiveInt(obj, "intermediate_size"),
    numLayers: positiveInt(obj, "num_hidden_layers"),
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: positiveInt(obj, "vocab_size"),
    maxPositionEmbeddings: positiveInt(obj, "max_position_embeddings"),
    rmsNormEps: positiveNumber(obj, "rms_norm_eps", 1e-6), // HF LlamaConfig default
    ropeTheta: positiveNumber(obj, "rope_theta", 10000),
    initializerRange: positiveNumber(obj, "initializer_range", 0.02),
    bosTokenId: tokenId(obj, "bos_token_id"),
    eosTokenId: tokenId(obj, "eos_token_id"),
    tieWordEmbeddings: tie,
  };
}

/**
 * The `config.json` object HF's `LlamaForCausalLM` loads for this config (written on save).
 * `torchDtype` is the dtype the weights are stored in (default `"float32"`).
 */
export function llamaConfigToHf(
  config: LlamaConfig,
  options?: { torchDtype?: "float32" | "bfloat16" | "float16" },
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    architectures: ["LlamaForCausalLM"],
    model_type: "llama",
    hidden_act: "silu",
    hidden_size: config.hiddenSize,
    intermediate_size: config.intermediateSize,
    num_hidden_layers: config.numLayers,
    num_attention_heads: config.numHeads,
    num_key_value_heads: config.numKvHeads,
    head_dim: config.headDim,
    vocab_size: config.vocabSize,
    max_position_embeddings: config.maxPositionEmbeddings,
    rms_norm_eps: config.rmsNormEps,
    rope_theta: config.ropeTheta,
    initializer_range: config.initializerRange,
    attention_bias: false,
    mlp_bias: false,
    tie_word_embeddings: config.tieWordEmbeddings,
    rope_scaling: null,
    torch_dtype: options?.torchDtype ?? "float32",
  };
  if (config.bosTokenId !== null) out.bos_token_id = config.bosTokenId;
  if (config.eosTokenId !== null) out.eos_token_id = config.eosTokenId;
  return out;
}

/** Reads `path` (a config.json) and parses it; errors name the file. */
export async function readLlamaConfig(path: string): Promise<LlamaConfig> {
  const text = await Deno.readTextFile(path);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new HfConfigError(null, `is not valid JSON: ${(e as Error).message}`, { file: path });
  }
  try {
    return parseLlamaConfig(raw);
  } catch (e) {
    if (e instanceof HfConfigError) throw new HfConfigError(e.key, e.detail, { file: path });
    throw e;
  }
}

/** Number of trainable parameters of a model with this config. */
export function countParameters(config: LlamaConfig): number {
  const { hiddenSize: c, intermediateSize: f, vocabSize: v, headDim: hd } = config;
  const kv = config.numKvHeads * hd;
  const perLayer = c * c * 2 + c * kv * 2 + c * f * 3 + c * 2;
  return v * c * (config.tieWordEmbeddings ? 1 : 2) + c + config.numLayers * perLayer;
}
