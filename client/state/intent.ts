/**
 * The client's vocabulary of actions: what the state machine asks the driver to do, and
 * the progress record the driver keeps so each action happens once.
 *
 * Every intent has a key (`intentKey`); the driver marks it *started* when it dispatches the
 * intent and *done* when it completes, and planners never emit an intent whose key was
 * started, so re-planning on every event is safe.
 *
 * @module
 */
import type { BatchId, PublicKeyBytes } from "../../common/mod.ts";
import type {
  ApplyPlan,
  CommitteeProof,
  CoordinatorState,
  HealthCheck,
  SnapshotDtype,
  VerificationStage,
  WitnessProof,
} from "../../coordinator/core/mod.ts";

/** Ask the coordinator to take this client in a later epoch again (after Dropped/Withdrawn). */
export interface JoinIntent {
  readonly kind: "Join";
  readonly epoch: number;
}
/** Load (or keep) the model for this epoch. */
export interface LoadModelIntent {
  readonly kind: "LoadModel";
  readonly epoch: number;
}
/** Gossip `Finished{warmup}`: the model is loaded and the p2p node is up. */
export interface AnnounceWarmupFinishedIntent {
  readonly kind: "AnnounceWarmupFinished";
  readonly epoch: number;
}
/** Report readiness to the coordinator (every epoch client is ready). */
export interface SendWarmupWitnessIntent {
  readonly kind: "SendWarmupWitness";
  readonly epoch: number;
  readonly proof: WitnessProof;
}
/** Apply the consensus results of `plan.resultsRound` with `lr`. */
export interface ApplyIntent {
  readonly kind: "Apply";
  readonly epoch: number;
  readonly plan: ApplyPlan;
  /** Coordinator step of the results round. */
  readonly step: number;
  readonly lr: number;
  /** Every batch of the results round, by start. */
  readonly batches: readonly BatchId[];
}
/** Report the previous round's trainers that a quorum of its witnesses did not see. */
export interface SendHealthChecksIntent {
  readonly kind: "SendHealthChecks";
  readonly epoch: number;
  readonly height: number;
  readonly checks: readonly HealthCheck[];
}
/** Train `batch` of round `height`, then publish the result. */
export interface TrainIntent {
  readonly kind: "Train";
  readonly epoch: number;
  readonly height: number;
  readonly step: number;
  readonly batch: BatchId;
  readonly proof: CommitteeProof;
  readonly lr: number;
  /** Learning rate of the step before (the lookahead's). */
  readonly prevLr: number;
  /** Zero the DisTrO state first (round 0 of a cold-start epoch, after a pause). */
  readonly resetOptimizer: boolean;
}
/**
 * Apply the decoupled weight decay trainers apply in DisTrO's generate, for a client with no
 * batch in a training round (it would otherwise drift from them).
 */
export interface DecayWeightsIntent {
  readonly kind: "DecayWeights";
  readonly epoch: number;
  readonly height: number;
  readonly lr: number;
}
/** Gossip `Finished` for round `height` (trained, previous round's payloads settled). */
export interface AnnounceFinishedIntent {
  readonly kind: "AnnounceFinished";
  readonly epoch: number;
  readonly height: number;
  readonly step: number;
  readonly proof: CommitteeProof;
}
/** Send this round's witness report (over round `height − 1`'s results) to the coordinator. */
export interface SendWitnessIntent {
  readonly kind: "SendWitness";
  readonly epoch: number;
  readonly height: number;
  readonly step: number;
  readonly proof: WitnessProof;
}
/**
 * As a witness of the epoch's last round, report the digest of the parameters the next epoch
 * starts from (after the Cooldown apply and the snapshot that labels them).
 */
export interface SendCooldownWitnessIntent {
  readonly kind: "SendCooldownWitness";
  readonly epoch: number;
  /** `progress.step` at Cooldown: the next epoch's first step. */
  readonly step: number;
  readonly proof: WitnessProof;
}
/**
 * Serve the epoch's final parameters to joiners of the next epoch (P2P model sharing), first
 * rounding them to bf16 when the run's `snapshotDtype` says so (every client the same way).
 */
