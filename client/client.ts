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
import { distroConfig } from "../optimizer/distro.ts";
import { currentRound } from "../coordinator/machine_queries.ts";
import { toHex } from "../coordinator/hash.ts";
import type { CoordinatorState } from "../coordinator/types.ts";
import { providerForLocation } from "../data/factory.ts";
import type { DataProvider } from "../data/provider.ts";
import type { Identity } from "../net/identity.ts";
import type { DistroResult } from "../optimizer/result.ts";
import { GpuRuntime } from "../shaders/gpu.ts";
import { decideApply } from "./apply_decision.ts";
import type { CoordinatorBackend } from "./backend/backend.ts";
import type { Exchange } from "./exchange.ts";
import type { ClientLogger } from "./log.ts";
import { countParameters } from "../model/hf_config.ts";
import { loadRunModel, type ServedModel, serveModel } from "./model_sharing/mod.ts";
import { sameKey } from "./round_view.ts";
import { checkDataVocabulary, DataVocabularyError } from "./data_check.ts";
import { ClientProgress, type Intent, intentKey } from "./state/intent.ts";
import { planActions } from "./state/machine.ts";
import { NetworkTrainer } from "./trainer.ts";

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
  /** Checkpoints go to `{checkpointDir}/{run_id}-step{N}`; none when null. */
  readonly checkpointDir?: string | null;
  /** Folder relative model and data paths resolve against (default: the working directory). */
  readonly baseDir?: string;
  /** The GPU runtime (default: created at the first model load). */
  readonly rt?: GpuRuntime;
  /** Milliseconds, monotonic (default `performance.now`): witness metadata rates. */
  readonly clock?: () => number;
}

/** Milliseconds before a failed model load is tried again. */
export const LOAD_RETRY_MS = 5000;

/** Why `run()` returned. */
export type StopReason = "Finished" | "Aborted" | "BackendClosed";

/** One client taking part in one run. */
export class TrainingClient {
  readonly #o: TrainingClientOptions;
  readonly #progress = new ClientProgress();
  #state: CoordinatorState | null = null;
  #rt: GpuRuntime | null;
  #ownsRt = false;
  #trainer: NetworkTrainer | null = null;
  #data: DataProvider | null = null;
  /** The model snapshot this client serves to joiners (P2P model sharing). */
  #served: ServedModel | null = null;
  #gpu: Promise<void> = Promise.resolve();
  #inFlight = new Set<Promise<void>>();
  #last = { loss: NaN, tokensPerSec: 0, trainMs: 0 };
  /** When the current round started and the bytes received by then. */
  #round = { height: -1, startMs: 0, bytes: 0 };
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
    await this.#o.backend.join({ signal });
    let reason: StopReason | "Failed" = "BackendClosed";
    try {
      for await (const state of this.#o.backend.states({ signal })) {
        this.#state = state;
        this.#logState(state);
        await this.#o.exchange.update(state);
        this.#plan();
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
      this.#trainer?.[Symbol.dispose]();
      await this.#data?.close();
      if (this.#ownsRt) this.#rt?.[Symbol.dispose]();
      this.#o.logger.log("end", { reason });
    }
    if (reason === "Failed") throw this.#failed.signal.reason;
    return reason;
  }

  /** Something the state machine depends on changed (the exchange calls this). */
  poke(): void {
    queueMicrotask(() => this.#plan());
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
          facts: this.#o.exchange,
          checkpoints: (this.#o.checkpointDir ?? null) !== null,
        });
        for (const intent of intents) this.#dispatch(intent);
      } while (this.#replan);
    } finally {
      this.#planning = false;
    }
  }

  #dispatch(intent: Intent): void {
    const key = intentKey(intent);
    this.#progress.markStarted(key);
    const run = async () => {
      try {
        await this.#perform(intent);
      } catch (e) {
        this.#o.logger.log("error", { what: key, error: (e as Error).message });
        // A model that cannot read the data fails the same way every time: stop the client.
        if (e instanceof DataVocabularyError) this.#failed.abort(e);
        else if (intent.kind === "LoadModel") this.#retryLater(key);
      } finally {
        this.#progress.markDone(key);
        queueMicrotask(() => this.#plan());
      }
    };
    const gpuWork = intent.kind === "LoadModel" || intent.kind === "Apply" ||
      intent.kind === "Train" || intent.kind === "DecayWeights" || intent.kind === "ShareModel" ||
      intent.kind === "Checkpoint";
    const task = gpuWork ? (this.#gpu = this.#gpu.then(run)) : run();
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
      case "SendWarmupWitness":
        await backend.sendWarmupWitness(exchange.warmupReport(intent.proof), { signal });
        logger.log("warmup_witness", { epoch: intent.epoch, index: intent.proof.index });
        return;
      case "Apply":
        await this.#apply(intent);
        return;
      case "SendHealthChecks":
        await backend.sendHealthCheck(intent.checks, { signal });
        logger.log("health_check", {
          step: this.#state === null ? 0 : this.#state.progress.step,
          clients: intent.checks.map((c) => toHex(c.id.signer)),
        });
        return;
      case "Train":
        await this.#train(intent);
        return;
      case "DecayWeights":
        await this.#need().decayWeights(intent.lr);
        return;
      case "AnnounceFinished":
        await exchange.announceFinished(intent.height, intent.step, intent.proof);
        return;
      case "SendWitness":
        await this.#witness(intent);
        return;
      case "ShareModel": {
        const trainer = this.#need();
        const weights = await trainer.model.readParams();
        this.#served = serveModel(exchange.payloads, {
          config: trainer.config,
          layout: trainer.layout,
          weights,
        }, { replaces: this.#served });
        return;
      }
      case "Checkpoint": {
        const trainer = this.#need();
        const dir = `${this.#o.checkpointDir}/${this.#state?.runId}-step${intent.step}`;
        await trainer.save(dir);
        logger.log("checkpoint", { step: intent.step, dir });
        return;
      }
      default: {
        const unreachable: never = intent;
        throw new Error(`unknown intent ${JSON.stringify(unreachable)}`);
      }
    }
  }

