/**
 * Where a client gets the run's model at Warmup. For now a local Hugging Face folder
 * (`config.json`, optionally `model.safetensors`): the `--model` override, else the
 * checkpoint's repo id read as a path. Without weights, every client builds the same seeded
 * init (seed from the run id), so all start bit-identical.
 *
 * @module
 */
import { isAbsolute, join } from "node:path";
import { sha256 } from "../coordinator/hash.ts";
import type { Checkpoint } from "../coordinator/types.ts";
import { readModelDir } from "../model/checkpoint.ts";
import type { LlamaConfig } from "../model/hf_config.ts";
import { initParams, type ParamLayout } from "../model/params.ts";

/** The model cannot be found or read; the message names the folder and why. */
export class ModelSourceError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ModelSourceError";
  }
}

/**
 * The folder to load: `override` if given, else the repo id of a Hub/Dummy/P2P checkpoint
 * (relative paths against `baseDir`). Gcs checkpoints are refused (no download support yet).
 */
export function modelFolder(
  checkpoint: Checkpoint,
  options: { override?: string | null; baseDir?: string } = {},
): string {
  const base = options.baseDir ?? Deno.cwd();
  const resolve = (p: string) => (isAbsolute(p) ? p : join(base, p));
  if (options.override) return resolve(options.override);
  switch (checkpoint.kind) {
    case "Hub":
    case "Dummy":
    case "P2P":
      return resolve(checkpoint.repo.repoId);
    case "Gcs":
    case "P2PGcs":
    case "Ephemeral":
      throw new ModelSourceError(
        `checkpoint ${checkpoint.kind} cannot be loaded yet: pass --model DIR (a local HF folder)`,
      );
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
    weights: initParams(layout, config, runInitSeed(runId)),
    source: "seeded",
  };
}
