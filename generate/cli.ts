/**
 * Command-line flags of `deno task generate`, declared once in {@link GENERATE_SPEC} (cli/flags.ts:
 * generated help, did-you-mean, `PSYCHE_*` variables) and checked into a typed
 * {@link GenerateCliOptions}; a bad value is rejected with the flag's name. Pure.
 *
 * @module
 */
import { UsageError } from "../common/mod.ts";
import type { CommandSpec, FlagSpec, FlagValues } from "../cli/entry.ts";
import { TOKENIZER_CHOICES, type TokenizerChoice } from "../data/mod.ts";
import type { SamplingOptions } from "./sampling.ts";

/** Everything `deno task generate` needs to know. */
export interface GenerateCliOptions {
  /** A checkpoint folder, or a Hub repo id (`owner/name`, `owner/name@revision`) on disk. */
  model: string;
  prompt: string;
  maxNewTokens: number;
  sampling: SamplingOptions;
  /** Seeds the draws of sampling (unused when greedy). */
  seed: number;
  tokenizer: TokenizerChoice;
  /** False: no KV cache, the whole sequence re-read for every token (for comparison). */
  cache: boolean;
  logs: "console" | "json";
}

/** Tokens generated when `--max-new-tokens` is not given. */
export const DEFAULT_MAX_NEW_TOKENS = 128;

/** The flags of `deno task generate`. */
export const GENERATE_SPEC = {
  usage: "deno task generate --model DIR|REPO_ID [--prompt TEXT] [options]",
  summary: "Samples text from a Hugging Face Llama checkpoint (config.json + model.safetensors, " +
    "or its shards): the folders `deno task train` and `deno task demo` save, or a Hub repo " +
    "already on disk. The prompt is read once, then each new token costs one token's forward " +
    "pass over a key/value cache. Greedy by default (the same text every time); --temperature " +
    "above 0 samples, from a seeded stream (--seed). The text goes to stdout as it is made; the " +
    "model line and the speed (tokens per second) go to stderr.",
  flags: {
    model: {
      type: "string",
      value: "DIR|REPO_ID",
      description: "a checkpoint folder (e.g. checkpoints/llama-bytes, runs/demo/client-1/...), " +
        "or a Hub repo id (owner/name[@revision]) found in $PSYCHE_HUB_DIR or the Hugging Face " +
        "cache",
      required: true,
    },
    prompt: {
      type: "string",
      value: "TEXT",
      description: "the text to continue",
      defaultText: "empty: a new document",
    },
    "max-new-tokens": {
      type: "string",
      value: "N",
      description: "tokens to generate at most (fewer on </s> or at max_position_embeddings)",
      default: String(DEFAULT_MAX_NEW_TOKENS),
    },
    temperature: {
      type: "string",
      value: "X",
      description: "0: greedy (the most likely token); above 0: sample from softmax(logits / X)",
      default: "0",
    },
    "top-k": {
      type: "string",
      value: "N",
      description: "sample among the N most likely tokens only (0: all)",
      default: "0",
    },
    "top-p": {
      type: "string",
      value: "X",
      description: "sample among the most likely tokens whose probability reaches X (1: all)",
      default: "1",
    },
    seed: {
      type: "string",
      value: "N",
      description: "seed of the sampling draws, u32: the same seed gives the same text",
      default: "1",
    },
    tokenizer: {
      type: "string",
      value: TOKENIZER_CHOICES.join("|"),
      description: "bytes (UTF-8, vocab_size 256) or llama (LLaMA-2, 32000); auto picks by " +
        "vocab_size (docs/using-the-model.md)",
      default: "auto",
    },
    "no-cache": {
      type: "boolean",
      description: "re-read the whole sequence for every token instead of using the KV cache " +
        "(same tokens, slower: for comparison)",
    },
    logs: {
      type: "string",
      value: "console|json",
      description: "text and a summary, or one JSON object per line (docs/logs.md)",
      default: "console",
    },
  },
  footer: "Exit status: 0 done, 1 the model cannot be used (a missing folder, no weights, no " +
    "bundled tokenizer for its vocabulary), 2 bad arguments.\n\n" +
    "Example:\n" +
    '  deno task generate --model checkpoints/llama-bytes --prompt "The jury said" \\\n' +
    "    --max-new-tokens 64 --temperature 0.8 --top-p 0.95 --seed 7",
} as const satisfies CommandSpec;

/** The parsed flags of `deno task generate`. */
export type GenerateFlags = FlagValues<typeof GENERATE_SPEC>;

/**
 * The checked options of flags parsed against {@link GENERATE_SPEC}. Throws {@link UsageError}
 * naming the flag.
 */
export function generateOptions(values: GenerateFlags): GenerateCliOptions {
  type Flag = keyof GenerateFlags;
  const text = (flag: Flag): string => {
    const v = values[flag];
    if (typeof v === "string") return v;
    const spec: FlagSpec = GENERATE_SPEC.flags[flag];
    if (spec.default === undefined) throw new Error(`--${flag} has no default in GENERATE_SPEC`);
    return spec.default;
  };
  const int = (flag: Flag, min: number, max = 2 ** 32 - 1): number => {
    const r = text(flag);
    const v = Number(r);
    if (!/^\d+$/.test(r) || v < min || v > max) {
      throw new UsageError(`--${flag} must be an integer in [${min}, ${max}], found "${r}"`);
    }
    return v;
  };
  const num = (flag: Flag, ok: (v: number) => boolean, what: string): number => {
    const r = text(flag);
    const v = Number(r);
    if (r.trim() === "" || !Number.isFinite(v) || !ok(v)) {
      throw new UsageError(`--${flag} must be ${what}, found "${r}"`);
    }
    return v;
  };
  const choice = <T extends string>(flag: Flag, choices: readonly T[]): T => {
    const r = text(flag);
    if (!(choices as readonly string[]).includes(r)) {
      throw new UsageError(`--${flag} must be one of ${choices.join(", ")}, found "${r}"`);
    }
    return r as T;
  };
  const model = values.model;
  if (typeof model !== "string" || model === "") {
    throw new UsageError("--model is required: a checkpoint folder or a Hub repo id");
  }
  return {
    model,
    prompt: typeof values.prompt === "string" ? values.prompt : "",
    maxNewTokens: int("max-new-tokens", 1),
    sampling: {
      temperature: num("temperature", (v) => v >= 0, "a number >= 0 (0: greedy)"),
      topK: int("top-k", 0),
      topP: num("top-p", (v) => v > 0 && v <= 1, "in (0, 1] (1: off)"),
    },
    seed: int("seed", 0),
    tokenizer: choice("tokenizer", TOKENIZER_CHOICES),
    cache: values["no-cache"] !== true,
    logs: choice("logs", ["console", "json"] as const),
  };
}
