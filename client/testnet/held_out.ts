/**
 * The held-out loss of a model folder: the mean next-token loss over the first sequences of a
 * validation split, forward only on WebGPU. The demo measures it on the run's seeded model
 * before training and on the last checkpoint after, so the learning it reports is on text no
 * client trained on.
 *
 * @module
 */
import { LocalDataProvider } from "../../data/mod.ts";
import { LlamaModel } from "../../model/mod.ts";
import { GpuRuntime } from "../../shaders/mod.ts";
import { evaluate } from "../../train/mod.ts";
import { loadModel } from "../model_source.ts";

/** What {@linkcode heldOutLoss} evaluates. */
export interface HeldOutOptions {
  /** A model folder: `config.json`, and `model.safetensors` unless seeded. */
  readonly modelFolder: string;
  /** The run id, whose seed builds the init when the folder has no weights. */
  readonly runId: string;
  /** The folder of the held-out token files (u16). */
  readonly validationDir: string;
  /** Tokens per sequence. */
  readonly seqLen: number;
  /** Sequences to evaluate, a multiple of 8 (default 64). */
  readonly sequences?: number;
  readonly signal?: AbortSignal;
}

/** A measured held-out loss. */
export interface HeldOutLoss {
  /** Mean next-token loss (nats). */
  readonly loss: number;
  readonly sequences: number;
  /** Whether the weights were the run's seeded init or read from the folder. */
  readonly weights: "seeded" | "loaded";
}

/** Sequences per forward pass; the evaluation runs them 8 micro-batches per submission. */
const MICRO_BATCH = 8;

/** Evaluates the model of `options.modelFolder` on its held-out sequences. */
export async function heldOutLoss(options: HeldOutOptions): Promise<HeldOutLoss> {
  const sequences = options.sequences ?? 64;
  if (!Number.isInteger(sequences) || sequences < MICRO_BATCH || sequences % MICRO_BATCH !== 0) {
    throw new RangeError(
      `held-out sequences must be a multiple of ${MICRO_BATCH}, not ${sequences}`,
    );
  }
  const model = await loadModel(options.modelFolder, options.runId);
  const data = await LocalDataProvider.open(options.validationDir, {
    seqLen: options.seqLen,
    tokenSize: "TwoBytes",
    vocabSize: model.config.vocabSize,
  });
  try {
    using rt = await GpuRuntime.create();
    using llama = new LlamaModel(rt, {
      precision: "f32",
      config: model.config,
      layout: model.layout,
      weights: model.weights,
      microBatch: MICRO_BATCH,
      seqLen: options.seqLen,
      slots: Math.min(8, sequences / MICRO_BATCH),
    });
    const loss = await evaluate({ rt, model: llama, data, signal: options.signal }, { sequences });
    return { loss, sequences, weights: model.source };
  } finally {
    await data.close();
  }
}
