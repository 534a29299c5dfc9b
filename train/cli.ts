/**
 * Command-line flags of `deno task train`, parsed into a typed, validated {@link TrainOptions}.
 * Flag names and defaults follow Psyche's `examples/train.rs`; an unknown flag, a missing value or
 * an out-of-range number is rejected with the flag's name.
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  DEFAULT_MAX_SHARD_BYTES,
  parseByteSize,
  PRECISION_CHOICES,
  type PrecisionChoice,
} from "../model/mod.ts";
import { UsageError } from "../common/mod.ts";

/** Learning-rate schedule shapes the trainer offers (all with linear warmup from 0). */
export const LR_SCHEDULES = ["constant", "cosine", "linear"] as const;
/** One of {@link LR_SCHEDULES}. */
export type LrScheduleName = typeof LR_SCHEDULES[number];
/** Optimizers the trainer offers. */
export const OPTIMIZERS = ["adamw", "distro"] as const;
/** One of {@link OPTIMIZERS}. */
export type OptimizerName = typeof OPTIMIZERS[number];

/** Everything the single-node trainer needs to know. */
export interface TrainOptions {
  /** Folder with `config.json` and optionally `model.safetensors`. */
  model: string;
  /** Folder of raw little-endian token files (`.ds`, `.bin`, `.npy`). */
  dataPath: string;
  /** Bytes per token in the data files. */
  tokenSize: 2 | 4;
  /** T: tokens per sequence. */
  sequenceLength: number;
  /** Sequences per forward/backward pass. */
  microBatch: number;
  /** Sequences per optimizer step (a multiple of microBatch). */
  totalBatch: number;
  /** Optimizer steps to run. */
  steps: number;
  optimizer: OptimizerName;
  learningRate: number;
  warmupSteps: number;
  lrSchedule: LrScheduleName;
  beta1: number;
  beta2: number;
  weightDecay: number;
  eps: number;
  /** 0 disables clipping. */
  maxGradNorm: number;
  /** DisTrO: chunk length bound per dimension (`--compression-chunk`, 1..256). */
  compressionChunk: number;
  /** DisTrO: coefficients kept per chunk (`--compression-topk`). */
  compressionTopk: number;
  /** DisTrO: decay of the residual momentum (`--compression-decay`). */
  compressionDecay: number;
  /** DisTrO: apply only the signs of the kept coefficients (`--distro-quantization`). */
  distroQuantization: boolean;
  /** Seeds the weight init (when the model folder has no weights) and the data shuffle. */
  seed: number;
  /** Shuffle the dataset's sequences (seeded by `seed`), as Psyche's train.rs does. */
  shuffle: boolean;
  /** Where to write the trained model (HF folder), or null. */
  savePath: string | null;
  /** Folder of held-out token files, or null. */
  evalDataPath: string | null;
  /** Evaluate every this many steps (0: only after the last step). */
  evalEvery: number;
  /** Held-out sequences per evaluation (rounded down to a multiple of the micro-batch). */
  evalSequences: number;
  /**
   * Storage precision of the matmul operands: f32, f16 (mixed precision, f32 masters), or auto
   * (f16 on a GPU with shader-f16, f32 elsewhere: model/precision.ts says why).
   */
  precision: PrecisionChoice;
  /** Storage dtype of the saved weights. */
  saveDtype: "F32" | "BF16" | "F16";
  /** Largest shard of a saved model; larger weights are split as HF does (model/shards.ts). */
  maxShardBytes: number;
  logs: "console" | "json";
}

/** Usage text printed by `--help` and on errors. */
export const USAGE = `Usage: deno task train --model DIR --data-path DIR [flags]

  --model DIR             config.json (+ optional model.safetensors; else seeded init)
  --data-path DIR         folder of raw little-endian token files (.ds/.bin/.npy)
  --token-size 2|4        bytes per token (default 2)
  --sequence-length N     tokens per sequence (default 2048)
  --micro-batch N         sequences per forward/backward (default 8)
  --total-batch N         sequences per optimizer step (default 256)
  --steps N               optimizer steps (default 25000)
  --optimizer adamw|distro  (default adamw)
  --learning-rate X       peak learning rate (default 4e-4)
  --warmup-steps N        linear warmup from 0 (default 500)
  --lr-schedule constant|cosine|linear  decay to lr/10 at the last step (default cosine)
  --beta1 X --beta2 X --weight-decay X --eps X   AdamW (defaults 0.9, 0.95, 0.1, 1e-8)
  --max-grad-norm X       clip the global gradient norm; 0 disables (default 1.0)
  --compression-chunk N --compression-topk N --compression-decay X   DisTrO (64, 4, 0.999)
  --quantize-1bit         DisTrO: send 1-bit (sign) values (alias: --distro-quantization)
  --seed N                init and shuffle seed, u32 (default 1)
  --no-shuffle            read sequences in file order
  --eval-data-path DIR    held-out token files: mean loss logged after the last step
  --eval-every N          ... and every N steps (default 0: only at the end)
  --eval-sequences N      held-out sequences per evaluation (default 32)
  --save-path DIR         write config.json + model.safetensors at the end
  --save-dtype f32|bf16|f16  dtype of the saved weights (default f32)
  --max-shard-size SIZE   split saved weights into model-0000K-of-0000N.safetensors shards
                          of at most SIZE (bytes, or 500MB, 2GB, 1GiB; default 2GB)
  --precision f32|f16|auto  matmul operands; f16 keeps f32 master weights, gradients and
                          optimizer state; auto = f16 on a GPU with shader-f16, else f32
                          (f16 is slower on CPU adapters such as lavapipe) (default auto)
  --logs console|json     human lines, or one JSON object per line (default console)
`;

