/**
 * `deno task train`: single-node training of a Hugging Face Llama folder on a local token folder,
 * with AdamW or single-node DisTrO (Psyche's `examples/train.rs`). See train/cli.ts for the flags
 * and train/trainer.ts for what one step does. For example, on the bundled corpus:
 *
 * ```sh
 * deno task train --model config/models/llama-20m --data-path data/corpus/brown/train \
 *   --sequence-length 256 --micro-batch 4 --total-batch 8 --steps 100 --warmup-steps 10 \
 *   --learning-rate 1e-3 --save-path /tmp/llama-20m-trained
 * ```
 *
 * @module
 */
import { type LrScheduleName, parseTrainArgs, type TrainOptions, USAGE } from "./cli.ts";
import { consoleLogger, jsonLogger } from "./log.ts";
import { runTraining } from "./trainer.ts";
import { checkTrainingMemory } from "./memory_plan.ts";
import { parseArgsOrExit } from "../cli/entry.ts";
import type { LrSchedule } from "../common/mod.ts";
import {
  countParameters,
  initParams,
  LlamaModel,
  type ParamLayout,
  readModelDir,
  resolvePrecision,
  writeModelDir,
} from "../model/mod.ts";
import { AdamW, DistroOptimizer, type Optimizer } from "../optimizer/mod.ts";
import { LocalDataProvider } from "../data/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

/** The LR schedule for the CLI's flags: linear warmup from 0, then the shape down to lr/10. */
export function scheduleFor(
  name: LrScheduleName,
  options: { learningRate: number; warmupSteps: number; steps: number },
): LrSchedule {
  const base = {
    baseLr: options.learningRate,
    warmupSteps: options.warmupSteps,
    warmupInitLr: 0,
  };
  // Psyche's cosine/linear need totalSteps > warmupSteps; a run shorter than its warmup never
  // leaves warmup, so any larger totalSteps gives the same rates.
  const totalSteps = Math.max(options.steps, options.warmupSteps + 1);
  switch (name) {
    case "constant":
      return { kind: "Constant", ...base };
    case "cosine":
      return { kind: "Cosine", ...base, totalSteps, finalLr: options.learningRate / 10 };
    case "linear":
      return { kind: "Linear", ...base, totalSteps, finalLr: options.learningRate / 10 };
  }
}

/** The 32-byte shuffle seed of Psyche's train.rs: the u32 seed big-endian in bytes 28..32. */
export function shuffleSeed(seed: number): Uint8Array {
  const out = new Uint8Array(32);
  new DataView(out.buffer).setUint32(28, seed >>> 0, false);
  return out;
}

/** Runs a whole training from parsed options; `write` receives each log line. */
export async function train(
  options: TrainOptions,
  io: { write: (line: string) => void; signal?: AbortSignal },
): Promise<{ losses: number[] }> {
  await checkTrainingMemory(options, io.write);
  const { config, layout, weights } = await readModelDir(options.model);
  const logger = options.logs === "json" ? jsonLogger(io.write) : consoleLogger(io.write);
  const dataset = {
    seqLen: options.sequenceLength,
    tokenSize: options.tokenSize === 2 ? "TwoBytes" : "FourBytes",
    vocabSize: config.vocabSize,
  } as const;
  const data = await LocalDataProvider.open(options.dataPath, {
    ...dataset,
    shuffle: options.shuffle
      ? { kind: "Seeded", seed: shuffleSeed(options.seed) }
      : { kind: "DontShuffle" },
  });
  let evalData: LocalDataProvider | undefined;
  try {
    let evalSequences = 0;
    if (options.evalDataPath !== null) {
      evalData = await LocalDataProvider.open(options.evalDataPath, dataset);
      const B = options.microBatch;
      evalSequences = Math.floor(Math.min(options.evalSequences, evalData.numSequences) / B) * B;
      if (evalSequences === 0) {
        throw new RangeError(
          `--eval-data-path ${options.evalDataPath} has ${evalData.numSequences} sequences of ` +
            `${options.sequenceLength} tokens; evaluation needs at least --micro-batch ${B}`,
        );
      }
    }
    using rt = await GpuRuntime.create();
    const initial = weights ?? initParams(layout, config, options.seed);
    const precision = resolvePrecision(options.precision, rt);
    using model = new LlamaModel(rt, {
      precision,
      config,
      layout,
      weights: initial,
      microBatch: options.microBatch,
      seqLen: options.sequenceLength,
      slots: options.totalBatch / options.microBatch,
    });
    using optimizer = makeOptimizer(rt, options, layout);
    logger.start({
      model: options.model,
      params: countParameters(config),
      optimizer: optimizer.name,
      steps: options.steps,
      sequenceLength: options.sequenceLength,
      totalBatch: options.totalBatch,
      microBatch: options.microBatch,
      sequences: data.numSequences,
      adapter: rt.adapterName,
      precision,
      weights: weights === null ? "seeded" : "loaded",
    });
    const result = await runTraining(
      { rt, model, optimizer, data, evalData, logger, signal: io.signal },
      {
        steps: options.steps,
        totalBatch: options.totalBatch,
        microBatch: options.microBatch,
        schedule: scheduleFor(options.lrSchedule, options),
        clipGradients: options.maxGradNorm > 0,
        evalEvery: options.evalEvery,
        evalSequences,
      },
    );
    if (options.savePath !== null) {
      if (optimizer.encodeSettle !== undefined) {
        const step = rt.beginStep("settle parameters");
        optimizer.encodeSettle(step, model.params);
        await step.submit();
      }
      await writeModelDir(options.savePath, {
        config,
        layout,
        weights: await model.readParams(),
        dtype: options.saveDtype,
        maxShardBytes: options.maxShardBytes,
      });
    }
    logger.end({
      steps: options.steps,
      finalLoss: result.losses[result.losses.length - 1],
      seconds: result.seconds,
      tokensPerSec: result.tokensPerSec,
      savedTo: options.savePath,
    });
    return { losses: result.losses };
  } finally {
    await data.close();
    await evalData?.close();
  }
}

/** The optimizer the flags ask for, over the flat parameter buffer of `layout`. */
function makeOptimizer(rt: GpuRuntime, options: TrainOptions, layout: ParamLayout): Optimizer {
  const size = layout.totalSize;
  switch (options.optimizer) {
    case "adamw":
      return new AdamW(rt, {
        size,
        config: {
          beta1: options.beta1,
          beta2: options.beta2,
          eps: options.eps,
          weightDecay: options.weightDecay,
          maxGradNorm: options.maxGradNorm,
        },
      });
    case "distro":
      return new DistroOptimizer(rt, {
        params: layout.entries,
        size,
        config: {
          chunk: options.compressionChunk,
          topk: options.compressionTopk,
          decay: options.compressionDecay,
          weightDecay: options.weightDecay,
          clipGradNorm: options.maxGradNorm > 0 ? options.maxGradNorm : null,
          quantize1bit: options.distroQuantization,
        },
      });
  }
}

if (import.meta.main) {
  const options = parseArgsOrExit(parseTrainArgs, USAGE);
  const controller = new AbortController();
  const onInterrupt = () => controller.abort(new Error("interrupted"));
  Deno.addSignalListener("SIGINT", onInterrupt);
  try {
    await train(options, { write: (l) => console.log(l), signal: controller.signal });
  } catch (e) {
    console.error(`train: ${(e as Error).message}`);
    Deno.exit(1);
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
  }
}
