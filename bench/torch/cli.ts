/**
 * Command-line flags of `deno task bench-torch`, parsed into a typed {@link CompareOptions}; an
 * unknown flag or an out-of-range value is rejected with the flag's name.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { UsageError } from "../../common/mod.ts";

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
}

/** Usage text for `--help` and errors. */
export const USAGE = `Usage: deno task bench-torch [flags]

Trains one batch for a few steps with our WebGPU engine and with eager PyTorch (bench/torch/
llama_step.py) from the same seeded weights, and prints loss and gradient-norm agreement and the
step-time ratio.

  --config DIR      model folder with config.json (default config/models/llama-tiny)
  --data DIR        token folder for the batch (default data/corpus/brown/train)
  --batch N         sequences per step (default 4)
  --seq-len N       tokens per sequence (default 64)
  --warmup N        untimed steps first, at least 1 (default 2)
  --steps N         timed steps (default 5)
  --lr X            constant AdamW learning rate (default 1e-3)
  --seed N          weight-init seed, u32 (default 1)
  --device cpu|cuda PyTorch's device (default cpu); the engine uses the WebGPU adapter
  --python PATH     Python with torch (default: $PYTHON, python3, /usr/bin/python3)
  --threads N       PyTorch CPU threads (default: every core)
  --work-dir DIR    keep the model folder and token file there (default: temporary)
  --json            also print both reports and the comparison as one JSON line

Exit status: 0 agreement within tolerance, 1 disagreement or error, 2 bad flags,
3 no Python with torch (the engine's figures are still printed).
`;

/** Parses `argv`; returns `"help"` for `--help`. Throws {@link UsageError}. */
export function parseCompareArgs(argv: string[]): CompareOptions | "help" {
  const strings = [
    "config",
    "data",
    "batch",
    "seq-len",
    "warmup",
    "steps",
    "lr",
    "seed",
    "device",
    "python",
    "threads",
    "work-dir",
  ];
  let values: Record<string, string | boolean | undefined>;
  try {
    const options: Record<string, { type: "string" | "boolean" }> = {
      help: { type: "boolean" },
      json: { type: "boolean" },
    };
    for (const s of strings) options[s] = { type: "string" };
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help) return "help";
  const str = (flag: string) => values[flag] as string | undefined;
  const int = (flag: string, fallback: number, min: number, max = 2 ** 32 - 1): number => {
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
  };
}