export interface ShareModelIntent {
  readonly kind: "ShareModel";
  readonly epoch: number;
  /** `progress.step` at Cooldown: the step whose parameters these are (the next epoch's first). */
  readonly step: number;
  /** The run's `model.snapshotDtype`: `bf16` rounds the parameters before the snapshot. */
  readonly snapshotDtype: SnapshotDtype;
}
/**
 * In a run that verifies results, keep a copy of θ as round `height` trains on it (after the
 * round's apply, before its training or weight decay): a verifier replays the round's sampled
 * results from it later.
 */
export interface KeepParamsIntent {
  readonly kind: "KeepParams";
  readonly epoch: number;
  readonly height: number;
}
/**
 * As a seated verifier, check trainer `trainer`'s (an epoch index) result of round `height`:
 * fetch its states, replay its step, judge, report (docs/protocol.md, "Verification").
 */
export interface VerifyIntent {
  readonly kind: "Verify";
  readonly epoch: number;
  readonly height: number;
  readonly trainer: number;
  readonly stage: VerificationStage;
}
/**
 * Write the model to the checkpoint folder (Cooldown, after the last apply); as an elected
 * checkpointer of a client that uploads (`--hub-repo`), upload it to the Hub then.
 */
export interface CheckpointIntent {
  readonly kind: "Checkpoint";
  readonly epoch: number;
  /** `progress.step` at Cooldown: the number of steps the weights went through. */
  readonly step: number;
  /**
   * The Cooldown's elected checkpointers (indices in its client list), when this client uploads
   * (`hubUpload`) and the checkpoint is written in Cooldown; empty otherwise.
   */
  readonly checkpointers: readonly number[];
  /** Whether this client is one of them: it uploads the folder once written. */
  readonly upload: boolean;
}

/** Everything the state machine can ask for. */
export type Intent =
  | JoinIntent
  | LoadModelIntent
  | AnnounceWarmupFinishedIntent
  | SendWarmupWitnessIntent
  | ApplyIntent
  | SendHealthChecksIntent
  | TrainIntent
  | DecayWeightsIntent
  | AnnounceFinishedIntent
  | SendWitnessIntent
  | ShareModelIntent
  | SendCooldownWitnessIntent
  | CheckpointIntent
  | KeepParamsIntent
  | VerifyIntent;

