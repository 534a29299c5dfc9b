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
import { type LrScheduleName, TRAIN_SPEC, type TrainOptions, trainOptions } from "./cli.ts";
import { openTrainingCheckpoint, optimizerGeometry, readModelConfig } from "./checkpoint.ts";
import { restoreTrainingStreamed } from "./streamed_load.ts";
import { saveTraining } from "./streamed_save.ts";
import { consoleLogger, jsonLogger, type SaveRecord, type UploadRecord } from "./log.ts";
import { nextSequence, type TrainerState, TrainerStateError } from "./train_state.ts";
import { runTraining } from "./trainer.ts";
import { checkTrainingMemory } from "./memory_plan.ts";
import { resumeOptions } from "./resume_options.ts";
import { logLine, parseOrExit } from "../cli/entry.ts";
import { learningRate, type LrSchedule } from "../common/mod.ts";
import {
  countParameters,
  llamaConfigToHf,
  LlamaModel,
  type ParamLayout,
  paramSegments,
  readModelDir,
  resolvePrecision,
  throttledProgress,
  uploadF32Weights,
  uploadParams,
  uploadSeededParams,
} from "../model/mod.ts";
import { AdamW, DistroOptimizer, type Optimizer } from "../optimizer/mod.ts";
import { ensureCorpus, LocalDataProvider } from "../data/mod.ts";
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

/** What {@link train} did. */
export interface TrainOutcome {
  /** Per-step losses of the steps this call ran. */
  losses: number[];
  /** The last step done. */
  lastStep: number;
  /** True when `io.stop` ended the run before its last step. */
  stopped: boolean;
  /** The checkpoint folder written last, or null. */
  savedTo: string | null;
}

/** The sequence length for `options` on a model of `maxPositions` positions. */
export function sequenceLengthFor(options: TrainOptions, maxPositions: number): number {
  const T = options.sequenceLength ?? Math.min(2048, maxPositions);
  if (T > maxPositions) {
    throw new RangeError(
      `--sequence-length ${T} does not fit ${options.model}: its max_position_embeddings is ` +
        `${maxPositions}`,
    );
  }
  return T;
}

/**
 * Runs a whole training from parsed options; `write` receives each log line. `io.stop` ends the
 * run after the step in flight and saves a checkpoint (SIGINT/SIGTERM); `io.signal` aborts at
 * once.
 */
