/**
 * Command-line flags of `deno task train`, declared once in {@link TRAIN_SPEC} (cli/flags.ts:
 * generated help, did-you-mean, `PSYCHE_*` variables) and checked into a typed
 * {@link TrainOptions}. Flag names and defaults follow Psyche's `examples/train.rs`; an unknown
 * flag, a missing value or an out-of-range number is rejected with the flag's name.
 *
 * @module
 */
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import {
  DEFAULT_MAX_SHARD_BYTES,
  parseByteSize,
  PRECISION_CHOICES,
  type PrecisionChoice,
} from "../model/mod.ts";
import { UsageError } from "../common/mod.ts";
import {
  type CommandSpec,
  type EnvLookup,
  explainEnv,
  type FlagSpec,
  type FlagValues,
  parseFlags,
} from "../cli/entry.ts";

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

/** Settings a resumed run takes from its checkpoint unless the command line gives them. */
export const CHECKPOINT_SETTINGS = [
  "optimizer",
  "total-batch",
  "micro-batch",
  "sequence-length",
  "shuffle",
] as const;
/** One of {@link CHECKPOINT_SETTINGS}. */
export type CheckpointSetting = typeof CHECKPOINT_SETTINGS[number];

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
  /**
   * With `resume`: the settings the command line left unset, which the run takes from the
   * checkpoint's `trainer_state.json` (train/resume_options.ts) rather than from the defaults.
   * Empty without `resume`.
   */
  fromCheckpoint: readonly CheckpointSetting[];
  /** Folder of held-out token files, or null. */
  evalDataPath: string | null;
  /** Evaluate every this many steps (0: only after the last step). */
  evalEvery: number;
  /** Held-out sequences per evaluation (rounded down to a multiple of the micro-batch). */
  evalSequences: number;
  /**
   * Storage precision of the matmul operands: f32, f16 or bf16 (mixed precision, f32 masters),
   * or auto (f16 on a GPU with shader-f16, f32 elsewhere: model/precision.ts says why).
   */
  precision: PrecisionChoice;
  /**
   * Keep one layer's activations and recompute each layer's in the backward (`--recompute`,
   * model/recompute.ts): bit-identical training, less memory, more compute.
   */
  recompute: boolean;
  /** Storage dtype of the saved weights. */
  saveDtype: "F32" | "BF16" | "F16";
  /** Largest shard of a saved model; larger weights are split as HF does (model/shards.ts). */
  maxShardBytes: number;
  logs: "console" | "json";
}

/**
 * The flags of `deno task train`, declared once: cli/flags.ts parses them, reads `PSYCHE_*`
 * variables, suggests the flag meant and writes `--help`. Defaults that differ in the demo (no
 * `--model`, no `--resume`) are computed by {@link trainOptions} and shown as `defaultText`.
 */
