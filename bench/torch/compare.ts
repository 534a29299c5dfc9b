/**
 * `deno task bench-torch`: one training step of our WebGPU engine against eager PyTorch on the
 * same model, weights, batch and fp32 precision (issue 3's comparison).
 *
 * 1. Writes the seeded model (our init, `--seed`) as an HF folder and the first `--batch`
 *    sequences of `--data` as a uint32 token file, in a work folder.
 * 2. Runs our engine on those files: `readModelDir`, `LlamaModel`, `AdamW`, `trainStep` (what
 *    `deno task train` runs), `--warmup` untimed steps then `--steps` timed ones.
 * 3. Runs `bench/torch/llama_step.py` on the same files with the first Python that imports torch
 *    (`--device cpu|cuda`), the same steps and AdamW settings.
 * 4. Prints the agreement (loss and gradient norms at step 0, loss at the last step) and the
 *    median step times and their ratio. See docs/benchmarks.md and docs/gpu-benchmarks.md.
 *
 * ```sh
 * deno task bench-torch --config config/models/llama-20m --batch 4 --seq-len 256
 * ```
 *
 * @module
 */
import { COMPARE_SPEC, type CompareOptions, parseCompareArgs } from "./cli.ts";
import { runEngineSteps } from "./engine_step.ts";
import { corpusBatch, encodeTokenFile, writeSeededModel } from "./inputs.ts";
import {
  compareReports,
  type Comparison,
  DEFAULT_TOLERANCES,
  formatComparison,
  type StepReport,
} from "./report.ts";
import {
  findTorchPython,
  pythonCandidates,
  runTorchSteps,
  TorchUnavailableError,
} from "./torch_runner.ts";
import { denoEnv, parseArgsOrExit } from "../../cli/entry.ts";
import { ADAMW_DEFAULTS } from "../../optimizer/mod.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import { countParameters, readLlamaConfig } from "../../model/mod.ts";

/** Result of {@link runComparison}. */
export interface ComparisonRun {
  ours: StepReport;
  /** PyTorch's report, or null when no Python with torch was found. */
  torch: StepReport | null;
  comparison: Comparison | null;
  /** Why PyTorch did not run (null when it did). */
  unavailable: TorchUnavailableError | null;
}

/** A one-line description of the run for the table's header. */
export function describeRun(options: CompareOptions, params: number): string {
  return `${options.config}: ${(params / 1e6).toFixed(2)}M params, batch ${options.batch} x ` +
    `${options.seqLen} tokens from ${options.data}, seed ${options.seed}, AdamW lr ${options.lr}, ` +
    `${options.warmup} warm-up + ${options.steps} timed steps` +
    (options.recompute ? ", our activations recomputed" : "");
}

/** A line naming what one side ran on. */
export function describeSide(r: StepReport): string {
  const extra = [
    r.threads !== undefined ? `${r.threads} threads` : null,
    r.blas !== undefined && r.blas.length > 0 ? `BLAS ${r.blas.join(", ")}` : null,
  ].filter((x) => x !== null);
  return `${r.engine} ${r.version} on ${r.device} (${r.deviceName})` +
    (extra.length > 0 ? `, ${extra.join(", ")}` : "");
}

/**
 * Writes the inputs, runs both sides one after the other (never at once, so neither slows the
 * other) and compares them. `write` receives progress and result lines.
 */
export async function runComparison(
  options: CompareOptions,
  io: { write: (line: string) => void; signal?: AbortSignal },
): Promise<ComparisonRun> {
  const config = await readLlamaConfig(`${options.config}/config.json`);
  const workDir = options.workDir ?? await Deno.makeTempDir({ prefix: "bench-torch-" });
  try {
    const modelDir = `${workDir}/model`, tokensFile = `${workDir}/tokens.u32`;
    await writeSeededModel(modelDir, config, options.seed);
    const tokens = await corpusBatch(options.data, {
      batch: options.batch,
      seqLen: options.seqLen,
      vocabSize: config.vocabSize,
    });
    await Deno.writeFile(tokensFile, encodeTokenFile(tokens));
    io.write(describeRun(options, countParameters(config)));

    let python: { python: string; version: string } | null = null;
    let unavailable: TorchUnavailableError | null = null;
    try {
      python = await findTorchPython(pythonCandidates(options.python, Deno.env.get("PYTHON")));
    } catch (e) {
      if (!(e instanceof TorchUnavailableError)) throw e;
      unavailable = e;
    }

    const shape = {
      batch: options.batch,
      seqLen: options.seqLen,
      warmup: options.warmup,
      steps: options.steps,
      lr: options.lr,
    };
    let ours: StepReport;
    {
      using rt = await GpuRuntime.create();
      ours = await runEngineSteps(rt, {
        ...shape,
        modelDir,
        tokens,
        recompute: options.recompute,
        signal: io.signal,
      });
    }
    io.write(`engine:  ${describeSide(ours)}`);
    if (python === null) {
      io.write(
        `engine only: loss at step 0 ${ours.losses[0]}, gradient norm ${ours.gradNorm0}, ` +
          `median step ${ours.medianStepMs.toFixed(1)} ms`,
      );
      return { ours, torch: null, comparison: null, unavailable };
    }
    const torch = await runTorchSteps(python.python, {
      ...shape,
      modelDir,
      tokensFile,
      device: options.device,
      threads: options.threads,
      adamw: ADAMW_DEFAULTS,
    }, { signal: io.signal });
    io.write(`PyTorch: ${describeSide(torch)} (${python.python})`);
    const comparison = compareReports(ours, torch, DEFAULT_TOLERANCES);
    io.write(formatComparison(comparison, ours, torch));
    return { ours, torch, comparison, unavailable: null };
  } finally {
    if (options.workDir === null) await Deno.remove(workDir, { recursive: true });
  }
}

if (import.meta.main) {
  const options = parseArgsOrExit((a) => parseCompareArgs(a, denoEnv), COMPARE_SPEC);
  try {
    const run = await runComparison(options, { write: (l) => console.log(l) });
    if (options.json) {
      console.log(JSON.stringify({ ours: run.ours, torch: run.torch, comparison: run.comparison }));
    }
    if (run.unavailable !== null) {
      console.error(`bench-torch: ${run.unavailable.message}`);
      Deno.exit(3);
    }
    if (run.comparison !== null && !run.comparison.ok) {
      console.error("bench-torch: the engine and PyTorch disagree beyond the tolerances above");
      Deno.exit(1);
    }
  } catch (e) {
    console.error(`bench-torch: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