export async function train(
  flags: TrainOptions,
  io: { write: (line: string) => void; signal?: AbortSignal; stop?: AbortSignal },
): Promise<TrainOutcome> {
  const chunking = { chunk: flags.compressionChunk, topk: flags.compressionTopk };
  // Made first (`--logs` is never taken from a checkpoint): reading weights can take seconds.
  const logger = flags.logs === "json" ? jsonLogger(io.write) : consoleLogger(io.write);
  const reading = (path: string) =>
    throttledProgress(
      (doneBytes, totalBytes, mbPerSec) =>
        logger.readWeights({ path, doneBytes, totalBytes, mbPerSec }),
      () => performance.now(),
    );
  const resumed = flags.resume === null ? null : await openTrainingCheckpoint(flags.resume, {
    optimizer: flags.fromCheckpoint.includes("optimizer") ? null : flags.optimizer,
    chunking,
    onProgress: reading(flags.resume),
  });
  // What the command line left unset continues the saved run (before the memory plan is made).
  const { options, inherited } = resumed === null
    ? { options: flags, inherited: [] }
    : resumeOptions(flags, resumed.trainer);
  // A 1B folder takes seconds to read and convert (seconds to minutes on a slow disk).
  const { config, layout, weights } = resumed ??
    await readModelDir(options.model, { onProgress: reading(options.model) });
  // F32 checkpoint weights stay in their files and go up a chunk at a time (streamed_load.ts).
  const streamed = Array.isArray(weights) ? weights : null;
  const whole = Array.isArray(weights) ? null : weights;
  if (resumed !== null && options.model !== options.resume) {
    // Only the configs are compared: the named model's weights are not read (4.9 GB for a 1B).
    const named = await readModelConfig(options.model);
    const a = llamaConfigToHf(named.config), b = llamaConfigToHf(resumed.config);
    const differ = Object.keys(b).filter((k) =>
      JSON.stringify(a[k as keyof typeof a]) !== JSON.stringify(b[k as keyof typeof b])
    );
    if (differ.length > 0) {
      throw new RangeError(
        `--model ${options.model} is not the model of --resume ${options.resume}: ` +
          differ.map((k) =>
            `${k} ${JSON.stringify(a[k as keyof typeof a])} vs ` +
            JSON.stringify(b[k as keyof typeof b])
          ).join(", "),
      );
    }
  }
  const sequenceLength = sequenceLengthFor(options, config.maxPositionEmbeddings);
  // Before any GPU buffer is made: a run that cannot fit is refused with what would make it fit.
  await checkTrainingMemory({ ...options, sequenceLength }, io.write);
  if (options.demoData) {
    await ensureCorpus("bytes", { onBuild: (dir, reason) => logger.corpus({ dir, reason }) });
  }
  const dataset = {
    seqLen: sequenceLength,
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
    const schedule = scheduleFor(options.lrSchedule, options);
    const trainerState = (step: number): TrainerState => ({
      step,
      optimizer: options.optimizer,
      totalBatch: options.totalBatch,
      microBatch: options.microBatch,
      sequenceLength,
      data: {
        sequences: data.numSequences,
        shuffleSeed: options.shuffle ? options.seed : null,
        nextSequence: nextSequence(step, options.totalBatch, data.numSequences),
      },
      lrSchedule: schedule,
      weightsDtype: options.saveDtype,
    });
    if (resumed !== null) {
      checkResumable(resumed.trainer, trainerState(resumed.trainer.step), options);
    }
    let evalSequences = 0;
    if (options.evalDataPath !== null) {
      evalData = await LocalDataProvider.open(options.evalDataPath, dataset);
      const B = options.microBatch;
      evalSequences = Math.floor(Math.min(options.evalSequences, evalData.numSequences) / B) * B;
      if (evalSequences === 0) {
        throw new RangeError(
          `--eval-data-path ${options.evalDataPath} has ${evalData.numSequences} sequences of ` +
            `${sequenceLength} tokens; evaluation needs at least --micro-batch ${B}`,
        );
      }
    }
    using rt = await GpuRuntime.create();
    const precision = resolvePrecision(options.precision, rt);
    // Every start goes to the GPU a chunk at a time with its progress said: a model built with
    // its weights copies whole segments at once, which stalled the 1B on a GPU for minutes.
    using model = new LlamaModel(rt, {
      precision,
      config,
      layout,
      microBatch: options.microBatch,
      seqLen: sequenceLength,
      slots: options.totalBatch / options.microBatch,
      recompute: options.recompute,
    });
    const progress = (what: UploadRecord["what"]) =>
      throttledProgress(
        (doneBytes, totalBytes, mbPerSec) =>
          logger.upload({ what, doneBytes, totalBytes, mbPerSec }),
        () => performance.now(),
      );
    if (whole !== null) {
      await uploadParams(rt, model.params, whole, {
        signal: io.signal,
        onProgress: progress("weights"),
      });
    } else if (streamed !== null) {
      await uploadF32Weights(rt, model.params, streamed, {
        signal: io.signal,
        onProgress: progress("weights"),
      });
    } else if (weights === null) {
      // A seeded start goes straight into the parameter buffers, a chunk at a time: the host
      // never holds the model (the memory plan's seeded host lines count one chunk).
      await uploadSeededParams(rt, model.params, {
        config,
        seed: options.seed,
        signal: io.signal,
        onProgress: progress("seeded"),
      });
    }
    using optimizer = makeOptimizer(rt, options, layout);
    const parts = { rt, model, optimizer, signal: io.signal };
    const firstStep = resumed === null ? 1 : resumed.trainer.step + 1;
    if (resumed !== null) {
      const lastLr = learningRate(schedule, resumed.trainer.step);
      // Read a chunk at a time into the optimizer's buffers, as the weights were.
      await restoreTrainingStreamed(parts, resumed.optimizer, {
        lastLr,
        onProgress: progress("optimizer"),
      });
    }
    logger.start({
      model: options.model,
      params: countParameters(config),
      optimizer: optimizer.name,
      steps: options.steps,
      sequenceLength,
      totalBatch: options.totalBatch,
      microBatch: options.microBatch,
      sequences: data.numSequences,
      adapter: rt.adapterName,
      precision,
      weights: resumed !== null ? "resumed" : weights === null ? "seeded" : "loaded",
      firstStep,
      fromCheckpoint: inherited,
    });
    const geometry = optimizerGeometry(layout, options.optimizer, chunking);
    let savedTo: string | null = null;
    const save = async (step: number, lastLr: number, reason: SaveRecord["reason"]) => {
      if (options.savePath === null) return;
      const path = options.savePath;
      // Streamed off the GPU a chunk at a time: the host never holds the model for a save.
      await saveTraining(path, parts, {
        config,
        layout,
        trainer: trainerState(step),
        geometry,
        lastLr,
        dtype: options.saveDtype,
        maxShardBytes: options.maxShardBytes,
        // A 1B model's save with AdamW reads and writes 14.9 GB: seconds to minutes.
        onProgress: throttledProgress(
          (doneBytes, totalBytes, mbPerSec) =>
            logger.saveProgress({ step, path, doneBytes, totalBytes, mbPerSec }),
          () => performance.now(),
        ),
      });
      savedTo = path;
      logger.save({ step, path, reason });
    };
    const result = await runTraining(
      {
        ...parts,
        data,
        evalData,
        logger,
        stop: io.stop,
        checkpoint: (step, lr) => save(step, lr, "periodic"),
      },
      {
        steps: options.steps,
        totalBatch: options.totalBatch,
        microBatch: options.microBatch,
        schedule,
        clipGradients: options.maxGradNorm > 0,
        evalEvery: options.evalEvery,
        evalSequences,
        firstStep,
        saveEvery: options.saveEvery,
      },
    );
    // A run stopped before its first step has nothing new: the resumed folder already holds it.
    if (result.lastStep >= firstStep) {
      await save(result.lastStep, result.lastLr, result.stopped ? "interrupt" : "end");
    }
    logger.end({
      steps: result.lastStep,
      interrupted: result.stopped,
      finalLoss: result.losses.length > 0 ? result.losses[result.losses.length - 1] : NaN,
      seconds: result.seconds,
      tokensPerSec: result.tokensPerSec,
      savedTo,
    });
    return { losses: result.losses, lastStep: result.lastStep, stopped: result.stopped, savedTo };
  } finally {
    await data.close();
    await evalData?.close();
  }
}

