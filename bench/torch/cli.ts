/**
 * Command-line flags of `deno task bench-torch`, parsed into a typed {@link CompareOptions}; an
 * unknown flag or an out-of-range value is rejected with the flag's name.
 *
 * @module
 */
import {
  type EnvLookup,
  explainEnv,
  type FlagValues,
  helpText,
  parseFlags,
} from "../../cli/entry.ts";
import { UsageError } from "../../common/mod.ts";
import { parseTiling } from "../../shaders/mod.ts";

/** Everything one comparison run needs. */
export interface CompareOptions {
  /** Folder with the model's config.json (weights are the seeded init, not read from here). */
  config: string;
  /** Token folder the batch is read from (its first `batch` sequences). */
  data: string;
  /** B: sequences per step. */
  batch: number;
  /** T: tokens per sequence. */
  seqLen: number;
  /** Untimed steps first (step 0 gives loss and gradient norms). */
  warmup: number;
  /** Timed steps. */
  steps: number;
  /** Constant learning rate of both AdamWs. */
  lr: number;
  /** Seed of the weight init. */
  seed: number;
  /** PyTorch's device; our engine uses this machine's WebGPU adapter. */
  device: "cpu" | "cuda";
  /** Python to use (default: $PYTHON, python3, /usr/bin/python3, first with torch). */
  python: string | undefined;
  /** PyTorch CPU threads (0: every core). */
  threads: number;
  /** Where to write the model and batch (kept); null: a temporary folder, removed after. */
  workDir: string | null;
  /** Also print both reports and the comparison as one JSON line. */
  json: boolean;
  /** Our engine recomputes activations in the backward (`--recompute`; PyTorch does not). */
  recompute: boolean;
  /** Only print each side's expected peak memory and MemAvailable, then exit. */
  memoryPlan: boolean;
  /** Our matmul tiling instead of the adapter profile's (`--tiling`), as its text. */
  tiling: string | undefined;
}

/** The flags of `deno task bench-torch`. */
export const COMPARE_SPEC = {
  usage: "deno task bench-torch [flags]",
  summary: "Trains one batch for a few steps with our WebGPU engine and with eager PyTorch " +
    "(bench/torch/llama_step.py) from the same seeded weights, and prints loss and " +
    "gradient-norm agreement and the step-time ratio.",
  flags: {
    config: {
      type: "string",
      value: "DIR",
      description: "model folder with config.json",
      defaultText: "config/models/llama-tiny",
    },
    data: {
      type: "string",
      value: "DIR",
      description: "token folder for the batch",
      defaultText: "data/corpus/brown/train",
    },
    batch: { type: "string", value: "N", description: "sequences per step", defaultText: "4" },
    "seq-len": {
      type: "string",
      value: "N",
      description: "tokens per sequence",
      defaultText: "64",
    },
    warmup: {
      type: "string",
      value: "N",
      description: "untimed steps first, at least 1",
      defaultText: "2",
    },
    steps: { type: "string", value: "N", description: "timed steps", defaultText: "5" },
    lr: {
      type: "string",
      value: "X",
      description: "constant AdamW learning rate",
      defaultText: "1e-3",
    },
    seed: { type: "string", value: "N", description: "weight-init seed, u32", defaultText: "1" },
    device: {
      type: "string",
      value: "cpu|cuda",
      description: "PyTorch's device; the engine uses the WebGPU adapter",
      defaultText: "cpu",
    },
    python: {
      type: "string",
      value: "PATH",
      description: "Python with torch",
      defaultText: "$PYTHON, python3, /usr/bin/python3",
    },
    threads: {
      type: "string",
      value: "N",
      description: "PyTorch CPU threads",
      defaultText: "every core",
    },
    "work-dir": {
      type: "string",
      value: "DIR",
      description: "keep the model folder and token file there",
      defaultText: "a temporary folder",
    },
    json: {
      type: "boolean",
      description: "also print both reports and the comparison as one JSON line",
    },
    recompute: {
      type: "boolean",
      description: "our engine recomputes each layer's activations in the backward, as " +
        "deno task train --recompute (the same bits; PyTorch keeps them)",
    },
    tiling: {
      type: "string",
      value: "R,C,WX,WY,D[,vec4]",
      description: "our matmul tiling instead of the adapter profile's (rows,cols,wx,wy,depth; " +
        "vec4: the tiled-vec4 kernel), to compare a kernel shape against PyTorch",
      defaultText: "the adapter's profile",
    },
    "memory-plan": {
      type: "boolean",
      description: "only print each side's expected peak memory against MemAvailable, then " +
        "exit (every run prints it and refuses a side whose peak is over MemAvailable)",
    },
  },
  footer: "Exit status: 0 agreement within tolerance, 1 disagreement or error, 2 bad flags,\n" +
    "3 no Python with torch (the engine's figures are still printed),\n" +
    "4 a side's expected peak memory is over MemAvailable (refused before it started).",
} as const;

/** Help text. */
export const USAGE: string = helpText(COMPARE_SPEC);

/**
 * Parses `argv`, `env` filling flags not given (`PSYCHE_*`); returns `"help"` for `--help`.
 * Throws {@link UsageError}.
 */
export function parseCompareArgs(argv: string[], env: EnvLookup = {}): CompareOptions | "help" {
  const parsed = parseFlags(COMPARE_SPEC, argv, { env });
  if (parsed.help) return "help";
  return explainEnv(parsed, () => checkCompareArgs(parsed.values));
}

function checkCompareArgs(values: FlagValues<typeof COMPARE_SPEC>): CompareOptions {
  type StringFlag = Exclude<
    keyof typeof COMPARE_SPEC.flags,
    "json" | "recompute" | "memory-plan"
  >;
  const str = (flag: StringFlag) => values[flag];
  const int = (flag: StringFlag, fallback: number, min: number, max = 2 ** 32 - 1): number => {
    const raw = str(flag);
    if (raw === undefined) return fallback;
    const v = Number(raw);
    if (!/^\d+$/.test(raw) || v < min || v > max) {
      throw new UsageError(
        `--${flag} must be an integer in [${min}, ${max}], found "${raw}"`,
      );
    }
    return v;
  };
  const lrRaw = str("lr");
  const lr = lrRaw === undefined ? 1e-3 : Number(lrRaw);
  if (lrRaw !== undefined && (lrRaw.trim() === "" || !Number.isFinite(lr) || lr <= 0)) {
    throw new UsageError(`--lr must be a positive number, found "${lrRaw}"`);
  }
  const device = str("device") ?? "cpu";
  if (device !== "cpu" && device !== "cuda") {
    throw new UsageError(`--device must be cpu or cuda, found "${device}"`);
  }
  const workDir = str("work-dir");
  const tiling = str("tiling");
  if (tiling !== undefined) {
    try {
      parseTiling(tiling);
    } catch (e) {
      throw new UsageError(`--tiling: ${(e as Error).message}`);
    }
  }
  return {
    config: str("config") ?? "config/models/llama-tiny",
    data: str("data") ?? "data/corpus/brown/train",
    batch: int("batch", 4, 1),
    seqLen: int("seq-len", 64, 2),
    warmup: int("warmup", 2, 1),
    steps: int("steps", 5, 1),
    lr,
    seed: int("seed", 1, 0),
    device,
    python: str("python"),
    threads: int("threads", 0, 0, 1024),
    workDir: workDir === undefined || workDir === "" ? null : workDir,
    json: values.json === true,
    recompute: values.recompute === true,
    memoryPlan: values["memory-plan"] === true,
    tiling,
  };
}
