/**
 * Reads and writes a Hugging Face Llama `config.json`.
 *
 * Only the plain Llama architecture is supported (RMSNorm, RoPE plain or with Llama 3's
 * frequency scaling, grouped-query attention without biases, SwiGLU MLP), with or without tied
 * embeddings (the LM head reusing the embedding matrix; model/params.ts). Anything else is
 * rejected by the name of the key that asks for it, so a model never trains silently with the
 * wrong maths.
 *
 * RoPE is read as transformers 5 reads it: from `rope_parameters` (what transformers 5 writes:
 * `{"rope_type": "default" | "llama3", "rope_theta", ...}`) or from the legacy top-level
 * `rope_theta` and `rope_scaling` (what transformers 4 writes, and transformers 5 still reads,
 * preferring `rope_scaling` to `rope_parameters`; here the two must agree). See
 * docs/checkpoints.md.
 *
 * @module
 */

import type { RopeScaling } from "../shaders/mod.ts";

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
  /** RoPE base frequency θ (`rope_theta`). */
  ropeTheta: number;
  /** RoPE frequency scaling (`rope_scaling`: Llama 3's), or null for plain RoPE. */
  ropeScaling: RopeScaling | null;
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
  "rope_scaling",
  "rope_parameters",
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

/** The rope types this project implements, by transformers' `rope_type` names. */
const ROPE_TYPES = ["default", "llama3"] as const;
type RopeType = (typeof ROPE_TYPES)[number];

/** The keys a `rope_parameters` or `rope_scaling` object may hold, by rope type. */
const ROPE_KEYS: Record<RopeType, readonly string[]> = {
  default: ["rope_type", "type", "rope_theta", "partial_rotary_factor"],
  llama3: [
    "rope_type",
    "type",
    "rope_theta",
    "partial_rotary_factor",
    "factor",
    "low_freq_factor",
    "high_freq_factor",
    "original_max_position_embeddings",
  ],
};

/** One RoPE object of a config: its θ if it names one, and its scaling. */
interface RopeObject {
  theta: number | null;
  scaling: RopeScaling | null;
}

/** The HF form of a scaling (`rope_scaling`, with transformers 4's keys). */
function ropeScalingToHf(scaling: RopeScaling | null): Record<string, unknown> | null {
  if (scaling === null) return null;
  return {
    rope_type: scaling.ropeType,
    factor: scaling.factor,
    low_freq_factor: scaling.lowFreqFactor,
    high_freq_factor: scaling.highFreqFactor,
    original_max_position_embeddings: scaling.originalMaxPositionEmbeddings,
  };
}

/** Reads `rope_parameters` or `rope_scaling` (named `key`); errors name the inner key. */
function parseRopeObject(raw: unknown, key: "rope_parameters" | "rope_scaling"): RopeObject {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new HfConfigError(key, `must be an object or null, found ${JSON.stringify(raw)}`);
  }
  const obj = raw as Record<string, unknown>;
  const inner = (k: string) => `${key}.${k}`;
  // Older files name the type `type`, newer ones `rope_type`; an absent type is "default".
  const typeKeys = ["rope_type", "type"].filter((k) => obj[k] !== undefined);
  for (const k of typeKeys) {
    if (typeof obj[k] !== "string") {
      throw new HfConfigError(inner(k), `must be a string, found ${JSON.stringify(obj[k])}`);
    }
  }
  if (typeKeys.length === 2 && obj.rope_type !== obj.type) {
    throw new HfConfigError(
      inner("type"),
      `is ${JSON.stringify(obj.type)} but "${inner("rope_type")}" is ${
        JSON.stringify(obj.rope_type)
      }`,
    );
  }
  const type = (obj.rope_type ?? obj.type ?? "default") as string;
  if (!(ROPE_TYPES as readonly string[]).includes(type)) {
    throw new HfConfigError(
      inner(typeKeys[0]),
      `names rope type ${JSON.stringify(type)}, which is not supported (supported: ${
        ROPE_TYPES.join(", ")
      })`,
    );
  }
  const ropeType = type as RopeType;
  for (const k of Object.keys(obj)) {
    if (!ROPE_KEYS[ropeType].includes(k)) {
      throw new HfConfigError(inner(k), `is not a setting of rope type "${ropeType}"`);
    }
  }
  const number = (k: string, integer = false): number => {
    const v = obj[k];
    if (v === undefined || v === null) {
      throw new HfConfigError(inner(k), `is required for rope type "${ropeType}"`);
    }
    const ok = typeof v === "number" && (integer ? Number.isSafeInteger(v) : Number.isFinite(v));
    if (!ok || v <= 0) {
      const what = integer ? "a positive integer" : "a positive number";
      throw new HfConfigError(inner(k), `must be ${what}, found ${JSON.stringify(v)}`);
    }
    return v;
  };
  const prf = obj.partial_rotary_factor;
  if (prf !== undefined && prf !== null && prf !== 1) {
    throw new HfConfigError(
      inner("partial_rotary_factor"),
      `has unsupported value ${JSON.stringify(prf)} (only 1: RoPE on the whole head)`,
    );
  }
  const theta = obj.rope_theta === undefined || obj.rope_theta === null
    ? null
    : number("rope_theta");
  if (ropeType === "default") return { theta, scaling: null };
  const lowFreqFactor = number("low_freq_factor");
  const highFreqFactor = number("high_freq_factor");
  if (!(highFreqFactor > lowFreqFactor)) {
    throw new HfConfigError(
      inner("high_freq_factor"),
      `must be greater than low_freq_factor ${lowFreqFactor}, found ${highFreqFactor}`,
    );
  }
  return {
    theta,
    scaling: {
      ropeType,
      factor: number("factor"),
      lowFreqFactor,
      highFreqFactor,
      originalMaxPositionEmbeddings: number("original_max_position_embeddings", true),
    },
  };
}

