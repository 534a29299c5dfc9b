/**
 * The plain types every room speaks: a batch of sequences, a public key, where the training data
 * lives and how it is cut, the learning-rate schedule and the optimizer a run names. Data
 * providers, the optimizer, the trainer, the client and the coordinator all read these; none of
 * them needs the coordinator to name a batch. Plain data only, so the same values are encoded
 * to bytes, written as TOML and mirrored by the Solana program (coordinator/core/types.ts holds
 * the rest of the run's state).
 *
 * @module
 */

/** A 32-byte public key (ed25519). */
export type PublicKeyBytes = Uint8Array;

/** Inclusive range of sequence indices: `[start, end]`, `start <= end`. */
export interface BatchId {
  start: number;
  end: number;
}

/** Bytes per token in a data file. */
export type TokenSize = "TwoBytes" | "FourBytes";
/** Every {@link TokenSize}, in the order of their config and wire names. */
export const TOKEN_SIZE_NAMES: readonly TokenSize[] = ["TwoBytes", "FourBytes"];

/** `DontShuffle`, or a 32-byte seed. */
export type Shuffle = { kind: "DontShuffle" } | { kind: "Seeded"; seed: Uint8Array };

export type HttpLocation =
  | { kind: "SingleUrl"; url: string }
  | {
    kind: "NumberedFiles";
    urlTemplate: string;
    startIndex: number;
    nLeftPadZeros: number;
    numFiles: number;
  }
  | { kind: "Gcp"; bucketName: string; filterDirectory: string };

/** Where a run's tokens come from. */
export type DataLocation =
  | { kind: "Dummy" }
  | { kind: "Server"; address: string }
  | { kind: "Local"; path: string }
  | { kind: "Http"; location: HttpLocation; tokenSizeInBytes: TokenSize; shuffle: Shuffle }
  | { kind: "WeightedHttp"; url: string }
  | { kind: "Preprocessed"; source: string };

/** A Hugging Face Hub repository (a checkpoint's home). */
export interface HubRepo {
  repoId: string;
  revision: string | null;
}
/** A Google Cloud Storage location (a checkpoint's home). */
export interface GcsRepo {
  bucket: string;
  prefix: string | null;
}

interface WarmupFields {
  baseLr: number;
  warmupSteps: number;
  warmupInitLr: number;
}
/** A learning-rate schedule (common/lr_schedule.ts computes it). */
export type LrSchedule =
  | ({ kind: "Constant" } & WarmupFields)
  | ({ kind: "Linear"; totalSteps: number; finalLr: number } & WarmupFields)
  | ({ kind: "Cosine"; totalSteps: number; finalLr: number } & WarmupFields)
  | ({
    kind: "WarmupStableDecay";
    stableSteps: number;
    cosineDecaySteps: number;
    cosineDecayFinalLr: number;
    linearDecaySteps: number;
    linearDecayFinalLr: number;
  } & WarmupFields);

/** The optimizer a run trains with, and its settings. */
export type OptimizerDefinition =
  | { kind: "Dummy" }
  | {
    kind: "AdamW";
    betas: [number, number];
    weightDecay: number;
    eps: number;
    clipGradNorm: number | null;
  }
  | {
    kind: "Distro";
    clipGradNorm: number | null;
    weightDecay: number | null;
    compressionDecay: number;
    compressionTopk: number;
    compressionChunk: number;
    quantize1bit: boolean;
  };
