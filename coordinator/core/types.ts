/**
 * The coordinator's vocabulary: run configuration, run state and everything the
 * state machine stores. Plain data only (no classes, no methods) so the same values
 * can be encoded to bytes, dumped as TOML/JSON, and mirrored by the Solana program.
 *
 * Integers that Psyche stores as u64 and that can exceed 2^53 (random seeds) are
 * `bigint`; every other integer is a `number` whose range the validators check.
 *
 * @module
 */
import type {
  DataLocation,
  GcsRepo,
  HubRepo,
  LrSchedule,
  OptimizerDefinition,
  PublicKeyBytes,
} from "../../common/mod.ts";
export type {
  BatchId,
  DataLocation,
  GcsRepo,
  HttpLocation,
  HubRepo,
  LrSchedule,
  OptimizerDefinition,
  PublicKeyBytes,
  Shuffle,
  TokenSize,
} from "../../common/mod.ts";

/** Run states, in the order of their wire codes (0..7). */
export const RUN_STATES = [
  "Uninitialized",
  "WaitingForMembers",
  "Warmup",
  "RoundTrain",
  "RoundWitness",
  "Cooldown",
  "Finished",
  "Paused",
] as const;
export type RunState = typeof RUN_STATES[number];

/** Client states, in the order of their wire codes (0..3). */
export const CLIENT_STATES = ["Healthy", "Dropped", "Withdrawn", "Ejected"] as const;
export type ClientState = typeof CLIENT_STATES[number];

/** Rounds kept in the ring buffer: enough for the h-2 apply pipeline plus the current round. */
export const NUM_STORED_ROUNDS = 4;
/** Witnesses a round can hold (Psyche's SOLANA_MAX_NUM_WITNESSES). */
export const MAX_WITNESSES = 32;
/** Checkpointers a Cooldown elects at most (Psyche's SOLANA_MAX_NUM_CHECKPOINTERS). */
export const MAX_CHECKPOINTERS = 16;
/** Default client cap; the Solana account is laid out for this many clients. */
export const DEFAULT_MAX_CLIENTS = 256;
/** Largest client cap the TCP backend accepts (`config.max_clients`). */
export const MAX_CLIENTS_LIMIT = 65_535;
/** Longest run id, in UTF-8 bytes. */
export const MAX_RUN_ID_BYTES = 32;
/** Longest repo id / revision / bucket / prefix string, in UTF-8 bytes. */
export const MAX_STRING_BYTES = 64;
/** Longest URL (data locations), in UTF-8 bytes. */
export const MAX_URL_BYTES = 192;
/** Parameter-digest records the coordinator keeps (the newest steps; see {@link DigestRecord}). */
export const NUM_DIGEST_RECORDS = 8;
/** Bytes of a parameter digest (shaders/digest.ts: sha256 over the GPU block digests). */
export const PARAMS_DIGEST_BYTES = 32;
/** Target false-positive rate of the witness bloom filters at the run's client cap. */
export const BLOOM_FALSE_POSITIVE_RATE = 0.01;
/** Verifiers a stage of a verification task draws (fewer when the epoch has fewer clients). */
export const VERIFIERS_PER_TASK = 3;
/** A stage needs at least this many verifiers: one verifier alone never decides. */
export const MIN_VERIFIERS_PER_TASK = 2;
/** Verification tasks an epoch holds open at once. */
export const MAX_VERIFICATION_TASKS = 16;
/** Results sampled for verification per round, at most. */
export const MAX_SAMPLES_PER_ROUND = 4;
/**
 * Rounds a stage of a verification task lasts at least: opened in round `h`, it closes when round
 * `h + 1` ends, or later, once it has also lasted `verificationStageSeconds` (verification.ts).
 */
export const VERIFICATION_STAGE_ROUNDS = 2;
/** Ejection records the coordinator keeps (the newest; see {@link EjectionRecord}). */
export const NUM_EJECTION_RECORDS = 32;
/** Default `verification_bar_epochs`: epochs an ejected client sits out. */
export const DEFAULT_VERIFICATION_BAR_EPOCHS = 4;

/**
 * Who a client is. On the TCP backend `signer` and `p2pIdentity` are the same key;
 * on Solana `signer` is the wallet and `p2pIdentity` the libp2p key.
 * Identity is decided by `signer` alone.
 */
export interface NodeIdentity {
  signer: PublicKeyBytes;
  p2pIdentity: PublicKeyBytes;
}