export const TRAIN_SPEC = {
  usage: "deno task train [--model DIR] [--data-path DIR] [options]",
  summary: "Trains a Hugging Face Llama folder on a local token folder with AdamW or single-node " +
    "DisTrO (Psyche's examples/train.rs). With no --model and no --data-path: trains the bundled " +
    "demo model (config/models/llama-bytes) on the bundled Brown corpus as bytes " +
    "(data/corpus/brown-bytes, built on first use) with the demo defaults. Ctrl-C (SIGINT) or " +
    "SIGTERM saves a resumable checkpoint to --save-path and exits 0; a second one aborts.",
  flags: {
    model: {
      type: "string",
      value: "DIR",
      description: "config.json (+ optional model.safetensors; else seeded init)",
      defaultText: "the demo's config/models/llama-bytes, or the --resume folder",
    },
    "data-path": {
      type: "string",
      value: "DIR",
      description: "folder of raw little-endian token files (.ds/.bin/.npy)",
      defaultText: "the demo's data/corpus/brown-bytes/train",
    },
    "token-size": { type: "string", value: "2|4", description: "bytes per token", default: "2" },
    "sequence-length": {
      type: "string",
      value: "N",
      description: "tokens per sequence",
      defaultText:
        "the model's max_position_embeddings, at most 2048; demo 256; a resume: the checkpoint's",
    },
    "micro-batch": {
      type: "string",
      value: "N",
      description: "sequences per forward/backward pass",
      defaultText: "8; demo 4; a resume: the checkpoint's",
    },
    "total-batch": {
      type: "string",
      value: "N",
      description: "sequences per optimizer step (a multiple of --micro-batch)",
      defaultText: "256; demo 4; a resume: the checkpoint's",
    },
    steps: {
      type: "string",
      value: "N",
      description: "the run's last step",
      defaultText: "25000; demo 150",
    },
    optimizer: {
      type: "string",
      value: OPTIMIZERS.join("|"),
      description: "the optimizer",
      // Computed, not a spec default, so a resume can tell a given optimizer from the default.
      defaultText: "adamw; a resume: the checkpoint's",
    },
    "learning-rate": {
      type: "string",
      value: "X",
      description: "peak learning rate",
      defaultText: "4e-4; demo 3e-3",
    },
    "warmup-steps": {
      type: "string",
      value: "N",
      description: "linear warmup from 0",
      defaultText: "500; demo 10",
    },
    "lr-schedule": {
      type: "string",
      value: LR_SCHEDULES.join("|"),
      description: "after warmup: constant, or decay to lr/10 at the last step",
      default: "cosine",
    },
    beta1: { type: "string", value: "X", description: "AdamW beta1", default: "0.9" },
    beta2: { type: "string", value: "X", description: "AdamW beta2", default: "0.95" },
    "weight-decay": { type: "string", value: "X", description: "weight decay", default: "0.1" },
    eps: { type: "string", value: "X", description: "AdamW epsilon", default: "1e-8" },
    "max-grad-norm": {
      type: "string",
      value: "X",
      description: "clip the global gradient norm; 0 disables",
      default: "1.0",
    },
    "compression-chunk": {
      type: "string",
      value: "N",
      description: "DisTrO: chunk length bound per dimension, 1..256",
      default: "64",
    },
    "compression-topk": {
      type: "string",
      value: "N",
      description: "DisTrO: coefficients kept per chunk",
      default: "4",
    },
    "compression-decay": {
      type: "string",
      value: "X",
      description: "DisTrO: decay of the residual momentum",
      default: "0.999",
    },
    "quantize-1bit": {
      type: "boolean",
      description: "DisTrO: send 1-bit (sign) values",
    },
    "distro-quantization": { type: "boolean", description: "the same as --quantize-1bit" },
    seed: {
      type: "string",
      value: "N",
      description: "init and shuffle seed, u32 (a resume: the checkpoint's shuffle seed)",
      // Computed, not a spec default, so a resume can tell a given seed from the default.
      defaultText: "1",
    },
    "no-shuffle": { type: "boolean", description: "read sequences in file order" },
    "eval-data-path": {
      type: "string",
      value: "DIR",
      description: "held-out token files: mean loss logged after the last step",
      defaultText: "none; demo data/corpus/brown-bytes/validation",
    },
    "eval-every": {
      type: "string",
      value: "N",
      description: "also evaluate every N steps (0: only after the last step)",
      defaultText: "0; demo 50",
    },
    "eval-sequences": {
      type: "string",
      value: "N",
      description: "held-out sequences per evaluation",
      default: "32",
    },
    "save-path": {
      type: "string",
      value: "DIR",
      description: "checkpoint folder: config.json + model.safetensors (a Hugging Face folder) + " +
        "trainer_state.json + optimizer.safetensors, written atomically at the end, every " +
        "--save-every steps and on SIGINT/SIGTERM",
      defaultText: "checkpoints/<model folder name>, or the --resume folder",
    },
    "save-every": {
      type: "string",
      value: "N",
      description: "also save every N steps (0: only at the end and on interrupt)",
      default: "0",
    },
    "no-save": { type: "boolean", description: "save nothing" },
    resume: {
      type: "string",
      value: "DIR",
      description: "continue a checkpoint: weights, optimizer state, step, data position; " +
        "--steps is the run's last step; the optimizer, batch sizes, sequence length and shuffle " +
        "seed not given are the saved run's (give its learning-rate flags again)",
    },
    "save-dtype": {
      type: "string",
      value: "f32|bf16|f16",
      description: "dtype of the saved weights",
      default: "f32",
    },
    "max-shard-size": {
      type: "string",
      value: "SIZE",
      description: "split saved weights into model-0000K-of-0000N.safetensors shards of at most " +
        "SIZE (bytes, or 500MB, 2GB, 1GiB)",
      defaultText: "2GB",
    },
    precision: {
      type: "string",
      value: PRECISION_CHOICES.join("|"),
      description: "matmul operands; f16 and bf16 keep f32 master weights, gradients and " +
        "optimizer state (bf16 needs no shader-f16); auto is f16 on a GPU with shader-f16, else f32 (f16 is slower on CPU adapters " +
        "such as lavapipe)",
      default: "auto",
    },
    recompute: {
      type: "boolean",
      description: "keep one layer's activations and recompute each layer's in the backward: " +
        "the same bits, about a third more compute, for a model or micro-batch that does not " +
        "fit otherwise",
    },
    logs: {
      type: "string",
      value: "console|json",
      description: "human lines, or one JSON object per line (docs/logs.md)",
      default: "console",
    },
  },
  footer: "Exit status: 0 done (or stopped by a signal and saved), 1 the run failed (a model, " +
    "data or checkpoint that cannot be used, a run that cannot fit), 2 bad arguments.",
} as const satisfies CommandSpec;