/**
 * Throws a TrainerStateError naming every setting of this run that would not continue the saved
 * one: the data position and batch geometry must match, and there must be steps left.
 */
function checkResumable(saved: TrainerState, now: TrainerState, options: TrainOptions): void {
  const where = `Cannot resume from "${options.resume}"`;
  const problems: string[] = [];
  if (saved.totalBatch !== now.totalBatch) {
    problems.push(`it used --total-batch ${saved.totalBatch}, this run ${now.totalBatch}`);
  }
  if (saved.sequenceLength !== now.sequenceLength) {
    problems.push(
      `it used --sequence-length ${saved.sequenceLength}, this run ${now.sequenceLength}`,
    );
  }
  if (saved.data.sequences !== now.data.sequences) {
    problems.push(
      `its data had ${saved.data.sequences} sequences, --data-path ${options.dataPath} has ` +
        now.data.sequences,
    );
  }
  if (saved.data.shuffleSeed !== now.data.shuffleSeed) {
    const show = (s: number | null) => s === null ? "--no-shuffle" : `--seed ${s}`;
    problems.push(
      `it shuffled with ${show(saved.data.shuffleSeed)}, this run ${show(now.data.shuffleSeed)}`,
    );
  }
  if (saved.step >= options.steps) {
    problems.push(`it is at step ${saved.step}, --steps ${options.steps} leaves nothing to run`);
  }
  if (problems.length > 0) throw new TrainerStateError(`${where}: ${problems.join("; ")}`);
}

/** The optimizer the flags ask for, over the flat parameter buffer of `layout`. */
function makeOptimizer(rt: GpuRuntime, options: TrainOptions, layout: ParamLayout): Optimizer {
  const size = layout.totalSize;
  // Split like the model's parameters (model/llama.ts makes them the same way).
  const segments = paramSegments(layout, rt.limits.maxBufferSize);
  switch (options.optimizer) {
    case "adamw":
      return new AdamW(rt, {
        size,
        segments,
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
        segments,
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
  const options = parseOrExit(TRAIN_SPEC, (parsed) => trainOptions(parsed.values));
  // The first SIGINT/SIGTERM finishes the step in flight, saves and exits 0; a second aborts.
  const stop = new AbortController();
  const abort = new AbortController();
  const onSignal = () => {
    if (!stop.signal.aborted) {
      stop.abort(new Error("interrupted"));
      console.error("train: stopping after this step and saving (again to abort without saving)");
    } else abort.abort(new Error("interrupted twice: aborted without saving"));
  };
  const signals = ["SIGINT", "SIGTERM"] as const;
  for (const s of signals) Deno.addSignalListener(s, onSignal);
  try {
    await train(options, {
      write: (l) => console.log(l),
      signal: abort.signal,
      stop: stop.signal,
    });
  } catch (e) {
    const message = (e as Error).message;
    // A JSON log's reader learns why it ended from the log itself, as from the client's.
    if (options.logs === "json") {
      console.log(logLine(Date.now(), "error", "error", { what: "train", error: message }));
    }
    console.error(`train: ${message}`);
    Deno.exit(1);
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, onSignal);
  }
}
