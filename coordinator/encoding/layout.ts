/**
 * Constants of the coordinator-state layout shared by the encoder and the decoder:
 * header bytes, the wire-code tables of every union and enum, and the decode error.
 * docs/state-encoding.md documents the layout byte by byte.
 *
 * @module
 */

/** First four bytes of every encoded state: ASCII "PSYC". */
export const STATE_MAGIC: Uint8Array = Uint8Array.of(0x50, 0x53, 0x59, 0x43);
/**
 * Layout version written by default. Version 5 is version 4 plus verification: the config's
 * `verificationBarEpochs` after `maxClients`, each round's `rejected` trainers after
 * `tieBreakerTasks`, and the open verification tasks and the ejection records after the
 * recorded digests. Version 4 is version 3 plus the model's
 * `snapshotDtype` at the end of the LlmModel; version 3 is version 2 plus the parameter
 * digests (the digest votes of the current phase and the recorded digests) after
 * `pendingPause`; version 2 stores times and durations in milliseconds (fractional seconds of
 * the TCP coordinator); version 1 stored whole seconds.
 */
export const STATE_ENCODING_VERSION = 5;
/**
 * Layout versions this build reads and writes. Version 1 (whole seconds) is still what the
 * Solana program speaks: its account is transcribed into it (the digests and the snapshot
 * dtype, which version 1 lacks, are read from the account beside it), and the config it
 * receives is encoded in it; the model it receives is version 4's, snapshot dtype included.
 * Versions 1 and 2 decode with no digests, and encode only a state that has none; versions 1
 * to 3 decode with snapshot dtype f32, and encode only a model whose snapshot dtype is f32;
 * versions 1 to 4 decode with no verification state and the default bar, and encode only a
 * state that has no verification state and the default bar.
 */
export const STATE_ENCODING_VERSIONS = [1, 2, 3, 4, 5] as const;
/** The first layout version that carries the parameter digests. */
export const DIGESTS_SINCE_VERSION = 3;
/** The first layout version whose LlmModel carries `snapshotDtype`. */
export const SNAPSHOT_DTYPE_SINCE_VERSION = 4;
/** The first layout version that carries verification (bar epochs, rejected, tasks, ejections). */
export const VERIFICATION_SINCE_VERSION = 5;
/** Wire codes of a verification seat's verdict (`None`: not reported yet). */
export const SEAT_VERDICT_KINDS = ["None", "Pass", "Fail"] as const;
/** One of {@linkcode STATE_ENCODING_VERSIONS}. */
export type StateEncodingVersion = typeof STATE_ENCODING_VERSIONS[number];
/** Bytes of the header (magic, version, reserved). */
export const STATE_HEADER_BYTES = 8;

/** Wire codes of `LlmModel.architecture`. */
export const ARCHITECTURE_KINDS = ["HfLlama", "HfDeepseek", "HfAuto", "Torchtitan"] as const;
/** Wire codes of `LlmModel.dataType`. */
export const DATA_TYPE_KINDS = ["Pretraining", "Finetuning"] as const;
/** Wire codes of `DataLocation.kind`. */
export const DATA_LOCATION_KINDS = [
  "Dummy",
  "Server",
  "Local",
  "Http",
  "WeightedHttp",
  "Preprocessed",
] as const;
/** Wire codes of `HttpLocation.kind`. */
export const HTTP_LOCATION_KINDS = ["SingleUrl", "NumberedFiles", "Gcp"] as const;
/** Wire codes of `TokenSize`. */
export const TOKEN_SIZE_KINDS = ["TwoBytes", "FourBytes"] as const;
/** Wire codes of `Shuffle.kind`. */
export const SHUFFLE_KINDS = ["DontShuffle", "Seeded"] as const;
/** Wire codes of `Checkpoint.kind`. */
export const CHECKPOINT_KINDS = ["Ephemeral", "Dummy", "Hub", "P2P", "Gcs", "P2PGcs"] as const;
/** Wire codes of `LrSchedule.kind`. */
export const LR_SCHEDULE_KINDS = ["Constant", "Linear", "Cosine", "WarmupStableDecay"] as const;
/** Wire codes of `OptimizerDefinition.kind`. */
export const OPTIMIZER_KINDS = ["Dummy", "AdamW", "Distro"] as const;
/** Wire codes of `LlmModel.snapshotDtype`. */
export const SNAPSHOT_DTYPE_KINDS = ["f32", "bf16"] as const;

/**
 * Bytes that are not a valid encoded state. `field` is the dotted path of the value
 * being read (e.g. `epochState.rounds[2].witnesses[0].participantBloom.keys`), `offset`
 * the byte offset where it starts.
 */
export class StateDecodeError extends Error {
  /** Dotted path of the field that was wrong. */
  readonly field: string;
  /** Byte offset of that field in the input. */
  readonly offset: number;

  /** `detail` says what was expected and what was found. */
  constructor(field: string, offset: number, detail: string) {
    super(`Cannot decode coordinator state: ${field} at byte ${offset}: ${detail}`);
    this.name = "StateDecodeError";
    this.field = field;
    this.offset = offset;
  }
}

/** A short description of a value for error messages. */
export function describe(v: unknown): string {
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v);
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  return String(v);
}
