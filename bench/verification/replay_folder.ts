/**
 * The folder `bench-verify`'s trainer role writes and its verifier role reads: the contract that
 * lets the two run apart, on different machines and days apart (docs/gpu-benchmarks.md,
 * "Verification across adapters"). The verifier needs nothing from the trainer but the folder:
 *
 * - `manifest.json`: the format and the settings ({@linkcode ReplayManifest}); the verifier takes
 *   its settings from here, not from its flags;
 * - `data/000.ds`: the token sequences the trainers read (a prefix of the corpus), so the verifier
 *   needs no corpus of its own;
 * - `trainer-adapter`: the trainers' adapter, in words;
 * - `step-N.json` per step ({@linkcode BenchStep}), each result's payload, each served state.
 *
 * Pure: the manifest's checks, and which sequences a run reads.
 *
 * @module
 */

/** Bumped whenever what the folder holds or means changes. */
export const REPLAY_FOLDER_FORMAT = 1;

/** The manifest's file name inside the folder. */
export const MANIFEST_FILE = "manifest.json";

/** The settings a trainer folder was made with: the verifier must use the same. */
export interface ReplayManifest {
  readonly format: number;
  readonly steps: number;
  readonly honest: number;
  readonly seqLen: number;
  /** Sequences per trainer per step. */
  readonly micro: number;
  /** The model's folder, from the repository root (`config/models/llama-bytes`). */
  readonly model: string;
  /** SHA-256 (hex) of that folder's config.json, so a changed model is caught. */
  readonly modelConfigSha256: string;
  /** Sequences the run reads: `data/000.ds` holds at least these. */
  readonly sequences: number;
}

/** A trainer folder the verifier cannot use: missing, unfinished, or made by other code. */
export class ReplayFolderError extends Error {
  override name = "ReplayFolderError";
}

/** The trainers of a run: `honest` honest ones, then one per training attack. */
export function trainerCount(honest: number): number {
  return honest + 3;
}

/**
 * How many sequences a run reads, from sequence 0: every trainer's batches of every step (step s
 * starts at `s * trainers * micro`), doubled so that the other-data attack's first batch, half the
 * sequences away, is inside too. Even halves keep a batch from straddling the end.
 */
export function sequencesRead(o: { steps: number; honest: number; micro: number }): number {
  return 2 * (o.steps + 2) * trainerCount(o.honest) * o.micro;
}

/**
 * Checks a manifest read from `where` field by field and returns it; throws
 * {@linkcode ReplayFolderError} saying what was expected and what was found.
 *
 * @example
 * ```ts
 * import { parseManifest } from "./replay_folder.ts";
 * const text = JSON.stringify({
 *   format: 1, steps: 2, honest: 2, seqLen: 32, micro: 2, model: "config/models/llama-tiny",
 *   modelConfigSha256: "ab", sequences: 80,
 * });
 * parseManifest(text, "d/manifest.json"); // the manifest
 * ```
 */
export function parseManifest(text: string, where: string): ReplayManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new ReplayFolderError(`${where} is not JSON: ${(cause as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ReplayFolderError(`${where} must hold a JSON object`);
  }
  const o = raw as Record<string, unknown>;
  if (o.format !== REPLAY_FOLDER_FORMAT) {
    throw new ReplayFolderError(
      `${where} has format ${JSON.stringify(o.format)}, this bench reads format ` +
        `${REPLAY_FOLDER_FORMAT}: make the folder again with this version's trainer role`,
    );
  }
  const count = (key: string): number => {
    const v = o[key];
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1) {
      throw new ReplayFolderError(
        `${where}: "${key}" must be a positive integer, found ${JSON.stringify(v)}`,
      );
    }
    return v;
  };
  const text_ = (key: string): string => {
    const v = o[key];
    if (typeof v !== "string" || v === "") {
      throw new ReplayFolderError(
        `${where}: "${key}" must be a string, found ${JSON.stringify(v)}`,
      );
    }
    return v;
  };
  const m: ReplayManifest = {
    format: REPLAY_FOLDER_FORMAT,
    steps: count("steps"),
    honest: count("honest"),
    seqLen: count("seqLen"),
    micro: count("micro"),
    model: text_("model"),
    modelConfigSha256: text_("modelConfigSha256"),
    sequences: count("sequences"),
  };
  const needed = sequencesRead(m);
  if (m.sequences < needed) {
    throw new ReplayFolderError(
      `${where}: "sequences" is ${m.sequences}, but ${m.steps} steps of ` +
        `${trainerCount(m.honest)} trainers read ${needed}`,
    );
  }
  return m;
}

/**
 * The verifier's model must be the trainers': throws {@linkcode ReplayFolderError} when this
 * checkout's config.json for the manifest's model differs.
 */
export function checkModelConfig(m: ReplayManifest, sha256: string): void {
  if (sha256 !== m.modelConfigSha256) {
    throw new ReplayFolderError(
      `${m.model}/config.json here has SHA-256 ${sha256}, the trainers' had ` +
        `${m.modelConfigSha256}: verify with the checkout the folder was made with`,
    );
  }
}
