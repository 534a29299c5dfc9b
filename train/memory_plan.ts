/**
 * `deno task train`'s memory plan: printed before the weights are loaded, and a refusal (naming
 * the flag that would make the run fit) when the model cannot fit the adapter or the machine.
 * The planning itself is model/memory_plan.ts.
 *
 * @module
 */
import type { TrainOptions } from "./cli.ts";
import { CPU_PROFILE, GPU_PROFILE } from "../shaders/mod.ts";
import {
  adapterMemoryLimits,
  f32WeightSources,
  largestWeightsFile,
  llamaParamLayout,
  readLlamaConfig,
  reportMemoryPlan,
  seededWorkerCount,
} from "../model/mod.ts";

/** Flags behind each fix the plan can suggest. */
export const TRAIN_MEMORY_FLAGS = {
  microBatch: "--micro-batch",
  seqLen: "--sequence-length",
  recompute: "--recompute",
};

/**
 * Prints the plan for `options` (to `write`; to stderr with `--logs json`, whose stdout holds
 * only JSON events) and throws `MemoryPlanError` when it cannot fit. Without a WebGPU adapter it
 * prints nothing: creating the runtime reports that more clearly.
 */
export async function checkTrainingMemory(
  options: TrainOptions & { sequenceLength: number },
  write: (line: string) => void,
): Promise<void> {
  const limits = await adapterMemoryLimits();
  if (limits === null) return;
  const config = await readLlamaConfig(`${options.model}/config.json`);
  const precision = options.precision === "auto"
    ? (limits.hasF16 && !limits.unified ? "f16" : "f32")
    : options.precision;
  const loadFileBytes = await largestWeightsFile(options.model);
  reportMemoryPlan(
    {
      config,
      microBatch: options.microBatch,
      seqLen: options.sequenceLength,
      slots: options.totalBatch / options.microBatch,
      optimizer: options.optimizer,
      distro: { chunk: options.compressionChunk, topk: options.compressionTopk },
      precision,
      recompute: options.recompute,
      loadFileBytes,
      // train/main.ts streams a seeded start (model/seeded_upload.ts) and a resume from F32
      // weights (model/streamed_load.ts); loaded and BF16/F16 weights are read whole.
      seededStream: loadFileBytes === null && options.resume === null,
      seededWorkers: seededWorkerCount(llamaParamLayout(config)),
      streamedResume: options.resume !== null && await resumesStreamed(options.resume),
      // Saves stream the GPU state a chunk at a time (train/streamed_save.ts).
      saves: options.savePath !== null,
      // The profile the runtime will choose for this adapter (shaders/profile.ts).
      logitsChunkBytes: (limits.unified ? CPU_PROFILE : GPU_PROFILE).logitsChunkBytes,
      splitKScratchBytes: (limits.unified ? CPU_PROFILE : GPU_PROFILE).splitK.scratchBytes,
      transposeScratch: (limits.unified ? CPU_PROFILE : GPU_PROFILE).matmul.strategy === "register",
    },
    limits,
    {
      flags: TRAIN_MEMORY_FLAGS,
      write: options.logs === "json" ? (line) => console.error(line) : write,
    },
  );
}

/** Whether `--resume dir` streams: its weights are all F32 (a bad folder is reported later). */
async function resumesStreamed(dir: string): Promise<boolean> {
  try {
    const config = await readLlamaConfig(`${dir}/config.json`);
    return (await f32WeightSources(dir, llamaParamLayout(config))) !== null;
  } catch {
    return false;
  }
}
