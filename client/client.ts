/**
 * The training client's driver: follows the coordinator's state stream, asks the state
 * machine (client/state/machine.ts) what is due, and carries the intents out with its parts
 * (backend, p2p exchange, GPU trainer, data provider, logger). All decisions are in the
 * planners; this file only performs them and records progress.
 *
 * GPU work (load, apply, train, checkpoint) runs on one serial queue, so an apply always
 * completes before the training that the planner made wait for it; network work (gossip,
 * coordinator calls) runs at once. Every intent is marked started when dispatched and done
 * when it settles, whatever the outcome (failures are logged, never retried blindly), and
 * the machine is asked again after every state update and every completed intent.
 *
 * @module
 */
import { movedOn } from "./outdated.ts";
import type { CoordinatorBackend } from "./backend/backend.ts";
import type { Exchange } from "./exchange.ts";
import type { ClientLogger } from "./log.ts";
import {
  type HubDownloadTarget,
  loadRunModel,
  ModelUnavailableError,
  type RunModel,
  type ServedModel,
  servedModel,
  serveModelYielding,
  type SnapshotPhase,
} from "./model_sharing/mod.ts";
import { type Divergence, ModelLedger } from "./model_ledger.ts";
import { checkDataVocabulary, DataVocabularyError } from "./data_check.ts";
import { epochIndexOf, isInEpoch, stepLearningRate, stepOfHeight } from "./round_view.ts";
import { MissedRounds } from "./missed_rounds.ts";
import { stepBreakdown, type StepMoments } from "./step_breakdown.ts";
import { ClientProgress, type Intent, intentKey } from "./state/intent.ts";
import { planActions } from "./state/machine.ts";
import { healthyPeers } from "./state/common.ts";
import { NetworkTrainer } from "./trainer.ts";
import type { Attack } from "./attacks.ts";
import { gradientFactor, otherBatch } from "./attacks.ts";
import { VerificationDuty } from "./verification_duty.ts";
import { isVerifying } from "./state/verify.ts";
import {
  CoordinatorError,
  type CoordinatorState,
  currentRound,
  isTrainingRound,
  NO_DIGEST,
  recordedDigest,
  roundByHeight,
} from "../coordinator/core/mod.ts";
import { type DataProvider, providerForLocation } from "../data/mod.ts";
import {
  countParameters,
  formatMemoryPlan,
  MemoryPlanError,
  runtimeMemoryLimits,
  throttledProgress,
  type UploadProgress,
} from "../model/mod.ts";
import { distroConfig } from "../optimizer/mod.ts";
import { type BatchId, equalBytes, hexToBytes, toHex, toMillis } from "../common/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";
import type { Identity } from "../net/mod.ts";
import type { BackgroundEvals } from "./background_evals.ts";
import { CheckpointDuty, type HubTarget, type RetentionArgs } from "./checkpoints/mod.ts";

/** What a {@link TrainingClient} is built from. */
export interface TrainingClientOptions {
  readonly backend: CoordinatorBackend;
  readonly exchange: Exchange;
  /**
   * The client's p2p key pair (libp2p identity, data-server auth). Who the client is in the
   * coordinator's lists comes from `backend.identity` (on Solana the signer is the wallet).
   */
  readonly identity: Identity;
  readonly logger: ClientLogger;
  /** A local HF folder overriding the run's checkpoint. */
  readonly modelOverride?: string | null;
  /** Sequences per forward/backward (default 1). */
  readonly microBatch?: number;
  /** Recompute activations in the backward (`--recompute`, default false). */
  readonly recompute?: boolean;
  /** Checkpoints go to `{checkpointDir}/{run_id}-step{N}`; none when null. */
  readonly checkpointDir?: string | null;
  /**
   * `--hub-repo` (with its endpoint and `HF_TOKEN`): as an elected checkpointer, upload each
   * Cooldown checkpoint there and report it (client/checkpoints/); null: no uploads.
   */
  readonly hub?: HubTarget | null;
  /** `--delete-old-steps` / `--keep-steps` (default: keep every checkpoint). */
  readonly retention?: RetentionArgs;
  /** Where a Hub checkpoint that is not on disk is downloaded from and to; null: never. */
  readonly hubDownload?: HubDownloadTarget | null;
  /** Folder relative model and data paths resolve against (default: the working directory). */
  readonly baseDir?: string;
  /** The GPU runtime (default: created at the first model load). */
  readonly rt?: GpuRuntime;
  /** Milliseconds, monotonic (default `performance.now`): witness metadata rates. */
  readonly clock?: () => number;
  /** Milliseconds since the Unix epoch (default `Date.now`): how late states arrive. */
  readonly wallClock?: () => number;
  /** Test hooks that break this client on purpose (none by default). */
  readonly faults?: ClientFaults;
  /** Evals scored while the GPU has no training work (`--eval-tasks`); none by default. */
  readonly evals?: BackgroundEvals | null;
}

/** Faults a test can make a client commit, to watch the run catch them. */
export interface ClientFaults {
  /** After applying the results of this step, change one parameter (a "bit flip"). */
  readonly flipWeightAfterStep?: number;
  /** Share the f32 masters as they are even when the run says bf16 (a client that forgot). */
  readonly skipSnapshotRounding?: boolean;
  /** Never see a Cooldown state, as a client whose backlog or slow follower skipped it. */
  readonly missCooldown?: boolean;
  /** Commit this attack (client/attacks.ts), so verification can be watched catching it. */
  readonly attack?: Attack;
}

/** Milliseconds before a failed model load is tried again. */
export const LOAD_RETRY_MS = 5000;
/**
 * How long past its end a state read from the coordinator may be before this client says it
 * reads states late (the `lagging` notice): well above clock skew and a busy machine's pauses.
 */
export const LAG_NOTICE_MS = 5000;

/** Why `run()` returned. */
export type StopReason = "Finished" | "Aborted" | "BackendClosed";

/** Where a client's memory-plan fixes are set. */
const CLIENT_MEMORY_FLAGS = {
  microBatch: "--micro-batch-size",
  seqLen: "the run's max_seq_len",
  recompute: "--recompute",
};