/** The parsed flags of `deno task train`, before {@link trainOptions} checks them. */
export type TrainFlags = FlagValues<typeof TRAIN_SPEC>;

/**
 * Parses `argv` (without the program name) against {@link TRAIN_SPEC}, reading `PSYCHE_*`
 * variables from `options.env` when given (none by default: a caller that builds its own
 * arguments, such as compare-optimizers, is not steered by the environment). Returns `"help"`
 * for `-h`/`--help`. Throws {@link UsageError} naming the flag on any problem.
 */
export function parseTrainArgs(
  argv: readonly string[],
  options: { env?: EnvLookup } = {},
): TrainOptions | "help" {
  const parsed = parseFlags(TRAIN_SPEC, argv, options);
  if (parsed.help) return "help";
  return explainEnv(parsed, () => trainOptions(parsed.values));
}

/**
 * The checked {@link TrainOptions} of flags parsed against {@link TRAIN_SPEC} (which filled in
 * the spec's defaults): ranges, choices, the demo's defaults when no model is named, the save
 * path. Throws {@link UsageError} naming the flag.
 */
export function trainOptions(values: TrainFlags): TrainOptions {
  type Flag = keyof TrainFlags;
  // The value given, else the spec's default, else `computed` (the defaults that depend on
  // other flags: the demo's, the save path's).
  const raw = (flag: Flag, computed?: string): string | undefined => {
    const v = values[flag];
    if (typeof v === "string") return v;
    const spec: FlagSpec = TRAIN_SPEC.flags[flag];
    return spec.default ?? computed;
  };
  // An empty folder flag (`--model=`, `PSYCHE_RESUME=`) is not given.
  const folder = (flag: Flag): string | undefined => {
    const v = raw(flag);
    return v === "" ? undefined : v;
  };
  const text = (flag: Flag): string => {
    const r = raw(flag);
    if (r === undefined) throw new Error(`--${flag} has no default in TRAIN_SPEC`);
    return r;
  };
  const int = (flag: Flag, min: number, max = 2 ** 32 - 1, computed?: number): number => {
    const r = raw(flag, computed === undefined ? undefined : String(computed)) ?? text(flag);
    const v = Number(r);
    if (!/^\d+$/.test(r) || v < min || v > max) {
      throw new UsageError(`--${flag} must be an integer in [${min}, ${max}], found "${r}"`);
    }
    return v;
  };
  const num = (flag: Flag, ok: (v: number) => boolean, what: string, computed?: number) => {
    const r = raw(flag, computed === undefined ? undefined : String(computed)) ?? text(flag);
    const v = Number(r);
    if (r.trim() === "" || !Number.isFinite(v) || !ok(v)) {
      throw new UsageError(`--${flag} must be ${what}, found "${r}"`);
    }
    return v;
  };
  const choice = <T extends string>(flag: Flag, choices: readonly T[], computed?: T): T => {
    const r = raw(flag, computed) ?? text(flag);
    if (!(choices as readonly string[]).includes(r)) {
      throw new UsageError(`--${flag} must be one of ${choices.join(", ")}, found "${r}"`);
    }
    return r as T;
  };
  const unit = (v: number) => v >= 0 && v < 1;
  const tokenSize = int("token-size", 2, 4);
  if (tokenSize !== 2 && tokenSize !== 4) {
    throw new UsageError(`--token-size must be 2 or 4, found "${tokenSize}"`);
  }
  const resume = folder("resume") ?? null;
  const modelFlag = folder("model");
  // The demo's defaults apply when no model is named (a resumed run names its own).
  const demo = modelFlag === undefined && resume === null;
  const model = modelFlag ?? resume ?? DEMO_MODEL;
  const dataFlag = folder("data-path");
  const microBatch = int("micro-batch", 1, undefined, demo ? DEMO_DEFAULTS.microBatch : 8);
  const totalBatch = int("total-batch", 1, undefined, demo ? DEMO_DEFAULTS.totalBatch : 256);
  // A resume checks these once the checkpoint's values have filled in what is not given.
  const given = (flag: Flag) => typeof values[flag] === "string";
  const fromCheckpoint = resume === null
    ? []
    : CHECKPOINT_SETTINGS.filter((s) =>
      s === "shuffle" ? !given("seed") && values["no-shuffle"] !== true : !given(s)
    );
  const batchFromCheckpoint = fromCheckpoint.some((s) =>
    s === "total-batch" || s === "micro-batch"
  );
  if (!batchFromCheckpoint && totalBatch % microBatch !== 0) {
    throw new UsageError(
      `--total-batch ${totalBatch} must be a multiple of --micro-batch ${microBatch}`,
    );
  }
  const savePath = values["no-save"] === true ? null : folder("save-path") ?? resume ??
    `checkpoints/${basename(model.replace(/\/+$/, "")) || "model"}`;
  const evalFlag = folder("eval-data-path");
  const evalDataPath = evalFlag ??
    (demo && dataFlag === undefined ? `${DEMO_CORPUS}/validation` : null);
  const sequenceLength = raw("sequence-length") === undefined && !demo
    ? null
    : int("sequence-length", 2, undefined, DEMO_DEFAULTS.sequenceLength);
  const maxShard = raw("max-shard-size");
  let maxShardBytes = DEFAULT_MAX_SHARD_BYTES;
  if (maxShard !== undefined) {
    try {
      maxShardBytes = parseByteSize(maxShard);
    } catch (e) {
      throw new UsageError(`--max-shard-size: ${(e as Error).message}`);
    }
  }
  return {
    model,
    dataPath: dataFlag ?? `${DEMO_CORPUS}/train`,
    demoData: dataFlag === undefined,
    tokenSize,
    sequenceLength,
    microBatch,
    totalBatch,
    steps: int("steps", 1, undefined, demo ? DEMO_DEFAULTS.steps : 25000),
    optimizer: choice("optimizer", OPTIMIZERS, "adamw"),
    learningRate: num(
      "learning-rate",
      (v) => v > 0,
      "a positive number",
      demo ? DEMO_DEFAULTS.learningRate : 4e-4,
    ),
    warmupSteps: int("warmup-steps", 0, undefined, demo ? DEMO_DEFAULTS.warmupSteps : 500),
    lrSchedule: choice("lr-schedule", LR_SCHEDULES),
    beta1: num("beta1", unit, "in [0, 1)"),
    beta2: num("beta2", unit, "in [0, 1)"),
    weightDecay: num("weight-decay", (v) => v >= 0, "a non-negative number"),
    eps: num("eps", (v) => v > 0, "a positive number"),
    maxGradNorm: num("max-grad-norm", (v) => v >= 0, "a non-negative number"),
    compressionChunk: int("compression-chunk", 1, 256),
    compressionTopk: int("compression-topk", 1),
    compressionDecay: num("compression-decay", unit, "in [0, 1)"),
    distroQuantization: values["distro-quantization"] === true ||
      values["quantize-1bit"] === true,
    seed: int("seed", 0, undefined, 1),
    shuffle: values["no-shuffle"] !== true,
    savePath,
    saveEvery: int("save-every", 0),
    resume,
    fromCheckpoint,
    evalDataPath,
    // The demo evaluates every 50 steps on its own held-out split, not on one the user names.
    evalEvery: int(
      "eval-every",
      0,
      undefined,
      demo && evalFlag === undefined ? DEMO_DEFAULTS.evalEvery : 0,
    ),
    evalSequences: int("eval-sequences", 1),
    saveDtype: ({ f32: "F32", bf16: "BF16", f16: "F16" } as const)[
      choice("save-dtype", ["f32", "bf16", "f16"] as const)
    ],
    maxShardBytes,
    precision: choice("precision", PRECISION_CHOICES),
    recompute: values.recompute === true,
    logs: choice("logs", ["console", "json"] as const),
  };
}
