/**
 * `validate-config --data-config`'s check that the run's model can read the data server's
 * tokens: the model's `vocab_size` (the `config.json` of its checkpoint, found as the clients
 * find it: model/hub.ts) against the largest token id in the data folder
 * (data/token_scan.ts). A 512-token model paired with LLaMA-2 token ids passes every other
 * rule and then fails on every batch.
 *
 * When the checkpoint is not a local folder (a Gcs bucket, a Hub repo not downloaded here), the
 * check is skipped with the reason, since the coordinator's machine need not hold the model.
 *
 * @module
 */
import { join } from "node:path";
import {
  DataError,
  type DataServerConfig,
  LocalDataProvider,
  type ScanOptions,
  scanTokenFiles,
  type TokenScan,
} from "../../data/mod.ts";
import {
  CONFIG_FILE,
  HfConfigError,
  HubCheckpointError,
  readLlamaConfig,
  resolveHubRepo,
} from "../../model/mod.ts";
import type { RunConfig } from "../config/mod.ts";

/** The outcome of {@linkcode checkModelVocabulary}. */
export type VocabularyCheck =
  | {
    /** Every token id read is below `vocabSize`. */
    readonly kind: "Fits";
    readonly vocabSize: number;
    /** The config.json that gave `vocabSize`. */
    readonly configFile: string;
    readonly scan: TokenScan;
  }
  | {
    /** The data holds `scan.maxToken >= vocabSize`. */
    readonly kind: "TooSmall";
    readonly vocabSize: number;
    readonly configFile: string;
    readonly scan: TokenScan;
  }
  | {
    /** The data folder cannot be read as a dataset (no token files, a truncated file, ...). */
    readonly kind: "BadData";
    readonly reason: string;
  }
  | {
    /** The model's config.json is not available here; nothing was compared. */
    readonly kind: "Skipped";
    readonly reason: string;
  };

/** Options of {@linkcode checkModelVocabulary}. */
export interface VocabularyCheckOptions extends ScanOptions {
  /** Folder relative repo ids resolve against, as a client's (default: working directory). */
  readonly baseDir?: string;
  /** Environment lookup for the hub folders (default `Deno.env.get`, undefined if not allowed). */
  readonly env?: (name: string) => string | undefined;
}

/** Compares the vocabulary of `run`'s model with the token ids of `data`'s folder. */
export async function checkModelVocabulary(
  run: RunConfig,
  data: DataServerConfig,
  options: VocabularyCheckOptions = {},
): Promise<VocabularyCheck> {
  const model = await modelConfigFile(run, options);
  if ("skipped" in model) return { kind: "Skipped", reason: model.skipped };
  let vocabSize: number;
  try {
    vocabSize = (await readLlamaConfig(model.file)).vocabSize;
  } catch (e) {
    if (!(e instanceof HfConfigError) && !(e instanceof Deno.errors.NotFound)) throw e;
    return { kind: "Skipped", reason: `cannot read "${model.file}": ${(e as Error).message}` };
  }
  let scan: TokenScan;
  try {
    const provider = await LocalDataProvider.open(data.dir, {
      seqLen: data.seqLen,
      tokenSize: data.tokenSize,
    });
    try {
      scan = await scanTokenFiles(provider.index.files, options);
    } finally {
      await provider.close();
    }
  } catch (e) {
    if (!(e instanceof DataError)) throw e;
    return { kind: "BadData", reason: e.message };
  }
  const kind = scan.maxToken >= vocabSize ? "TooSmall" : "Fits";
  return { kind, vocabSize, configFile: model.file, scan };
}

async function modelConfigFile(
  run: RunConfig,
  options: VocabularyCheckOptions,
): Promise<{ file: string } | { skipped: string }> {
  const checkpoint = run.model.checkpoint;
  if (checkpoint.kind !== "Hub" && checkpoint.kind !== "Dummy" && checkpoint.kind !== "P2P") {
    return { skipped: `the ${checkpoint.kind} checkpoint is not a local folder` };
  }
  try {
    const folder = await resolveHubRepo(checkpoint.repo, {
      baseDir: options.baseDir,
      env: options.env ?? permittedEnv,
    });
    return { file: join(folder, CONFIG_FILE) };
  } catch (e) {
    if (!(e instanceof HubCheckpointError)) throw e;
    return { skipped: e.message };
  }
}

/** The environment variable, or undefined when it is unset or env access is not granted. */
function permittedEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}