/** One client taking part in one run. */
export class TrainingClient {
  readonly #o: TrainingClientOptions;
  readonly #progress = new ClientProgress();
  /** The client's own parameter digests, checked against the run's records. */
  readonly #ledger = new ModelLedger();
  #state: CoordinatorState | null = null;
  /** The last epoch whose client list held this client (the planner's `lastMemberEpoch`). */
  #lastMemberEpoch: number | null = null;
  /** The epoch this client last saw in progress: its number and start time. */
  #epochSeen: { epoch: number; started: number } | null = null;
  #rt: GpuRuntime | null;
  #ownsRt = false;
  #trainer: NetworkTrainer | null = null;
  /** Verification's duties, in a run that verifies (made with the trainer). */
  #duty: VerificationDuty | null = null;
  /**
   * The key each notice was last said for (`ejected`: the ejection record; `dropped`, `lagging`:
   * the epoch and its start), so each is said once per key.
   */
  readonly #noticeKeys = new Map<"ejected" | "dropped" | "lagging", string>();
  #data: DataProvider | null = null;
  /** The batch this client trained last (an `other-data` attacker trains on it again). */
  #lastBatch: BatchId | null = null;
  /** The model snapshot this client serves to joiners (P2P model sharing). */
  #served: ServedModel | null = null;
  /** Uploads, reports and deletes the checkpoints written (with a checkpoint folder). */
  #checkpoints: CheckpointDuty | null = null;
  #gpu: Promise<void> = Promise.resolve();
  /** GPU intents queued or running: evals run only when there are none. */
  #gpuQueued = 0;
  #evalRunning = false;
  #inFlight = new Set<Promise<void>>();
  #last = { loss: NaN, tokensPerSec: 0, trainMs: 0 };
  /** When the current round started and the bytes received by then. */
  #round = { height: -1, startMs: 0, bytes: 0 };
  /**
   * The moments noted for steps this client trained and has not applied yet (a few at most:
   * older entries are dropped at each apply), with their tokens/s, for the telemetry notice.
   */
  readonly #trained = new Map<
    number,
    {
      moments: Omit<StepMoments, "applyQueued" | "applyStart" | "applyEnd">;
      tokensPerSec: number;
      batch: { start: number; end: number };
    }
  >();
  /** Rounds in a row whose result we trained but the run did not apply (too slow?). */
  readonly #missedRounds = new MissedRounds();
  /** When each step's apply was dispatched (its results due), by step. */
  readonly #applyQueued = new Map<number, number>();
  #lastLogged = "";
  #planning = false;
  #replan = false;
  #signal: AbortSignal | undefined;
  readonly #retries = new Set<ReturnType<typeof setTimeout>>();
  /** Aborted, with the error, when the client cannot go on (its model cannot read the data). */
  readonly #failed = new AbortController();

  constructor(options: TrainingClientOptions) {
    this.#o = options;
    this.#rt = options.rt ?? null;
  }