/** Coordinator timing, membership and batch-size settings (`[config]` in state.toml). */
export interface CoordinatorConfig {
  /** Seconds Warmup may last (model download and load). Must be < epochTime. */
  warmupTime: number;
  /** Seconds Cooldown lasts (checkpointing). > 0. */
  cooldownTime: number;
  /** Seconds after which a RoundTrain times out. > 0 and < epochTime. */
  maxRoundTrainTime: number;
  /** Seconds a RoundWitness lasts. > 0. */
  roundWitnessTime: number;
  /** Tokens over which the global batch size ramps from start to end. */
  globalBatchSizeWarmupTokens: number;
  /** Seconds after which the epoch winds down. > 0. */
  epochTime: number;
  /** The run finishes when progress.step reaches this. > 0. */
  totalSteps: number;
  /** Pending clients needed to leave WaitingForMembers. >= minClients, <= maxClients. */
  initMinClients: number;
  /** Below this many healthy clients the epoch ends. > 0. */
  minClients: number;
  /** Witnesses per round; 0 means min(clients, MAX_WITNESSES). <= minClients, <= MAX_WITNESSES. */
  witnessNodes: number;
  /** Sequences per step at the start of the batch-size ramp. > 0. */
  globalBatchSizeStart: number;
  /** Sequences per step at the end of the ramp. >= globalBatchSizeStart. */
  globalBatchSizeEnd: number;
  /**
   * Percent (0..100) of each round's trained batches whose results are sampled for replay
   * verification; at least one when above 0 (docs/protocol.md, "Verification"). Unlike
   * Psyche's committee of non-training verifiers, every client keeps training: verifying is
   * extra work given to a few of them per sample.
   */
  verificationPercent: number;
  /** Minimum seconds spent in WaitingForMembers before Warmup. > 0. */
  waitingForMembersExtraTime: number;
  /**
   * Client cap for this run (not in Psyche: its cap is fixed at 256). Sizes the bloom
   * filters. Optional in TOML; defaults to DEFAULT_MAX_CLIENTS.
   */
  maxClients: number;
  /**
   * Epochs a client ejected by verification sits out (not in Psyche): ejected in epoch `e`, it
   * may join again from epoch `e + verificationBarEpochs + 1`. Optional in TOML; defaults to
   * DEFAULT_VERIFICATION_BAR_EPOCHS.
   */
  verificationBarEpochs: number;
}

export type LlmArchitecture = "HfLlama" | "HfDeepseek" | "HfAuto" | "Torchtitan";
export type LlmDataType = "Pretraining" | "Finetuning";
/**
 * How the parameters are shared at each epoch's end (`[model.LLM] snapshot_dtype`): `f32`
 * serves the f32 masters as they are; `bf16` has every client round its masters to the nearest
 * bf16 at Cooldown, before the digest and the snapshot, so the snapshot travels as bf16 (half
 * the bytes) and every replica stays bit-identical (docs/testnet.md, "Blobs and manifest").
 */
export type SnapshotDtype = "f32" | "bf16";
/** Every {@link SnapshotDtype}, in wire-code order (0 f32, 1 bf16). */
export const SNAPSHOT_DTYPES: readonly SnapshotDtype[] = ["f32", "bf16"];
export type Checkpoint =
  | { kind: "Ephemeral" }
  | { kind: "Dummy"; repo: HubRepo }
  | { kind: "Hub"; repo: HubRepo }
  | { kind: "P2P"; repo: HubRepo }
  | { kind: "Gcs"; repo: GcsRepo }
  | { kind: "P2PGcs"; repo: GcsRepo };

/** `[model.LLM]`: the model being trained and how. */
export interface LlmModel {
  architecture: LlmArchitecture;
  dataType: LlmDataType;
  maxSeqLen: number;
  coldStartWarmupSteps: number;
  /** What every client rounds its parameters to at Cooldown before sharing them. */
  snapshotDtype: SnapshotDtype;
  dataLocation: DataLocation;
  checkpoint: Checkpoint;
  lrSchedule: LrSchedule;
  optimizer: OptimizerDefinition;
}

export interface CoordinatorProgress {
  epoch: number;
  /** Starts at 1. */
  step: number;
  epochStartDataIndex: number;
}

/** Proof that a client holds a committee position in a round: recomputable by anyone. */
export type Committee = "TieBreaker" | "Verifier" | "Trainer";
export interface CommitteeProof {
  committee: Committee;
  position: number;
  index: number;
}
export interface WitnessProof {
  position: number;
  index: number;
  witness: boolean;
}