  #now(): number {
    return (this.#o.clock ?? (() => performance.now()))();
  }

  #need(): NetworkTrainer {
    if (this.#trainer === null) throw new Error("the model is not loaded");
    return this.#trainer;
  }

  async #load(): Promise<void> {
    const state = this.#state;
    if (state === null) return;
    if (this.#trainer !== null) {
      this.#progress.modelReady = true;
      return;
    }
    const baseDir = this.#o.baseDir ?? Deno.cwd();
    const model = await loadRunModel({
      checkpoint: state.model.checkpoint,
      runId: state.runId,
      payloads: this.#o.exchange.payloads,
      providers: state.epochState.clients.map((c) => c.id.p2pIdentity)
        .filter((k) => !sameKey(k, this.#o.backend.identity.p2pIdentity)),
      override: this.#o.modelOverride,
      hub: { baseDir },
      signal: this.#signal,
    });
    this.#served = model.served;
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
    await this.#data?.close(); // a provider left by an earlier, failed load
    this.#data = data;
    if (this.#rt === null) {
      this.#rt = await GpuRuntime.create();
      this.#ownsRt = true;
    }
    const { config } = state;
    this.#trainer = new NetworkTrainer({
      rt: this.#rt,
      config: model.config,
      layout: model.layout,
      weights: model.weights,
      seqLen: state.model.maxSeqLen,
      microBatch: this.#o.microBatch ?? 1,
      maxBatch: Math.max(config.globalBatchSizeStart, config.globalBatchSizeEnd),
      distro: distroConfig(state.model.optimizer),
    });
    this.#o.exchange.setExpectation(this.#trainer.expectation);
    this.#progress.modelReady = true;
    this.#o.logger.log("model", {
      folder: model.origin,
      weights: model.source,
      params: countParameters(model.config),
      params_hash: await this.#trainer.paramsHash(),
    });
  }

  async #apply(intent: Extract<Intent, { kind: "Apply" }>): Promise<void> {
    const trainer = this.#need();
    const { exchange, logger } = this.#o;
    const height = intent.plan.resultsRound.height;
    const tracker = exchange.tracker(height);
    const decision = decideApply(
      intent.plan,
      intent.batches,
      (batch) => tracker?.candidates(batch) ?? [],
    );
    const results: DistroResult[] = [];
    const untrained = [...decision.untrained];
    for (const chosen of decision.chosen) {
      const result = await exchange.resultFor(height, chosen.commitment);
      if (result === undefined) {
        // Consensus says this result exists, but no peer delivered it: this client now
        // differs from the others, which its parameter hash will show.
        logger.log("error", {
          what: `apply step ${intent.step}`,
          error: `payload of batch [${chosen.batch.start}, ${chosen.batch.end}] unavailable`,
        });
        untrained.push(chosen.batch);
        continue;
      }
      results.push(result);
    }
    await trainer.apply(results, intent.lr);
    logger.log("apply", {
      epoch: intent.epoch,
      step: intent.step,
      applied: results.length,
      untrained_batches: untrained.length,
      untrained: untrained.map((b) => [b.start, b.end]),
      lr: intent.lr,
      params_hash: await trainer.paramsHash(),
    });
  }

  async #train(intent: Extract<Intent, { kind: "Train" }>): Promise<void> {
    const trainer = this.#need();
    const data = this.#data;
    if (data === null) throw new Error("no data provider");
    if (intent.resetOptimizer) await trainer.resetOptimizer();
    const trained = await trainer.train({
      step: intent.step,
      batch: intent.batch,
      lr: intent.lr,
      prevLr: intent.prevLr,
      data,
      signal: this.#signal,
    });
    const bytes = await this.#o.exchange.publishResult(intent.height, intent.proof, trained.result);
    const tokensPerSec = trained.tokens / (trained.ms / 1000);
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
    });
  }

  async #witness(intent: Extract<Intent, { kind: "SendWitness" }>): Promise<void> {
    const { backend, exchange, logger } = this.#o;
    const witness = exchange.witnessReport(intent.height, intent.proof);
    const previous = exchange.tracker(intent.height - 1);
    const elapsedMs = Math.max(1, this.#now() - this.#round.startMs);
    const received = exchange.traffic().bytesReceived - this.#round.bytes;
    await backend.sendWitness(witness, {
      step: intent.step,
      tokensPerSec: this.#last.tokensPerSec,
      bandwidthPerSec: received / (elapsedMs / 1000),
      loss: Number.isFinite(this.#last.loss) ? this.#last.loss : 0,
      evals: [],
      promptResults: [],
      promptIndex: 0,
      efficiency: Math.min(1, this.#last.trainMs / elapsedMs),
    }, { signal: this.#signal });
    logger.log("witness", {
      step: intent.step,
      height: intent.height,
      participants: previous?.announcements().filter((a) => previous.result(a.commitment))
        .length ?? 0,
      commitments: previous?.announcements().length ?? 0,
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
      height,
      clients: state.epochState.clients.length,
    });
    if (state.runState === "RoundTrain") {
      const t = this.#o.exchange.traffic();
      this.#round = { height, startMs: this.#now(), bytes: t.bytesReceived };
      this.#o.logger.log("traffic", {
        bytes_sent: t.bytesSent,
        bytes_received: t.bytesReceived,
        gossip_delivered: t.gossipDelivered,
      });
    }
  }
}
