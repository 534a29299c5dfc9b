/**
 * Command-line flags of `deno task train`, parsed into a typed, validated {@link TrainOptions}.
 * Flag names and defaults follow Psyche's `examples/train.rs`; an unknown flag, a missing value or
 * an out-of-range number is rejected with the flag's name.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
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

/** The bundled demo model (a 1.9M-parameter byte-level Llama), the default `--model`. */
export const DEMO_MODEL: string = fileURLToPath(
  new URL("../config/models/llama-bytes", import.meta.url),
);
/** The bundled byte corpus (data/corpus.ts builds it on first use), the default data. */
export const DEMO_CORPUS: string = fileURLToPath(
  new URL("../data/corpus/brown-bytes", import.meta.url),
);
/**
 * Defaults of the demo (no `--model`, no `--resume`): sized so the bundled model learns
 * visibly in a few minutes on two CPU cores (about 3 s a step on a loaded 2-core lavapipe).
 */
export const DEMO_DEFAULTS = {
  sequenceLength: 256,
  microBatch: 4,
  totalBatch: 4,
  steps: 150,
  learningRate: 3e-3,
  warmupSteps: 10,
  evalEvery: 50,
} as const;

/** Everything the single-node trainer needs to know. */
export interface TrainOptions {
  /** Folder with `config.json` and optionally `model.safetensors`. */
  model: string;
  /** Folder of raw little-endian token files (`.ds`, `.bin`, `.npy`). */
  dataPath: string;
  /** True when `dataPath` is the bundled byte corpus, built on first use. */
  demoData: boolean;
  /** Bytes per token in the data files. */
  tokenSize: 2 | 4;
  /** T: tokens per sequence; null: the model's `max_position_embeddings`, at most 2048. */
  sequenceLength: number | null;
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
  /**
   * Where checkpoints go (HF folder + trainer state): at the end, every `saveEvery` steps and on
   * SIGINT/SIGTERM. Default `checkpoints/<model folder name>`, or the `--resume` folder; null
   * (`--no-save`) saves nothing.
   */
  savePath: string | null;
  /** Save a checkpoint every this many steps (0: only at the end and on interrupt). */
  saveEvery: number;
  /** A checkpoint folder to continue from, or null. */
  resume: string | null;
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
export const USAGE = `Usage: deno task train [--model DIR] [--data-path DIR] [flags]

With no flags: trains the bundled demo model (config/models/llama-bytes) on the bundled Brown
corpus as bytes (data/corpus/brown-bytes, built on first use) with the demo defaults in [].
Ctrl-C (SIGINT) or SIGTERM saves a resumable checkpoint to --save-path and exits 0.

  --model DIR             config.json (+ optional model.safetensors; else seeded init)
                          [config/models/llama-bytes]
  --data-path DIR         folder of raw little-endian token files (.ds/.bin/.npy)
                          (default data/corpus/brown-bytes/train)
  --token-size 2|4        bytes per token (default 2)
  --sequence-length N     tokens per sequence (default: the model's max_position_embeddings,
                          at most 2048) [256]
  --micro-batch N         sequences per forward/backward (default 8) [4]
  --total-batch N         sequences per optimizer step (default 256) [4]
  --steps N               the run's last step (default 25000) [150]
  --optimizer adamw|distro  (default adamw)
  --learning-rate X       peak learning rate (default 4e-4) [3e-3]
  --warmup-steps N        linear warmup from 0 (default 500) [10]
  --lr-schedule constant|cosine|linear  decay to lr/10 at the last step (default cosine)
  --beta1 X --beta2 X --weight-decay X --eps X   AdamW (defaults 0.9, 0.95, 0.1, 1e-8)
  --max-grad-norm X       clip the global gradient norm; 0 disables (default 1.0)
  --compression-chunk N --compression-topk N --compression-decay X   DisTrO (64, 4, 0.999)
  --quantize-1bit         DisTrO: send 1-bit (sign) values (alias: --distro-quantization)
  --seed N                init and shuffle seed, u32 (default 1)
  --no-shuffle            read sequences in file order
  --eval-data-path DIR    held-out token files: mean loss logged after the last step
                          [data/corpus/brown-bytes/validation]
  --eval-every N          ... and every N steps (default 0: only at the end) [50]
  --eval-sequences N      held-out sequences per evaluation (default 32)
  --save-path DIR         checkpoint folder: config.json + model.safetensors (a Hugging Face
                          folder) + trainer_state.json + optimizer.safetensors, written
                          atomically at the end, every --save-every steps and on SIGINT/SIGTERM
                          (default checkpoints/<model folder name>, or the --resume folder)
  --save-every N          also save every N steps (default 0: only at the end and on interrupt)
  --no-save               save nothing
  --resume DIR            continue a checkpoint: weights, optimizer state, step, data position;
                          --steps is the run's last step (the same flags as the saved run)
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
  "save-every",
  "resume",
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
      "no-save": { type: "boolean" },
    };
    for (const f of STRING_FLAGS) options[f] = { type: "string" };
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help) return "help";
  const str = (flag: string): string | undefined => values[flag] as string | undefined;
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
  const resumeFlag = str("resume");
  const resume = resumeFlag === undefined || resumeFlag === "" ? null : resumeFlag;
  const modelFlag = str("model");
  // The demo's defaults apply when no model is named (a resumed run names its own).
  const demo = (modelFlag === undefined || modelFlag === "") && resume === null;
  const model = modelFlag !== undefined && modelFlag !== "" ? modelFlag : resume ?? DEMO_MODEL;
  const dataFlag = str("data-path");
  const demoData = dataFlag === undefined || dataFlag === "";
  const microBatch = int("micro-batch", demo ? DEMO_DEFAULTS.microBatch : 8, 1);
  const totalBatch = int("total-batch", demo ? DEMO_DEFAULTS.totalBatch : 256, 1);
  if (totalBatch % microBatch !== 0) {
    throw new UsageError(
      `--total-batch ${totalBatch} must be a multiple of --micro-batch ${microBatch}`,
    );
  }
  const savePathFlag = str("save-path");
  const savePath = values["no-save"]
    ? null
    : savePathFlag !== undefined && savePathFlag !== ""
    ? savePathFlag
    : resume ?? `checkpoints/${basename(model.replace(/\/+$/, "")) || "model"}`;
  const evalFlag = str("eval-data-path");
  const evalDataPath = evalFlag !== undefined && evalFlag !== ""
    ? evalFlag
    : demo && demoData
    ? `${DEMO_CORPUS}/validation`
    : null;
  const sequenceLengthFlag = int("sequence-length", 0, 2);
  return {
    model,
    dataPath: demoData ? `${DEMO_CORPUS}/train` : dataFlag,
    demoData,
    tokenSize,
    sequenceLength: sequenceLengthFlag !== 0
      ? sequenceLengthFlag
      : demo
      ? DEMO_DEFAULTS.sequenceLength
      : null,
    microBatch,
    totalBatch,
    steps: int("steps", demo ? DEMO_DEFAULTS.steps : 25000, 1),
    optimizer: choice("optimizer", OPTIMIZERS, "adamw"),
    learningRate: num(
      "learning-rate",
      demo ? DEMO_DEFAULTS.learningRate : 4e-4,
      (v) => v > 0,
      "a positive number",
    ),
    warmupSteps: int("warmup-steps", demo ? DEMO_DEFAULTS.warmupSteps : 500, 0),
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
    savePath,
    saveEvery: int("save-every", 0, 0),
    resume,
    evalDataPath,
    evalEvery: int("eval-every", demo && evalFlag === undefined ? DEMO_DEFAULTS.evalEvery : 0, 0),
    evalSequences: int("eval-sequences", 32, 1),
    saveDtype: ({ f32: "F32", bf16: "BF16", f16: "F16" } as const)[
      choice("save-dtype", ["f32", "bf16", "f16"] as const, "f32")
    ],
    maxShardBytes: byteSize("max-shard-size", DEFAULT_MAX_SHARD_BYTES),
    precision: choice("precision", PRECISION_CHOICES, "auto"),
    logs: choice("logs", ["console", "json"] as const, "console"),
  };
}