const STRING_FLAGS = [
  "model",
  "data-path",
  "token-size",
  "sequence-length",
  "micro-batch",
  "total-batch",
  "steps",
  "optimizer",
  "learning-rate",
  "warmup-steps",
  "lr-schedule",
  "beta1",
  "beta2",
  "weight-decay",
  "eps",
  "max-grad-norm",
  "compression-chunk",
  "compression-topk",
  "compression-decay",
  "seed",
  "save-path",
  "eval-data-path",
  "eval-every",
  "eval-sequences",
  "save-dtype",
  "max-shard-size",
  "precision",
  "logs",
] as const;

/**
 * Parses `argv` (without the program name). Returns `"help"` for `--help`.
 * Throws {@link UsageError} naming the flag on any problem.
 */
export function parseTrainArgs(argv: string[]): TrainOptions | "help" {
  let values: Record<string, string | boolean | undefined>;
  try {
    const options: Record<string, { type: "string" | "boolean" }> = {
      help: { type: "boolean" },
      "no-shuffle": { type: "boolean" },
      "distro-quantization": { type: "boolean" },
      "quantize-1bit": { type: "boolean" },
    };
    for (const f of STRING_FLAGS) options[f] = { type: "string" };
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help) return "help";
  const str = (flag: string): string | undefined => values[flag] as string | undefined;
  const required = (flag: string): string => {
    const v = str(flag);
    if (v === undefined || v === "") throw new UsageError(`--${flag} is required`);
    return v;
  };
  const int = (flag: string, fallback: number, min: number, max = 2 ** 32 - 1): number => {
    const raw = str(flag);
    if (raw === undefined) return fallback;
    const v = Number(raw);
    if (!/^\d+$/.test(raw) || v < min || v > max) {
      throw new UsageError(`--${flag} must be an integer in [${min}, ${max}], found "${raw}"`);
    }
    return v;
  };
  const num = (flag: string, fallback: number, ok: (v: number) => boolean, what: string) => {
    const raw = str(flag);
    if (raw === undefined) return fallback;
    const v = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(v) || !ok(v)) {
      throw new UsageError(`--${flag} must be ${what}, found "${raw}"`);
    }
    return v;
  };
  const choice = <T extends string>(flag: string, choices: readonly T[], fallback: T): T => {
    const raw = str(flag);
    if (raw === undefined) return fallback;
    if (!(choices as readonly string[]).includes(raw)) {
      throw new UsageError(`--${flag} must be one of ${choices.join(", ")}, found "${raw}"`);
    }
    return raw as T;
  };
  const byteSize = (flag: string, fallback: number): number => {
    const raw = str(flag);
    if (raw === undefined) return fallback;
    try {
      return parseByteSize(raw);
    } catch (e) {
      throw new UsageError(`--${flag}: ${(e as Error).message}`);
    }
  };
  const unit = (v: number) => v >= 0 && v < 1;
  const tokenSize = int("token-size", 2, 2, 4);
  if (tokenSize !== 2 && tokenSize !== 4) {
    throw new UsageError(`--token-size must be 2 or 4, found "${tokenSize}"`);
  }
  const microBatch = int("micro-batch", 8, 1);
  const totalBatch = int("total-batch", 256, 1);
  if (totalBatch % microBatch !== 0) {
    throw new UsageError(
      `--total-batch ${totalBatch} must be a multiple of --micro-batch ${microBatch}`,
    );
  }
  const savePath = str("save-path");
  const evalDataPath = str("eval-data-path");
  return {
    model: required("model"),
    dataPath: required("data-path"),
    tokenSize,
    sequenceLength: int("sequence-length", 2048, 2),
    microBatch,
    totalBatch,
    steps: int("steps", 25000, 1),
    optimizer: choice("optimizer", OPTIMIZERS, "adamw"),
    learningRate: num("learning-rate", 4e-4, (v) => v > 0, "a positive number"),
    warmupSteps: int("warmup-steps", 500, 0),
    lrSchedule: choice("lr-schedule", LR_SCHEDULES, "cosine"),
    beta1: num("beta1", 0.9, unit, "in [0, 1)"),
    beta2: num("beta2", 0.95, unit, "in [0, 1)"),
    weightDecay: num("weight-decay", 0.1, (v) => v >= 0, "a non-negative number"),
    eps: num("eps", 1e-8, (v) => v > 0, "a positive number"),
    maxGradNorm: num("max-grad-norm", 1.0, (v) => v >= 0, "a non-negative number"),
    compressionChunk: int("compression-chunk", 64, 1, 256),
    compressionTopk: int("compression-topk", 4, 1),
    compressionDecay: num("compression-decay", 0.999, unit, "in [0, 1)"),
    distroQuantization: values["distro-quantization"] === true ||
      values["quantize-1bit"] === true,
    seed: int("seed", 1, 0),
    shuffle: !values["no-shuffle"],
    savePath: savePath === undefined || savePath === "" ? null : savePath,
    evalDataPath: evalDataPath === undefined || evalDataPath === "" ? null : evalDataPath,
    evalEvery: int("eval-every", 0, 0),
    evalSequences: int("eval-sequences", 32, 1),
    saveDtype: ({ f32: "F32", bf16: "BF16", f16: "F16" } as const)[
      choice("save-dtype", ["f32", "bf16", "f16"] as const, "f32")
    ],
    maxShardBytes: byteSize("max-shard-size", DEFAULT_MAX_SHARD_BYTES),
    precision: choice("precision", PRECISION_CHOICES, "auto"),
    logs: choice("logs", ["console", "json"] as const, "console"),
  };
}