/**
 * A bloom filter of `bits.length * 8` bits with `keys.length` hash keys
 * (keyed FNV-1a-64; see coordinator/core/bloom.ts). Sized from the run's client cap.
 */
export interface Bloom {
  keys: BigUint64Array;
  bits: Uint8Array;
}

export interface Witness {
  proof: WitnessProof;
  participantBloom: Bloom;
  broadcastBloom: Bloom;
  broadcastMerkle: Uint8Array;
}

/** Most evaluation results a witness reports per round (Psyche's FixedVec<_, 8>). */
export const MAX_METADATA_EVALS = 8;
/** Longest evaluation name, in UTF-8 bytes (Psyche's FixedString<32>). */
export const MAX_EVAL_NAME_BYTES = 32;
/** Most prompt tokens a witness reports per round (Psyche's FixedVec<i32, 16>). */
export const MAX_PROMPT_RESULTS = 16;

/** One named evaluation score, e.g. `{ name: "hellaswag", value: 0.31 }`. */
export interface EvalResult {
  /** At most MAX_EVAL_NAME_BYTES UTF-8 bytes. */
  name: string;
  value: number;
}

/**
 * What a witness reports alongside its witness (Psyche's `WitnessMetadata`), on every
 * backend. Informational only: coordinators log it and decide nothing with it.
 */
export interface WitnessMetadata {
  /** The step the witness trained. */
  step: number;
  tokensPerSec: number;
  bandwidthPerSec: number;
  loss: number;
  /** At most MAX_METADATA_EVALS. */
  evals: EvalResult[];
  /** Token ids of a sampled prompt continuation; at most MAX_PROMPT_RESULTS, each an i32. */
  promptResults: number[];
  /** Which prompt `promptResults` continues (0..255). */
  promptIndex: number;
  /** Fraction of the round spent training (0..1). */
  efficiency: number;
}

/**
 * The digest of the parameters of `step` that a quorum of voters reported: the parameters the
 * round of that step trains on (after the apply of step − 2's results), or, for an epoch's
 * first step, the parameters the epoch starts from. Every honest client holds exactly these
 * bits at that point; a client whose own digest differs has diverged (docs/protocol.md,
 * "Parameter digests").
 */
export interface DigestRecord {
  step: number;
  /** {@link PARAMS_DIGEST_BYTES} bytes, never all zero. */
  digest: Uint8Array;
}

/** One client's digest report for the current phase (Warmup, a round, or Cooldown). */
export interface DigestVote {
  /** The voter's index in the epoch's client list. */
  index: number;
  /** {@link PARAMS_DIGEST_BYTES} bytes, never all zero (all zero means "no vote"). */
  digest: Uint8Array;
}

export interface Round {
  witnesses: Witness[];
  dataIndex: number;
  randomSeed: bigint;
  height: number;
  clientsLen: number;
  tieBreakerTasks: number;
  /**
   * Epoch indices (ascending) of the trainers whose results of this round are not applied: they
   * were ejected by verification, or sampled after they had left, before the round's apply.
   * Frozen once the apply is due (round `height + 2` starts), so every client applies the same.
   */
  rejected: number[];
}

/** What a verifier says of a sampled result. */
export type VerificationVerdict = "Pass" | "Fail";

/**
 * Why a verifier failed a result, in wire-code order (0..6). Append only.
 * - `ResultMismatch`: the replayed result's coefficients or signs differ from the published ones
 *   beyond the calibrated tolerance;
 * - `StateMismatch`: the replayed error-feedback state differs from the one served;
 * - `ChainBreak`: the result's input state is neither zero nor its trainer's last output state;
 * - `StateUnavailable`: the trainer did not serve its states;
 * - `StateInconsistent`: a served state is not what the result committed to (digest, size, or
 *   an output state whose own coefficients are not the published ones);
 * - `CopiedResult`: the result repeats another result beyond the calibrated overlap.
 */
export const VERIFICATION_EVIDENCE = [
  "None",
  "ResultMismatch",
  "StateMismatch",
  "ChainBreak",
  "StateUnavailable",
  "StateInconsistent",
  "CopiedResult",
] as const;
export type VerificationEvidence = typeof VERIFICATION_EVIDENCE[number];

/** A verifier's report on one sampled result (the `verification_report` entry point). */
export interface VerificationReport {
  /** Height of the round whose result was verified. */
  height: number;
  /** The trainer's `epochIndex`. */
  trainer: number;
  verdict: VerificationVerdict;
  /** `None` with a pass; why, with a fail. */
  evidence: VerificationEvidence;
  /** The measurement behind the verdict (parts per million of the compared entries), a u32. */
  detail: number;
}