/** The once-only key of an intent: kind, epoch and the round it is about. */
export function intentKey(intent: Intent): string {
  switch (intent.kind) {
    case "Join":
    case "LoadModel":
    case "AnnounceWarmupFinished":
    case "SendWarmupWitness":
    case "ShareModel":
    case "SendCooldownWitness":
    case "Checkpoint":
      return `${intent.kind}:${intent.epoch}`;
    case "Apply":
      return applyKey(intent.epoch, intent.plan.resultsRound.height);
    case "SendHealthChecks":
    case "Train":
    case "DecayWeights":
    case "AnnounceFinished":
    case "SendWitness":
    case "KeepParams":
      return roundKey(intent.kind, intent.epoch, intent.height);
    case "Verify":
      return verifyKey(intent.epoch, intent.height, intent.trainer, intent.stage);
    default: {
      const unreachable: never = intent;
      throw new Error(`unknown intent ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Key of a per-round intent (`Train`, `AnnounceFinished`, …) of round `height` in `epoch`. */
export function roundKey(
  kind:
    | "SendHealthChecks"
    | "Train"
    | "DecayWeights"
    | "AnnounceFinished"
    | "SendWitness"
    | "KeepParams",
  epoch: number,
  height: number,
): string {
  return `${kind}:${epoch}:${height}`;
}

/** Key of the verification of trainer `trainer`'s result of round `height`, in one stage. */
export function verifyKey(
  epoch: number,
  height: number,
  trainer: number,
  stage: VerificationStage,
): string {
  return `Verify:${epoch}:${height}:${trainer}:${stage}`;
}

/** Key of the apply of round `resultsHeight`'s results in `epoch`. */
export function applyKey(epoch: number, resultsHeight: number): string {
  return `Apply:${epoch}:${resultsHeight}`;
}

/** What the driver has started and finished, so every intent runs once. */
export class ClientProgress {
  readonly #started = new Set<string>();
  readonly #done = new Set<string>();
  /** Whether a model is loaded (kept across epochs). */
  modelReady = false;

  /** Whether an intent with this key was dispatched. */
  started(key: string): boolean {
    return this.#started.has(key);
  }
  /** Whether an intent with this key completed. */
  done(key: string): boolean {
    return this.#done.has(key);
  }
  /** Marks `key` dispatched. */
  markStarted(key: string): void {
    this.#started.add(key);
  }
  /** Marks `key` completed (and dispatched). */
  markDone(key: string): void {
    this.#started.add(key);
    this.#done.add(key);
  }
  /** Forgets one intent, so it is planned again (a failed model load is retried). */
  forget(key: string): void {
    this.#started.delete(key);
    this.#done.delete(key);
  }

  /**
   * Forgets the records of `epoch` and later: the run went back to an epoch it had already
   * numbered (a coordinator restarted from a saved state, or a Warmup that failed and began
   * again), so that epoch's intents are due afresh.
   */
  forgetFrom(epoch: number): void {
    for (const set of [this.#started, this.#done]) {
      for (const key of set) {
        const e = Number(key.split(":")[1]);
        if (e >= epoch) set.delete(key);
      }
    }
  }

  /** Forgets the records of epochs before `epoch` (keys embed their epoch). */
  forgetBefore(epoch: number): void {
    for (const set of [this.#started, this.#done]) {
      for (const key of set) {
        const e = Number(key.split(":")[1]);
        if (e < epoch) set.delete(key);
      }
    }
  }
}

/**
 * What the p2p exchange heard that the plans depend on; the exchange's RoundResults
 * (client/results/) answers it.
 */
export interface ExchangeFacts {
  /** Whether each of `peers` (p2p keys) announced it finished warmup this epoch. */
  warmupFinishedBy(peers: readonly PublicKeyBytes[]): boolean;
  /**
   * Whether the next round waited enough for round `height`'s downloads: all settled, or a
   * majority of its trainers' results did and the rest had their time
   * (client/results/straggler_wait.ts).
   */
  downloadsWaitOver(height: number): boolean;
  /**
   * Whether a witness of round `height` waited enough for `peers` (p2p keys) to announce
   * Finished: all of them did, or a majority did and the rest had their time
   * (client/results/straggler_wait.ts).
   */
  witnessWaitOver(height: number, peers: readonly PublicKeyBytes[]): boolean;
}

/** Everything a plan is a function of. */
export interface PlanInput {
  readonly state: CoordinatorState;
  /** This client's signer key. */
  readonly signer: PublicKeyBytes;
  readonly progress: ClientProgress;
  readonly facts: ExchangeFacts;
  /** Whether checkpoints are written (a checkpoint folder was given). */
  readonly checkpoints: boolean;
  /**
   * Whether this client uploads the checkpoints it writes when elected (`--hub-repo`;
   * coordinator/core/checkpointer_selection.ts). Default false.
   */
  readonly hubUpload?: boolean;
  /**
   * Whether this client's parameters are known not to be the run's (client/model_ledger.ts):
   * it then contributes nothing (no training, witnessing, health checks or sharing) until the
   * next epoch's load resyncs it.
   */
  readonly diverged: boolean;
  /**
   * The last epoch whose client list held this client (null: none yet). A member cut off
   * across an epoch's start never sees its WaitingForMembers, where it would join again.
   */
  readonly lastMemberEpoch?: number | null;
}
