/**
 * Fitting a local run's time budgets to this machine: measure what one training step of the
 * run's model costs here, now (with whatever else loads the CPU), and give the run at least
 * the round, Warmup and epoch times that cost needs when `clients` processes share the
 * machine. A run sized for a quiet machine otherwise times every round out on a busy one and
 * trains nothing (the demo did: 2 steps trained, 0 applied, at load average 4).
 *
 * `measureStep` is the edge (GPU); `fitBudgets` is pure.
 *
 * @module
 */
import { runInitSeed } from "../model_source.ts";
import { NetworkTrainer } from "../trainer.ts";
import type { CoordinatorConfig } from "../../coordinator/core/mod.ts";
import { initParams, loadHubCheckpoint } from "../../model/mod.ts";
import type { RunConfig } from "../../coordinator/config/mod.ts";
import { distroConfig } from "../../optimizer/mod.ts";
import { GpuRuntime } from "../../shaders/mod.ts";

/** What one training step of the run's model cost on this machine. */
export interface StepCost {
  /** The first step, which builds every GPU pipeline. */
  readonly firstStepMs: number;
  /** A later step: what each round's training costs. */
  readonly stepMs: number;
  /** Sequences per step measured (the run's per-client share). */
  readonly sequences: number;
}

/** Rounds an epoch should hold at least, at the measured pace. */
export const MIN_ROUNDS_PER_EPOCH = 8;
/** Times the measured round a round may take: the apply, the exchange and the witnesses. */
export const ROUND_MARGIN = 2;

/**
 * Measures a step of `run`'s model with `clients` clients' share of its batch: the two dry
 * steps a client runs before it reports ready (client/trainer.ts `warmUp`), on the run's
 * checkpoint folder (its weights, or the run-seeded init). Only `Hub`/`Dummy` checkpoints can
 * be measured this way (a local run's model is a folder).
 */
export async function measureStep(
  run: RunConfig,
  options: { clients: number; baseDir: string },
): Promise<StepCost> {
  const checkpoint = run.model.checkpoint;
  if (checkpoint.kind !== "Hub" && checkpoint.kind !== "Dummy") {
    throw new RangeError(`cannot measure a run whose checkpoint is ${checkpoint.kind}`);
  }
  const hub = await loadHubCheckpoint(checkpoint.repo, { baseDir: options.baseDir });
  const weights = hub.weights ?? initParams(hub.layout, hub.config, runInitSeed(run.runId));
  const sequences = Math.max(1, Math.ceil(run.config.globalBatchSizeEnd / options.clients));
  using rt = await GpuRuntime.create();
  using trainer = new NetworkTrainer({
    rt,
    config: hub.config,
    layout: hub.layout,
    weights,
    seqLen: run.model.maxSeqLen,
    microBatch: 1,
    maxBatch: sequences,
    distro: distroConfig(run.model.optimizer),
  });
  const { firstMs, stepMs } = await trainer.warmUp(sequences);
  return { firstStepMs: firstMs, stepMs, sequences };
}

/**
 * `config` with its round, Warmup and epoch times raised (never lowered) to fit `cost` when
 * `clients` processes share this machine: each then trains about `clients` times slower than
 * the measured lone step. A round gets {@link ROUND_MARGIN} times that (the apply, the
 * exchange and the witnesses follow the training), Warmup the pipeline builds and a step (a
 * client's dry run) with half again to spare, and an epoch room for
 * {@link MIN_ROUNDS_PER_EPOCH} rounds of that pace after its Warmup. Whole seconds.
 *
 * An epoch also waits for all `clients` (up to `maxClients`) before its Warmup: the extra wait
 * of `waiting_for_members_extra_time` counts from the start of WaitingForMembers, so on a busy
 * machine, where starting a client outlasts it, the first client to join began the epoch alone.
 *
 * @example
 * ```ts
 * import { fitBudgets } from "./calibrate.ts";
 * import { testConfig } from "../../tests/support/coordinator_fixtures.ts";
 * const config = testConfig({ maxRoundTrainTime: 30 });
 * const fitted = fitBudgets(config, { firstStepMs: 20_000, stepMs: 8_000, sequences: 2 }, 3);
 * if (fitted.maxRoundTrainTime !== 53) throw new Error(`${fitted.maxRoundTrainTime}`);
 * ```
 */
export function fitBudgets(
  config: CoordinatorConfig,
  cost: StepCost,
  clients: number,
): CoordinatorConfig {
  const shared = Math.max(1, clients);
  const seconds = (ms: number) => Math.ceil(ms / 1000);
  const round = seconds(ROUND_MARGIN * cost.stepMs * shared);
  const maxRoundTrainTime = Math.max(config.maxRoundTrainTime, round + 5);
  const warmupTime = Math.max(
    config.warmupTime,
    seconds(1.5 * (cost.firstStepMs + cost.stepMs) * shared) + 10,
  );
  const epochTime = Math.max(
    config.epochTime,
    warmupTime + MIN_ROUNDS_PER_EPOCH * (round + config.roundWitnessTime),
  );
  const initMinClients = Math.max(config.initMinClients, Math.min(shared, config.maxClients));
  return { ...config, maxRoundTrainTime, warmupTime, epochTime, initMinClients };
}

/** One line for a person: what was measured and what the run now allows. */
export function describeFit(
  cost: StepCost,
  clients: number,
  before: CoordinatorConfig,
  after: CoordinatorConfig,
): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const changed = after.maxRoundTrainTime !== before.maxRoundTrainTime ||
    after.warmupTime !== before.warmupTime || after.epochTime !== before.epochTime;
  const waits = after.initMinClients > before.initMinClients
    ? `; an epoch starts once ${after.initMinClients} clients joined`
    : "";
  return `a step of ${cost.sequences} sequences takes ${s(cost.stepMs)} here (the first, ` +
    `building the GPU pipelines, ${s(cost.firstStepMs)}); with ${clients} clients sharing ` +
    `this machine the run ${changed ? "now allows" : "already allows"} ` +
    `${after.maxRoundTrainTime} s per round, ${after.warmupTime} s of Warmup and ` +
    `${after.epochTime} s per epoch${waits}`;
}
