/**
 * A model from a local Hugging Face folder (`config.json`, optionally `model.safetensors`),
 * and the run-seeded init every client builds when a folder has no weights, so all start
 * bit-identical. The client's Warmup load (override, P2P fetch, Hub folder) is
 * client/model_sharing `loadRunModel`, which uses the same seed.
 *
 * @module
 */
import {
  initParamsParallel,
  type LlamaConfig,
  type ParamLayout,
  readModelDir,
} from "../model/mod.ts";
import { sha256 } from "../coordinator/core/mod.ts";

/** The model cannot be found or read; the message names the folder and why. */
export class ModelSourceError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ModelSourceError";
  }
}

/** The init seed every client of run `runId` uses: the first 4 bytes of sha256(run id). */
export function runInitSeed(runId: string): number {
  const h = sha256(new TextEncoder().encode(runId));
  return new DataView(h.buffer, h.byteOffset, 4).getUint32(0);
}

/** A loaded model: its config, flat layout and initial weights. */
export interface LoadedModel {
  readonly folder: string;
  readonly config: LlamaConfig;
  readonly layout: ParamLayout;
  readonly weights: Float32Array;
  /** Whether the weights came from the folder or from the seeded init. */
  readonly source: "loaded" | "seeded";
}

/** Reads `folder`; seeded init (from `runId`) when it holds no weights. */
export async function loadModel(folder: string, runId: string): Promise<LoadedModel> {
  let read;
  try {
    read = await readModelDir(folder);
  } catch (cause) {
    throw new ModelSourceError(
      `Cannot load the model from "${folder}": ${(cause as Error).message}`,
      { cause },
    );
  }
  const { config, layout, weights } = read;
  if (weights !== null) return { folder, config, layout, weights, source: "loaded" };
  return {
    folder,
    config,
    layout,
    weights: await initParamsParallel(layout, { config, seed: runInitSeed(runId) }),
    source: "seeded",
  };
}