/**
 * The RoPE settings of a config, read as transformers 5 reads them: `rope_scaling` (legacy) or
 * else `rope_parameters` gives the type and scaling; θ comes from either object or the top-level
 * `rope_theta` (default 10000). Where two of them say different things the file is refused, as no
 * single reading would be right for every reader.
 */
function parseRope(obj: Record<string, unknown>): Pick<LlamaConfig, "ropeTheta" | "ropeScaling"> {
  const given = (k: string) => obj[k] !== undefined && obj[k] !== null;
  const params = given("rope_parameters")
    ? parseRopeObject(obj.rope_parameters, "rope_parameters")
    : null;
  const legacy = given("rope_scaling") ? parseRopeObject(obj.rope_scaling, "rope_scaling") : null;
  if (params !== null && legacy !== null) {
    const [a, b] = [ropeScalingToHf(legacy.scaling), ropeScalingToHf(params.scaling)];
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      const describe = (s: Record<string, unknown> | null) =>
        s === null ? 'rope type "default"' : JSON.stringify(s);
      throw new HfConfigError(
        "rope_scaling",
        `describes ${describe(a)} but "rope_parameters" describes ${describe(b)}`,
      );
    }
  }
  const thetas: [string, number][] = [];
  if (given("rope_theta")) thetas.push(["rope_theta", positiveNumber(obj, "rope_theta")]);
  if (params?.theta) thetas.push(["rope_parameters.rope_theta", params.theta]);
  if (legacy?.theta) thetas.push(["rope_scaling.rope_theta", legacy.theta]);
  for (const [key, theta] of thetas.slice(1)) {
    if (theta !== thetas[0][1]) {
      throw new HfConfigError(key, `is ${theta} but "${thetas[0][0]}" is ${thetas[0][1]}`);
    }
  }
  return {
    ropeTheta: thetas[0]?.[1] ?? 10000,
    ropeScaling: (legacy ?? params)?.scaling ?? null,
  };
}

/**
 * Validates a parsed `config.json` object and returns the typed config.
 * Throws {@link HfConfigError} naming the first key that is missing, mistyped, unknown or asks
 * for an unsupported feature (a RoPE scaling other than llama3, biases, another activation, ...).
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
    ...parseRope(obj),
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
    // RoPE in the legacy keys, not transformers 5's `rope_parameters`: transformers 4 ignores
    // `rope_parameters` (it would rotate with its default θ 10000, unscaled), while transformers 5
    // still reads `rope_theta` and `rope_scaling` into its `rope_parameters`, so both read this
    // file alike.
    rope_theta: config.ropeTheta,
    rope_scaling: ropeScalingToHf(config.ropeScaling),
    initializer_range: config.initializerRange,
    attention_bias: false,
    mlp_bias: false,
    tie_word_embeddings: config.tieWordEmbeddings,
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