/** Stages of a verification task, in wire-code order. */
export const VERIFICATION_STAGES = ["Verify", "TieBreak"] as const;
export type VerificationStage = typeof VERIFICATION_STAGES[number];

/** One verifier's seat in a task, and what it reported. */
export interface VerificationSeat {
  /** The verifier's `epochIndex`. */
  verifier: number;
  /** The stage the seat belongs to. */
  stage: VerificationStage;
  /** Null until the verifier reports. */
  verdict: VerificationVerdict | null;
  evidence: VerificationEvidence;
  detail: number;
}

/**
 * A sampled result under verification: the trainer's result of round `height`, checked by the
 * seats of the current stage until a majority of them agrees or the stage's deadline passes
 * (docs/protocol.md, "Verification").
 */
export interface VerificationTask {
  height: number;
  /** The trainer's `epochIndex`. */
  trainer: number;
  stage: VerificationStage;
  /**
   * The stage closes when the RoundWitness of a round of at least this height ends, once
   * `verificationStageSeconds` have passed since `openedAt`.
   */
  deadline: number;
  /** When the current stage opened (seconds, as the machine's `now`). */
  openedAt: number;
  /**
   * The verdict a majority reached, or null. A decided task stays open until its stage closes:
   * every seat still owes its report (a silent one is ejected as idle then, and a late report
   * against the decision is ejected at once).
   */
  decided: VerificationVerdict | null;
  /** Stage seats first, tie-break seats after them; at most 2 × VERIFIERS_PER_TASK. */
  seats: VerificationSeat[];
}

/** Why a client was ejected, in wire-code order (0..4). Append only. */
export const EJECTION_CAUSES = [
  "FailedVerification",
  "FalseAccusation",
  "FalseVouch",
  "IdleVerifier",
  "IdleWitness",
] as const;
export type EjectionCause = typeof EJECTION_CAUSES[number];

/**
 * A client the coordinator ejected, kept for the incentives (slashing) and for the bar: its
 * signer may not join an epoch numbered below `barredUntil`.
 */
export interface EjectionRecord {
  signer: PublicKeyBytes;
  /** The epoch it was ejected in. */
  epoch: number;
  /** The step of the result or task it was ejected for. */
  step: number;
  cause: EjectionCause;
  /** The evidence the deciding reports gave (`None` for verifiers' own faults). */
  evidence: VerificationEvidence;
  /** The first epoch it may join again. */
  barredUntil: number;
}

export interface Client {
  id: NodeIdentity;
  state: ClientState;
  /**
   * Height of the first round of the epoch the client is no longer part of (0 when it
   * left during Warmup). Set when it moves to `exitedClients`.
   */
  exitedHeight: number;
  /**
   * Position in the epoch's starting client list (join order). Fixed for the epoch, so the
   * client list of any earlier round can be rebuilt after clients left (not in Psyche).
   */
  epochIndex: number;
}

/** Zeroed at the start of every epoch (except `coldStartEpoch`). */
export interface EpochState {
  rounds: Round[];
  clients: Client[];
  exitedClients: Client[];
  roundsHead: number;
  startStep: number;
  /** 0 = unset. */
  lastStep: number;
  startTimestamp: number;
  firstRound: boolean;
  coldStartEpoch: boolean;
  /**
   * Digest votes of the current phase (at most MAX_WITNESSES, one per client index), for the
   * parameters of `progress.step`; tallied into `paramsDigests` when the phase ends.
   */
  digestVotes: DigestVote[];
  /** Open verification tasks, oldest first (at most MAX_VERIFICATION_TASKS). */
  verificationTasks: VerificationTask[];
}

/** The whole coordinator: the run's single source of truth. */
export interface CoordinatorState {
  runId: string;
  runState: RunState;
  model: LlmModel;
  config: CoordinatorConfig;
  progress: CoordinatorProgress;
  epochState: EpochState;
  runStateStartUnixTimestamp: number;
  pendingPause: boolean;
  /**
   * The recorded parameter digests, oldest first, at most NUM_DIGEST_RECORDS, steps strictly
   * increasing. Outlives epochs (and is saved with the run), so a joiner can check the model
   * it loads against the run's.
   */
  paramsDigests: DigestRecord[];
  /**
   * The clients ejected by verification, oldest first, at most NUM_EJECTION_RECORDS. Outlives
   * epochs (and is saved with the run): the bar on rejoining, and the record slashing reads.
   */
  ejections: EjectionRecord[];
}
