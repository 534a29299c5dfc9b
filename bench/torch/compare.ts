/**
 * `deno task bench-torch`: one training step of our WebGPU engine against eager PyTorch on the
 * same model, weights, batch and fp32 precision (issue 3's comparison).
 *
 * 1. Writes the seeded model (our init, `--seed`) as an HF folder, streamed a chunk at a time,
 *    and the first `--batch` sequences of `--data` as a uint32 token file, in a work folder.
 * 2. Runs our engine on those files in a process of its own (engine_process.ts): the weights
 *    stream into `LlamaModel`'s buffers, then `AdamW` and `trainStep` (what `deno task train`
 *    runs), `--warmup` untimed steps then `--steps` timed ones. The process exits, returning
 *    all its memory, before PyTorch starts.
 * 3. Runs `bench/torch/llama_step.py` on the same files with the first Python that imports torch
 *    (`--device cpu|cuda`), the same steps and AdamW settings.
 * 4. Prints the agreement (loss and gradient norms at step 0, loss at the last step) and the
 *    median step times and their ratio. See docs/benchmarks.md and docs/gpu-benchmarks.md.
 *
 * Before each side starts, its expected peak memory (memory.ts) is printed and the side is
 * refused ({@link MemoryRefusalError}) when MemAvailable is below it.
 *
 * ```sh
 * deno task bench-torch --config config/models/llama-20m --batch 4 --seq-len 256
 * ```
 *
 * @module
 */
import { COMPARE_SPEC, type CompareOptions, parseCompareArgs } from "./cli.ts";
import { runEngineProcess } from "./engine_process.ts";
import { corpusBatch, encodeTokenFile, writeSeededModel } from "./inputs.ts";
import { enginePlan, formatSidePlan, memoryRefusal, type SidePlan, torchPlan } from "./memory.ts";
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
import {
  adapterMemoryLimits,
  countParameters,
  formatBytes,
  type LlamaConfig,
  readLlamaConfig,
} from "../../model/mod.ts";

/** A side's expected peak is over MemAvailable: it was not started. */
export class MemoryRefusalError extends Error {
  /** The refused side's plan. */
  readonly plan: SidePlan;
  /** MemAvailable when it was refused, bytes. */
  readonly available: number;
  constructor(message: string, plan: SidePlan, available: number) {
    super(message);
    this.name = "MemoryRefusalError";
    this.plan = plan;
    this.available = available;
  }
}

/** MemAvailable now (`Deno.systemMemoryInfo`), or null where it cannot be read. */
export function availableMemory(): number | null {
  try {
    return Deno.systemMemoryInfo().available;
  } catch {
    return null;
  }
}

/** Both sides' plans for `options` (our adapter's buffers count when they are host memory). */
export async function comparisonPlans(
  options: CompareOptions,
  config: LlamaConfig,
): Promise<{ ours: SidePlan; torch: SidePlan }> {
  const shape = { batch: options.batch, seqLen: options.seqLen, recompute: options.recompute };
  // Without a WebGPU adapter the child reports that; plan as for a CPU adapter meanwhile.
  const unified = (await adapterMemoryLimits())?.unified ?? true;
  return {
    ours: enginePlan(config, shape, unified),
    torch: torchPlan(config, shape, options.device),
  };
}

/** Prints `plan` against MemAvailable now; throws {@link MemoryRefusalError} when over it. */
function admit(
  plan: SidePlan,
  write: (line: string) => void,
  available: () => number | null,
): void {
  const now = available();
  write(formatSidePlan(plan, now));
  const refusal = memoryRefusal(plan, now);
  if (refusal !== null) throw new MemoryRefusalError(refusal, plan, now!);
}

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
    (options.recompute ? ", our activations recomputed" : "") +
    (options.tiling === undefined ? "" : `, our matmul tiling ${options.tiling}`);
}

/** A line naming what one side ran on. */
export function describeSide(r: StepReport): string {
  const extra = [
    r.threads !== undefined ? `${r.threads} threads` : null,
    r.blas !== undefined && r.blas.length > 0 ? `BLAS ${r.blas.join(", ")}` : null,
  ].filter((x): x is string => x !== null);
  if (r.peakRssBytes !== undefined) extra.push(`peak RSS ${formatBytes(r.peakRssBytes)}`);
  return `${r.engine} ${r.version} on ${r.device} (${r.deviceName})` +
    (extra.length > 0 ? `, ${extra.join(", ")}` : "");
}

/**
 * Writes the inputs, runs both sides one after the other (never at once, so neither slows the
 * other) and compares them. `write` receives progress and result lines.
 */
export async function runComparison(
  options: CompareOptions,
  io: {
    write: (line: string) => void;
    signal?: AbortSignal;
    /** MemAvailable now (default {@link availableMemory}; tests pass their own). */
    available?: () => number | null;
  },
): Promise<ComparisonRun> {
  const config = await readLlamaConfig(`${options.config}/config.json`);
  const available = io.available ?? availableMemory;
  const plans = await comparisonPlans(options, config);
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
    admit(plans.ours, io.write, available);
    const ours = await runEngineProcess(
      { ...shape, modelDir, tokensFile, recompute: options.recompute, tiling: options.tiling },
      { signal: io.signal },
    );
    io.write(`engine:  ${describeSide(ours)}`);
    if (python === null) {
      io.write(
        `engine only: loss at step 0 ${ours.losses[0]}, gradient norm ${ours.gradNorm0}, ` +
          `median step ${ours.medianStepMs.toFixed(1)} ms`,
      );
      return { ours, torch: null, comparison: null, unavailable };
    }
    // Our process has exited: its memory is back before PyTorch's is counted.
    admit(plans.torch, io.write, available);
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
    if (options.memoryPlan) {
      const config = await readLlamaConfig(`${options.config}/config.json`);
      const plans = await comparisonPlans(options, config);
      console.log(describeRun(options, countParameters(config)));
      for (const plan of [plans.ours, plans.torch]) {
        console.log(formatSidePlan(plan, availableMemory()));
      }
      Deno.exit(0);
    }
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
    Deno.exit(e instanceof MemoryRefusalError ? 4 : 1);
  }
}