  /**
   * Joins the run and follows it until it is Finished, the backend closes or `signal`
   * aborts. Waits for work in flight before returning; frees the model and data provider.
   * Throws {@linkcode DataVocabularyError} when the run's model cannot read its data.
   */
  async run(options: { signal?: AbortSignal } = {}): Promise<StopReason> {
    const signal = options.signal === undefined
      ? this.#failed.signal
      : AbortSignal.any([options.signal, this.#failed.signal]);
    this.#signal = signal;
    const checkpointDir = this.#o.checkpointDir ?? null;
    if (checkpointDir !== null) {
      this.#checkpoints = new CheckpointDuty({
        checkpointDir,
        hub: this.#o.hub ?? null,
        retention: this.#o.retention ?? { deleteOldSteps: false, keepSteps: 0 },
        backend: this.#o.backend,
        logger: this.#o.logger,
        signal,
      });
    }
    await this.#o.backend.join({ signal });
    let reason: StopReason | "Failed" = "BackendClosed";
    try {
      for await (const state of this.#o.backend.states({ signal })) {
        if (this.#o.faults?.missCooldown && state.runState === "Cooldown") continue;
        this.#state = state;
        this.#logState(state);
        this.#checkpoints?.noteState(state);
        this.#noteMembership(state);
        this.#followEpoch(state);
        this.#checkDigests(state);
        await this.#o.exchange.update(state);
        this.#duty?.retain(state);
        this.#noteEjection(state);
        this.#noteDropped(state);
        this.#noteLag(state);
        this.#plan();
        this.#maybeEval();
        if (state.runState === "Finished") {
          reason = "Finished";
          break;
        }
      }
      if (signal?.aborted) reason = "Aborted";
    } catch (e) {
      if (!signal?.aborted) throw e;
      reason = "Aborted";
    } finally {
      if (this.#failed.signal.aborted) reason = "Failed";
      for (const timer of this.#retries) clearTimeout(timer);
      await Promise.allSettled([...this.#inFlight]);
      await this.#gpu.catch(() => {});
      await this.#checkpoints?.settle();
      if (reason === "Aborted") await this.#saveOnExit();
      this.#duty?.[Symbol.dispose]();
      this.#o.evals?.[Symbol.dispose]();
      this.#trainer?.[Symbol.dispose]();
      await this.#data?.close();
      if (this.#ownsRt) this.#rt?.[Symbol.dispose]();
      this.#o.logger.log("end", { reason });
    }
    if (reason === "Failed") throw this.#failed.signal.reason;
    return reason;
  }

  /**
   * SIGINT/SIGTERM: the parameters this client holds, saved atomically (NetworkTrainer.save)
   * before it leaves, where the client writes its Cooldown checkpoints:
   * `{checkpointDir}/{run_id}-step{N}` when θ is exactly the parameters of step N (a later
   * Warmup loads it from there, once its digest matches the run's), else
   * `{checkpointDir}/{run_id}-interrupted`. Nothing is saved without a checkpoint folder, a
   * model, or with parameters known to differ from the run's. Never throws: leaving must work.
   */
  async #saveOnExit(): Promise<void> {
    const { logger } = this.#o;
    const root = this.#o.checkpointDir ?? null;
    const step = this.#ledger.currentStep;
    const skip = (note: string) => logger.log("saved_on_exit", { dir: null, step, note });
    if (this.#trainer === null) return skip("no model loaded yet");
    if (root === null) return skip("no --checkpoint-dir");
    if (this.#ledger.divergence !== null) {
      return skip("its parameters differ from the run's (diverged)");
    }
    const runId = this.#state?.runId ?? "run";
    const dir = step === null ? `${root}/${runId}-interrupted` : `${root}/${runId}-step${step}`;
    try {
      await this.#trainer.save(dir, { onProgress: this.#saveProgress(step, dir) });
      logger.log("saved_on_exit", {
        dir,
        step,
        note: step === null
          ? "between steps: the next step's weight decay is applied, its results are not"
          : `the parameters of step ${step}`,
      });
    } catch (e) {
      logger.log("error", { what: "save on exit", error: (e as Error).message });
    }
  }

  /** Something the state machine depends on changed (the exchange calls this). */
  poke(): void {
    queueMicrotask(() => this.#plan());
  }

  /** Notes the epoch when `state` lists this client among the epoch's clients. */
  #noteMembership(state: CoordinatorState): void {
    if (isInEpoch(state) && epochIndexOf(state, this.#o.backend.identity.signer) >= 0) {
      this.#lastMemberEpoch = state.progress.epoch;
    }
  }

  /** Asks the state machine what is due and dispatches it (re-entrancy safe). */
  #plan(): void {
    if (this.#planning) {
      this.#replan = true;
      return;
    }
    this.#planning = true;
    try {
      do {
        this.#replan = false;
        const state = this.#state;
        if (state === null || this.#signal?.aborted) return;
        const intents = planActions({
          state,
          signer: this.#o.backend.identity.signer,
          progress: this.#progress,
          facts: this.#o.exchange.results,
          checkpoints: (this.#o.checkpointDir ?? null) !== null,
          hubUpload: this.#checkpoints?.uploads ?? false,
          diverged: this.#ledger.divergence !== null,
          lastMemberEpoch: this.#lastMemberEpoch,
        });
        for (const intent of intents) this.#dispatch(intent);
      } while (this.#replan);
    } finally {
      this.#planning = false;
    }
  }

  #dispatch(intent: Intent): void {
    const key = intentKey(intent);
    if (intent.kind === "Apply") {
      this.#applyQueued.set(intent.step, this.#now());
      for (const old of this.#applyQueued.keys()) {
        if (this.#applyQueued.size > 4) this.#applyQueued.delete(old);
      }
    }
    this.#progress.markStarted(key);
    const planned = this.#state;
    const run = async () => {
      try {
        await this.#perform(intent);
      } catch (e) {
        if (e instanceof CoordinatorError && movedOn(planned, this.#state)) {
          // The coordinator had moved on from the state this was planned from: expected.
          this.#o.logger.log("outdated", { what: key, error: e.message });
          return;
        }
        if (intent.kind === "LoadModel" && e instanceof ModelUnavailableError) {
          // Said already as `waiting_for_model`, a warning: no source has the run's model yet
          // (peers still making the epoch's snapshot, a repo an operator has not filled), and
          // the retry takes it once one has. Not an error of this client.
          this.#retryLater(key);
          return;
        }
        this.#o.logger.log("error", { what: key, error: (e as Error).message });
        // A model that cannot read the data, or cannot fit this machine, fails the same way
        // every time: stop the client.
        if (e instanceof DataVocabularyError || e instanceof MemoryPlanError) {
          this.#failed.abort(e);
        } else if (intent.kind === "LoadModel") this.#retryLater(key);
      } finally {
        this.#progress.markDone(key);
        queueMicrotask(() => this.#plan());
      }
    };
    const gpuWork = intent.kind === "LoadModel" || intent.kind === "Apply" ||
      intent.kind === "KeepParams" ||
      intent.kind === "Train" || intent.kind === "DecayWeights" || intent.kind === "ShareModel" ||
      intent.kind === "Checkpoint" || intent.kind === "SendCooldownWitness";
    let task: Promise<void>;
    if (gpuWork) {
      this.#gpuQueued++;
      task = this.#gpu = this.#gpu.then(run).finally(() => {
        this.#gpuQueued--;
        this.#maybeEval();
      });
    } else task = run();
    this.#inFlight.add(task);
    task.finally(() => this.#inFlight.delete(task));
  }

  /**
   * Queues one eval chunk when the GPU is idle: no training work queued, and this round's own
   * training done (or the round past training). Another follows when it ends, until work comes.
   */
  #maybeEval(): void {
    const evals = this.#o.evals;
    const state = this.#state;
    const trainer = this.#trainer;
    if (!evals?.enabled || this.#evalRunning || this.#gpuQueued > 0 || trainer === null) return;
    if (state === null || this.#signal?.aborted || this.#ledger.divergence !== null) return;
    // Parameters between two steps (a decay applied, results not yet) score no step.
    const step = this.#ledger.currentStep;
    if (step === null) return;
    const idle = state.runState === "RoundWitness" || state.runState === "Cooldown" ||
      (state.runState === "RoundTrain" && this.#trained.has(state.progress.step));
    if (!idle) return;
    this.#evalRunning = true;
    const task = this.#gpu = this.#gpu.then(() =>
      evals.runChunk({
        rt: trainer.rt,
        config: trainer.config,
        layout: trainer.layout,
        step,
        readParams: () => trainer.model.readParams(),
      })
    ).catch((e) => {
      this.#o.logger.log("error", { what: "eval", error: (e as Error).message });
    }).finally(() => {
      this.#evalRunning = false;
      // Let the planner's GPU work go first; the next chunk waits for a free moment.
      setTimeout(() => this.#maybeEval(), 0);
    });
    this.#inFlight.add(task);
    task.finally(() => this.#inFlight.delete(task));
  }

  /** Plans `key` again after {@link LOAD_RETRY_MS} (a model that could not be loaded yet). */
  #retryLater(key: string): void {
    const timer = setTimeout(() => {
      this.#retries.delete(timer);
      this.#progress.forget(key);
      this.#plan();
    }, LOAD_RETRY_MS);
    this.#retries.add(timer);
  }

  async #perform(intent: Intent): Promise<void> {
    const { backend, exchange, logger } = this.#o;
    const signal = this.#signal;
    switch (intent.kind) {
      case "Join":
        await backend.join({ signal });
        return;
      case "LoadModel":
        await this.#load();
        return;
      case "AnnounceWarmupFinished":
        await exchange.announceWarmupFinished();
        return;
      case "SendWarmupWitness": {
        const step = this.#state?.progress.step ?? 0;
        await backend.sendWarmupWitness(
          exchange.results.warmupReport(intent.proof),
          this.#ownDigest(step),
          { signal },
        );
        logger.log("warmup_witness", { epoch: intent.epoch, index: intent.proof.index });
        return;
      }
      case "Apply":
        await this.#apply(intent);
        return;
      case "SendHealthChecks":
        await backend.sendHealthCheck(intent.checks, { signal });
        logger.log("health_check_sent", {
          step: this.#state === null ? 0 : this.#state.progress.step,
          clients: intent.checks.map((c) => toHex(c.id.signer)),
        });
        return;
      case "Train":
        await this.#train(intent);
        return;
      case "DecayWeights":
        await this.#need().decayWeights(intent.lr);
        this.#ledger.moved();
        return;
      case "AnnounceFinished":
        await exchange.results.announceFinished(intent.height, intent.step, intent.proof);
        return;
      case "SendWitness":
        await this.#witness(intent);
        return;
      case "ShareModel":
        await this.#shareModel(intent);
        return;
      case "SendCooldownWitness":
        await backend.sendCooldownWitness(intent.proof, this.#ownDigest(intent.step), { signal });
        return;
      case "KeepParams":
        this.#needDuty().keep(intent.height);
        return;
      case "Verify": {
        const state = this.#state;
        if (state !== null) await this.#needDuty().verify(state, intent);
        return;
      }
      case "Checkpoint": {
        const trainer = this.#need();
        const runId = this.#state?.runId ?? "run";
        const dir = `${this.#o.checkpointDir}/${runId}-step${intent.step}`;
        await trainer.save(dir, { onProgress: this.#saveProgress(intent.step, dir) });
        logger.log("checkpoint", { step: intent.step, dir });
        // The digest of what was written: an upload is reported only for the run's parameters.
        const digest = intent.upload ? await trainer.paramsHash() : "";
        this.#checkpoints?.written({
          runId,
          epoch: intent.epoch,
          step: intent.step,
          dir,
          digest,
          checkpointers: intent.checkpointers,
          upload: intent.upload,
        });
        return;
      }
      default: {
        const unreachable: never = intent;
        throw new Error(`unknown intent ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /**
   * Serves the epoch's final parameters (the next epoch's first step's, labelled here). With the
   * run's snapshot dtype bf16, every client first rounds its f32 masters to bf16 in place, at this
   * same point, so the digest, the snapshot (now bf16 blobs, half the bytes) and the checkpoint
   * are of the rounded parameters, and clients, servers and joiners stay bit-identical.
   */
  async #shareModel(intent: Extract<Intent, { kind: "ShareModel" }>): Promise<void> {
    const trainer = this.#need();
    const start = this.#now();
    const round = intent.snapshotDtype === "bf16" && !this.#o.faults?.skipSnapshotRounding;
    if (round) await trainer.roundParamsToBf16();
    const progress = (phase: SnapshotPhase) =>
      throttledProgress(
        (done, total, rate) =>
          this.#o.logger.log("model_snapshot_progress", {
            step: intent.step,
            phase,
            done_bytes: done,
            total_bytes: total,
            mb_per_sec: rate,
          }),
        () => performance.now(),
      );
    const weights = await trainer.readParams({ onProgress: progress("read") });
    // The GPU's digest of the same parameters (the same function of the same bytes as the host's,
    // as #install checks), not seconds of host hashing of a 1B model's 4.9 GB.
    const digest = await trainer.paramsHash();
    // Encoding and hashing still take seconds each for a 1B model: done giving the event loop a
    // turn every few ms, so libp2p, the coordinator connection and the TUI keep running.
    this.#served = await serveModelYielding(this.#o.exchange.payloads, {
      config: trainer.config,
      layout: trainer.layout,
      weights,
    }, {
      step: intent.step,
      digest,
      replaces: this.#served,
      // Each phase throttled apart: a 1B model's take seconds each, at every Cooldown.
      progress,
    });
    this.#ledger.note(intent.step, this.#served.digest);
    this.#o.logger.log("model_snapshot", {
      epoch: intent.epoch,
      step: intent.step,
      snapshot_dtype: intent.snapshotDtype,
      rounded: round,
      params_hash: this.#served.digest,
      bytes: this.#served.bytes,
      ms: this.#now() - start,
    });
    this.#checkDigests(this.#state);
  }

  /**
   * `checkpoint_progress` for a save of the parameters of `step` to `dir`, throttled like the
   * upload: a 1B model's 4.9 GB take seconds to minutes to read back and write.
   */
  #saveProgress(step: number | null, dir: string): UploadProgress {
    return throttledProgress(
      (done, total, rate) =>
        this.#o.logger.log("checkpoint_progress", {
          step,
          dir,
          done_bytes: done,
          total_bytes: total,
          mb_per_sec: rate,
        }),
      () => performance.now(),
    );
  }

  #now(): number {
    return (this.#o.clock ?? (() => performance.now()))();
  }

  #need(): NetworkTrainer {
    if (this.#trainer === null) throw new Error("the model is not loaded");
    return this.#trainer;
  }

  #needDuty(): VerificationDuty {
    if (this.#duty === null) throw new Error("this run does not verify results, or no model");
    return this.#duty;
  }

  /** Runs `work` on the serial GPU queue, after everything queued before it. */
  #onGpu<T>(work: () => Promise<T>): Promise<T> {
    const task = this.#gpu.then(work);
    this.#gpu = task.then(() => {}, () => {});
    return task;
  }

  /**
   * Loads, keeps or resyncs the model for the current epoch: the parameters of its first step
   * (`epochState.startStep`), accepted only if they are the run's (the recorded digest, when
   * there is one). In order: the model this client holds, if it is exactly those parameters;
   * its own served snapshot of them (a coordinator that restarted from its last saved epoch);
   * any other source model_sharing `loadRunModel` knows. Throws ModelUnavailableError (logged,
   * retried) when nothing has them.
   */
  async #load(): Promise<void> {
    const state = this.#state;
    if (state === null) return;
    const step = state.epochState.startStep;
    const record = recordedDigest(state.paramsDigests, step);
    const expected = record === null ? null : toHex(record);
    const wasDiverged = this.#ledger.divergence;
    if (this.#trainer !== null && wasDiverged === null && this.#ledger.currentStep === step) {
      const own = this.#ledger.digest(step)!;
      if (expected === null || own === expected) {
        this.#progress.modelReady = true;
        return;
      }
      this.#diverge({
        step,
        digest: own,
        consensus: expected,
        reason: "the model it kept differs from the one the run recorded",
      });
    }
    // The model held is not this epoch's: nothing may announce, witness or train with it
    // until a load succeeds (a failed one is retried).
    this.#progress.modelReady = false;
    let model: RunModel;
    const snapshot = this.#served;
    if (
      snapshot !== null && snapshot.step === step &&
      (expected ?? snapshot.digest) === snapshot.digest
    ) {
      const shared = servedModel(this.#o.exchange.payloads, snapshot);
      model = {
        source: "loaded",
        origin: `snapshot of step ${step}`,
        ...shared,
        digest: snapshot.digest,
        fetched: null,
        served: snapshot,
      };
    } else {
      const baseDir = this.#o.baseDir ?? Deno.cwd();
      const dir = this.#o.checkpointDir ?? null;
      try {
        model = await loadRunModel({
          checkpoint: state.model.checkpoint,
          runId: state.runId,
          step,
          recordedDigest: expected,
          runDigests: state.paramsDigests.map((r) => toHex(r.digest)),
          payloads: this.#o.exchange.payloads,
          providers: state.epochState.clients.map((c) => c.id.p2pIdentity)
            .filter((k) => !equalBytes(k, this.#o.backend.identity.p2pIdentity)),
          override: this.#o.modelOverride,
          localCheckpoints: dir === null ? [] : [`${dir}/${state.runId}-step${step}`],
          hub: { baseDir },
          hubDownload: this.#o.hubDownload ?? null,
          // Each phase throttled apart: a 1B model's fetch, seeded init and digest each take
          // seconds to minutes, and must not look like a hang.
          progress: (phase) =>
            throttledProgress(
              (done, total, rate) =>
                this.#o.logger.log("model_load", {
                  phase,
                  done_bytes: done,
                  total_bytes: total,
                  mb_per_sec: rate,
                }),
              () => performance.now(),
            ),
          signal: this.#signal,
        });
      } catch (e) {
        if (e instanceof ModelUnavailableError) {
          this.#o.logger.log("waiting_for_model", {
            step,
            consensus: expected,
            reason: e.message,
            retry_ms: LOAD_RETRY_MS,
          });
        }
        throw e;
      }
      if (model.served !== null) this.#served = model.served;
    }
    await this.#install(state, model);
    this.#ledger.reset();
    this.#ledger.note(step, model.digest);
    if (wasDiverged !== null) {
      this.#o.logger.log("resynced", {
        step,
        params_hash: model.digest,
        source: model.origin,
      });
    }
    await this.#catchUpDecays(state);
    this.#progress.modelReady = true;
  }

  /** Throttled `model_upload` lines for the install's weights upload. */
  #uploadProgress() {
    return throttledProgress(
      (done, total, rate) =>
        this.#o.logger.log("model_upload", {
          done_bytes: done,
          total_bytes: total,
          mb_per_sec: rate,
        }),
      () => performance.now(),
    );
  }

  /**
   * Puts `model` on the GPU (replacing any model held), opens the data provider once, builds
   * every pipeline with a dry step (NetworkTrainer.warmUp) and says what a step costs here.
   */
  async #install(state: CoordinatorState, model: RunModel): Promise<void> {
    const baseDir = this.#o.baseDir ?? Deno.cwd();
    const { config } = state;
    if (this.#data === null) {
      // The data is opened and checked against the model before any GPU work: a model that
      // cannot read it stops the client here (DataVocabularyError), with one clear line.
      const data = await providerForLocation(state.model.dataLocation, {
        seqLen: state.model.maxSeqLen,
        secretKey: this.#o.identity.secretKey,
        vocabSize: model.config.vocabSize,
        baseDir,
        signal: this.#signal,
      });
      try {
        await checkDataVocabulary(data, model.config.vocabSize, {
          model: model.origin,
          signal: this.#signal,
        });
      } catch (e) {
        await data.close();
        throw e;
      }
      this.#data = data;
    }
    if (this.#rt === null) {
      this.#rt = await GpuRuntime.create();
      this.#ownsRt = true;
    }
    const fresh = this.#trainer === null;
    this.#duty?.[Symbol.dispose]();
    this.#duty = null;
    this.#trainer?.[Symbol.dispose]();
    this.#trainer = null;
    // The plan first: a model that cannot fit stops the client here, naming what would fit.
    const microBatch = this.#o.microBatch ?? 1;
    const maxBatch = Math.max(config.globalBatchSizeStart, config.globalBatchSizeEnd);
    const memory = formatMemoryPlan(
      {
        config: model.config,
        microBatch,
        seqLen: state.model.maxSeqLen,
        slots: Math.max(1, Math.ceil(maxBatch / microBatch)),
        packedRows: state.model.dataLocation.kind === "Preprocessed",
        optimizer: "distro",
        distro: distroConfig(state.model.optimizer),
        precision: "f32",
        logitsChunkBytes: this.#rt.profile.logitsChunkBytes,
        splitKScratchBytes: this.#rt.profile.splitK.scratchBytes,
        transposeScratch: this.#rt.profile.matmul.strategy === "register",
        recompute: this.#o.recompute ?? false,
      },
      runtimeMemoryLimits(this.#rt),
      { flags: CLIENT_MEMORY_FLAGS },
    );
    this.#o.logger.log("memory_plan", {
      fits: memory.verdict.fits,
      peak_bytes: memory.verdict.peakBytes,
      lines: memory.lines,
    });
    if (memory.refusal !== null) throw new MemoryPlanError(memory.refusal, memory.verdict);
    const trainer = new NetworkTrainer({
      rt: this.#rt,
      config: model.config,
      layout: model.layout,
      seqLen: state.model.maxSeqLen,
      microBatch,
      maxBatch,
      distro: distroConfig(state.model.optimizer),
      recompute: this.#o.recompute ?? false,
      verifying: isVerifying(state),
    });
    this.#trainer = trainer;
    // A chunk at a time, saying how far: a large model's upload takes minutes on some GPUs.
    await trainer.upload(model.weights, {
      signal: this.#signal,
      onProgress: this.#uploadProgress(),
    });
    this.#o.exchange.results.setExpectation(
      trainer.expectation,
      (bytes, expectation) => trainer.decode(bytes, expectation),
    );
    if (isVerifying(state)) {
      this.#duty = new VerificationDuty({
        trainer,
        exchange: this.#o.exchange,
        backend: this.#o.backend,
        logger: this.#o.logger,
        data: this.#data!,
        onGpu: (work) => this.#onGpu(work),
        signer: this.#o.backend.identity.signer,
        attack: this.#o.faults?.attack ?? null,
        latestState: () => this.#state,
        signal: this.#signal,
      });
    }
    if (fresh) {
      const clients = Math.max(1, state.epochState.clients.length);
      const sequences = Math.ceil(config.globalBatchSizeEnd / clients);
      const timing = await trainer.warmUp(sequences, this.#signal, {
        onStage: (stage, n) => this.#o.logger.log("warmup_stage", { stage, sequences: n }),
      });
      this.#o.logger.log("warmup", {
        first_step_ms: timing.firstMs,
        step_ms: timing.stepMs,
        allowed_ms: config.maxRoundTrainTime * 1000,
      });
    }
    const hash = await trainer.paramsHash();
    if (hash !== model.digest) {
      throw new Error(
        `the GPU holds parameters ${hash.slice(0, 16)}…, not the ${model.digest.slice(0, 16)}… ` +
          `loaded from ${model.origin}`,
      );
    }
    this.#o.logger.log("model", {
      folder: model.origin,
      weights: model.source,
      params: countParameters(model.config),
      params_hash: hash,
      params_step: state.epochState.startStep,
    });
  }

  /**
   * A model loaded after the epoch's first rounds trained (a Warmup that ended before the load
   * did) misses those rounds' weight decay, which every other client applied in its training
   * step: apply it now, before any of their results, as a client without a batch would have.
   */
  async #catchUpDecays(state: CoordinatorState): Promise<void> {
    if (state.runState !== "RoundTrain" && state.runState !== "RoundWitness") return;
    const optimizer = state.model.optimizer;
    if (optimizer.kind !== "Distro" || !optimizer.weightDecay) return;
    const trainer = this.#need();
    for (let h = 0; h < currentRound(state).height; h++) {
      const round = roundByHeight(state, h);
      if (round === null || !isTrainingRound(state, round)) continue;
      await trainer.decayWeights(stepLearningRate(state, stepOfHeight(state, h)));
      this.#ledger.moved();
    }
  }

  /** This client's digest of the parameters of `step`, or no vote (all zero). */
  #ownDigest(step: number): Uint8Array {
    const own = this.#ledger.digest(step);
    return own === null ? NO_DIGEST : hexToBytes(own, 32, "parameter digest");
  }

  /**
   * Notices an epoch started again under a number this client already worked in (a
   * coordinator restarted from its saved state, a failed Warmup begun anew): an epoch is
   * its number and start time. That epoch's intents are then due again, and earlier ones
   * of the abandoned attempt must not count as done.
   */
  #followEpoch(state: CoordinatorState): void {
    if (!isInEpoch(state)) return;
    const epoch = state.progress.epoch;
    const started = state.epochState.startTimestamp;
    const seen = this.#epochSeen;
    if (seen !== null && (seen.epoch !== epoch || seen.started !== started)) {
      if (epoch <= seen.epoch) this.#progress.forgetFrom(epoch);
      else this.#progress.forgetBefore(epoch);
    }
    this.#epochSeen = { epoch, started };
  }

  /** Compares the client's digests with the run's records; a difference stops it. */
  #checkDigests(state: CoordinatorState | null): void {
    if (state === null || this.#ledger.divergence !== null) return;
    const found = this.#ledger.check(state.paramsDigests);
    if (found !== null) this.#reportDivergence(found);
  }

  /** Records a divergence (once) and says so; the planners stop every contribution. */
  #diverge(divergence: Divergence): void {
    if (this.#ledger.divergence !== null) return;
    this.#reportDivergence(this.#ledger.diverge(divergence));
  }

  #reportDivergence(d: Divergence): void {
    this.#o.logger.log("diverged", {
      step: d.step,
      params_hash: d.digest,
      consensus: d.consensus,
      reason: d.reason,
    });
    // Step aside at once, so the run does not wait for it until a health check drops it.
    const state = this.#state;
    if (state !== null && isInEpoch(state) && state.runState !== "Warmup") {
      this.#o.backend.withdraw({ signal: this.#signal }).catch((e) => {
        // Not Healthy any more: the coordinator dropped it first (a health check, a cut
        // link), which is what the withdrawal asked for.
        const gone = e instanceof CoordinatorError && e.code === "InvalidWithdraw";
        this.#o.logger.log(gone ? "outdated" : "error", {
          what: "withdraw",
          error: (e as Error).message,
        });
      });
    }
    this.poke();
  }

  async #apply(intent: Extract<Intent, { kind: "Apply" }>): Promise<void> {
    const trainer = this.#need();
    const { exchange, logger } = this.#o;
    // The consensus results, downloaded; lost announcements are pulled before any is missing.
    const { results, untrained, missing, rejected } = await exchange.results.gather(
      intent.plan,
      intent.batches,
    );
    const paramsStep = intent.step + 2;
    if (missing.length > 0) {
      // Applying without them would leave the run's parameters: stop instead.
      const batches = missing.map((b) => `[${b.start}, ${b.end}]`).join(", ");
      this.#diverge({
        step: paramsStep,
        digest: null,
        consensus: null,
        reason: `the results of batch ${batches} of step ${intent.step}, which ` +
          `a quorum of witnesses saw, never reached this client`,
      });
      return;
    }
    const applyStart = this.#now();
    await trainer.apply(results, intent.lr);
    if (this.#o.faults?.flipWeightAfterStep === intent.step) await trainer.flipWeightForTest();
    const hash = await trainer.paramsHash();
    const applyEnd = this.#now();
    const applyMs = applyEnd - applyStart;
    this.#ledger.note(paramsStep, hash);
    this.#noteMissedRound(intent.step, untrained);
    this.#sendTelemetry(intent.step, applyStart, applyEnd);
    logger.log("apply", {
      epoch: intent.epoch,
      step: intent.step,
      applied: results.length,
      untrained_batches: untrained.length,
      untrained: untrained.map((b) => [b.start, b.end]),
      rejected: rejected.map((b) => [b.start, b.end]),
      lr: intent.lr,
      params_hash: hash,
      params_step: paramsStep,
      ms: applyMs,
    });
    this.#checkDigests(this.#state);
  }

  /**
   * Says in one line when this client's own results missed several rounds in a row: it trains,
   * but too late for the run's timing, which goes on without it.
   */
  #noteMissedRound(step: number, untrained: readonly { start: number; end: number }[]): void {
    const mine = this.#trained.get(step)?.batch;
    if (mine === undefined) return;
    const missed = untrained.some((b) => b.start === mine.start && b.end === mine.end);
    const count = this.#missedRounds.note(missed);
    if (count === null) return;
    this.#o.logger.log("too_slow", {
      step,
      missed_rounds: count,
      note: "this client's results reached the witnesses after their rounds closed, so the " +
        "run applied them as untrained: its link or GPU is too slow for the run's round time " +
        "(max_round_train_time); it keeps training, and the run does not wait for it",
    });
  }

  /**
   * Tells the coordinator, after applying `step`, its traffic and where the step's time went
   * (only for a step this client trained). Informational: never awaited, errors ignored.
   */
  #sendTelemetry(step: number, applyStart: number, applyEnd: number): void {
    const trained = this.#trained.get(step);
    const applyQueued = this.#applyQueued.get(step) ?? applyStart;
    for (const old of this.#trained.keys()) if (old <= step) this.#trained.delete(old);
    for (const old of this.#applyQueued.keys()) if (old <= step) this.#applyQueued.delete(old);
    if (trained === undefined) return;
    const traffic = this.#o.exchange.traffic();
    const tokensPerSec = Number.isFinite(trained.tokensPerSec) ? trained.tokensPerSec : 0;
    this.#o.backend.sendTelemetry({
      step,
      bytesSent: traffic.bytesSent,
      bytesReceived: traffic.bytesReceived,
      tokensPerSec: Math.max(0, tokensPerSec),
      breakdownMs: stepBreakdown({ ...trained.moments, applyQueued, applyStart, applyEnd }),
    }, { signal: this.#signal }).catch(() => {/* informational: a lost notice is fine */});
  }

  async #train(intent: Extract<Intent, { kind: "Train" }>): Promise<void> {
    const trainer = this.#need();
    const data = this.#data;
    if (data === null) throw new Error("no data provider");
    if (intent.resetOptimizer) {
      await trainer.resetOptimizer();
      this.#duty?.chain.reset();
    }
    const trainStart = this.#now();
    const roundStart = this.#round.height === intent.height ? this.#round.startMs : trainStart;
    const attack = this.#o.faults?.attack ?? null;
    const trained = await trainer.train({
      step: intent.step,
      batch: intent.batch,
      lr: intent.lr,
      prevLr: intent.prevLr,
      data,
      signal: this.#signal,
      attack: attack === null ? undefined : {
        gradientFactor: gradientFactor(attack),
        dataBatch: attack === "other-data" ? otherBatch(intent.batch, this.#lastBatch) : undefined,
      },
    });
    this.#lastBatch = intent.batch;
    if (trainer.distro.config.weightDecay) this.#ledger.moved(); // θ took the step's decay
    // A verifying run's result names the states before and after the step, served from here.
    const result = this.#duty === null
      ? trained.result
      : await this.#duty.seal(trained.result, intent.height);
    const publishStart = this.#now();
    const bytes = await this.#o.exchange.results.publishResult(
      intent.height,
      intent.proof,
      result,
    );
    const publishEnd = this.#now();
    const publishMs = publishEnd - publishStart;
    const tokensPerSec = trained.tokens / (trained.ms / 1000);
    this.#trained.set(intent.step, {
      moments: { roundStart, trainStart, trainEnd: publishStart, publishEnd },
      tokensPerSec,
      batch: { start: intent.batch.start, end: intent.batch.end },
    });
    // Bounded even if applies stop (a divergence): only the newest few steps matter.
    for (const old of this.#trained.keys()) if (this.#trained.size > 4) this.#trained.delete(old);
    this.#last = { loss: trained.loss, tokensPerSec, trainMs: trained.ms };
    this.#o.logger.log("train", {
      epoch: intent.epoch,
      step: intent.step,
      batch: [intent.batch.start, intent.batch.end],
      loss: trained.loss,
      tokens: trained.tokens,
      tokens_per_sec: tokensPerSec,
      ms: trained.ms,
      payload_bytes: bytes,
      publish_ms: publishMs,
    });
  }

  async #witness(intent: Extract<Intent, { kind: "SendWitness" }>): Promise<void> {
    const { backend, exchange, logger } = this.#o;
    if (this.#o.faults?.attack === "idle-witness") return;
    const witness = exchange.results.witnessReport(intent.height, intent.proof);
    const previous = exchange.results.tracker(intent.height - 1);
    const elapsedMs = Math.max(1, this.#now() - this.#round.startMs);
    const received = exchange.traffic().bytesReceived - this.#round.bytes;
    // Reported in RoundTrain without their Finished: the stragglers the witness stopped waiting
    // for (client/results/straggler_wait.ts). Late in RoundWitness, nobody was waited for.
    const unfinished = this.#state?.runState === "RoundTrain"
      ? exchange.results.unfinished(intent.height, healthyPeers(this.#state))
      : [];
    await backend.sendWitness(
      witness,
      {
        step: intent.step,
        tokensPerSec: this.#last.tokensPerSec,
        bandwidthPerSec: received / (elapsedMs / 1000),
        loss: Number.isFinite(this.#last.loss) ? this.#last.loss : 0,
        evals: this.#o.evals?.metrics() ?? [],
        promptResults: [],
        promptIndex: 0,
        efficiency: Math.min(1, this.#last.trainMs / elapsedMs),
      },
      this.#ownDigest(intent.step),
      { signal: this.#signal },
    );
    logger.log("witness", {
      step: intent.step,
      round: intent.height,
      participants: previous?.announcements().filter((a) => previous.result(a.commitment))
        .length ?? 0,
      commitments: previous?.announcements().length ?? 0,
      not_waited_for: unfinished.map((key) => toHex(key)),
    });
  }

  /** Whether `notice` was not said for `key` yet; records it as said. */
  #firstNotice(notice: "ejected" | "dropped" | "lagging", key: string): boolean {
    if (this.#noticeKeys.get(notice) === key) return false;
    this.#noticeKeys.set(notice, key);
    return true;
  }

  /** Says once when the coordinator ejected this client (verification), and until when. */
  #noteEjection(state: CoordinatorState): void {
    const signer = this.#o.backend.identity.signer;
    const record = state.ejections.findLast((r) => equalBytes(r.signer, signer));
    if (record === undefined) return;
    const key = `${record.epoch}:${record.step}:${record.cause}`;
    if (!this.#firstNotice("ejected", key)) return;
    this.#o.logger.log("ejected", {
      epoch: record.epoch,
      step: record.step,
      cause: record.cause,
      evidence: record.evidence,
      barred_until: record.barredUntil,
    });
  }

  /**
   * Says once per epoch when a health check dropped this client: the witnesses did not get its
   * result before they reported, and the run went on without it (client/results/straggler_wait.ts).
   */
  #noteDropped(state: CoordinatorState): void {
    if (!isInEpoch(state)) return;
    // A dropped client leaves the list at the round's end for the exited ones: a client reading
    // states late (a slow link skips stale ones) may only ever see it there.
    const signer = this.#o.backend.identity.signer;
    const { clients, exitedClients } = state.epochState;
    const me = clients[epochIndexOf(state, signer)] ??
      exitedClients.findLast((c) => equalBytes(c.id.signer, signer));
    if (me?.state !== "Dropped") return;
    const key = `${state.progress.epoch}:${state.epochState.startTimestamp}`;
    if (!this.#firstNotice("dropped", key)) return;
    this.#o.logger.log("dropped", {
      epoch: state.progress.epoch,
      step: state.progress.step,
      note: "a quorum of the witnesses did not receive this client's result before they " +
        "reported, so the run went on without it: its link or GPU is too slow for the run's " +
        "pace (or it was cut off); it asks to join again for a later epoch",
    });
  }

  /**
   * Says once per epoch when the state just read is older than the run lets such a state last
   * (by more than LAG_NOTICE_MS): the coordinator has moved on, and this client reads its states
   * late, as over a link too slow for the state pushes. Wall clocks, so it needs clocks agreeing
   * within seconds (NTP does far better). Only where states end on time by themselves (TCP).
   */
  #noteLag(state: CoordinatorState): void {
    if (this.#o.backend.statesEndOnTime !== true) return;
    const lasts = state.runState === "RoundTrain"
      ? state.config.maxRoundTrainTime
      : state.runState === "RoundWitness"
      ? state.config.roundWitnessTime
      : null;
    if (lasts === null) return;
    const wallNow = (this.#o.wallClock ?? Date.now)();
    const behindMs = wallNow - toMillis(state.runStateStartUnixTimestamp) - lasts * 1000;
    if (behindMs < LAG_NOTICE_MS) return;
    const key = `${state.progress.epoch}:${state.epochState.startTimestamp}`;
    if (!this.#firstNotice("lagging", key)) return;
    this.#o.logger.log("lagging", {
      epoch: state.progress.epoch,
      step: state.progress.step,
      behind_s: Math.round(behindMs / 100) / 10,
      note: "the coordinator's states reach this client late: the state read has been over " +
        "for that long, so this client's link (or machine) is too slow for the run's pace; " +
        "the run does not wait for it",
    });
  }

  #logState(state: CoordinatorState): void {
    const inRound = state.runState === "RoundTrain" || state.runState === "RoundWitness" ||
      state.runState === "Cooldown";
    const height = inRound ? currentRound(state).height : 0;
    const key = `${state.runState}:${state.progress.epoch}:${height}`;
    if (key === this.#lastLogged) return;
    this.#lastLogged = key;
    this.#o.logger.log("state", {
      run_state: state.runState,
      epoch: state.progress.epoch,
      step: state.progress.step,
      round: height,
      clients: state.epochState.clients.length,
    });
    if (state.runState === "RoundTrain") {
      const t = this.#o.exchange.traffic();
      this.#round = { height, startMs: this.#now(), bytes: t.bytesReceived };
      this.#o.logger.log("traffic", {
        bytes_sent: t.bytesSent,
        bytes_received: t.bytesReceived,
        gossip_delivered: t.gossipDelivered,
        peers: t.peers,
        ...(this.#o.backend.receivedBytes === undefined
          ? {}
          : { coordinator_bytes_received: this.#o.backend.receivedBytes }),
      });
    }
  }
}
