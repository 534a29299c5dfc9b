/**
 * The checks a coordinator's config, model and progress must pass before the state
 * machine runs on them (Psyche's `check_error`, `Model::check`, `CoordinatorProgress::check`
 * and `check_cold_start_warmup_steps`, psyche.md §2.2). The run-config parser reports TOML
 * problems with file positions; these checks guard the machine itself, whoever built the
 * values, and throw RangeError naming the field, the rule and the value found.
 *
 * @module
 */

import { witnessBloomParameters } from "./bloom.ts";
import {
  type CoordinatorConfig,
  type CoordinatorProgress,
  type LlmModel,
  MAX_CLIENTS_LIMIT,
  MAX_RUN_ID_BYTES,
  MAX_WITNESSES,
} from "./types.ts";

function fail(field: string, rule: string, found: unknown): never {
  throw new RangeError(`${field} must be ${rule}, found ${String(found)}`);
}

function int(field: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    fail(field, `an integer in [${min}, ${max}]`, value);
  }
}

/** Throws RangeError unless `config` satisfies every rule of psyche.md §2.2 plus `maxClients`. */
export function validateCoordinatorConfig(config: CoordinatorConfig): void {
  const c = config;
  int("config.epochTime", c.epochTime, 1);
  int("config.warmupTime", c.warmupTime, 0);
  if (c.warmupTime >= c.epochTime) {
    fail("config.warmupTime", `< epochTime (${c.epochTime})`, c.warmupTime);
  }
  int("config.cooldownTime", c.cooldownTime, 1);
  int("config.maxRoundTrainTime", c.maxRoundTrainTime, 1);
  if (c.maxRoundTrainTime >= c.epochTime) {
    fail("config.maxRoundTrainTime", `< epochTime (${c.epochTime})`, c.maxRoundTrainTime);
  }
  int("config.roundWitnessTime", c.roundWitnessTime, 1);
  int("config.globalBatchSizeWarmupTokens", c.globalBatchSizeWarmupTokens, 0);
  int("config.totalSteps", c.totalSteps, 1, 0xffff_ffff);
  int("config.maxClients", c.maxClients, 1, MAX_CLIENTS_LIMIT);
  int("config.minClients", c.minClients, 1, c.maxClients);
  int("config.initMinClients", c.initMinClients, c.minClients, c.maxClients);
  int("config.witnessNodes", c.witnessNodes, 0, Math.min(c.minClients, MAX_WITNESSES));
  int("config.globalBatchSizeStart", c.globalBatchSizeStart, 1, 0xffff);
  int("config.globalBatchSizeEnd", c.globalBatchSizeEnd, c.globalBatchSizeStart, 0xffff);
  // Only 0 is supported for training: verifiers are not implemented (as in Psyche).
  int("config.verificationPercent", c.verificationPercent, 0, 0);
  int("config.waitingForMembersExtraTime", c.waitingForMembersExtraTime, 1, 0xff);
  witnessBloomParameters(c.maxClients);
}

/** Throws RangeError unless the model is trainable by the machine (psyche.md §2.2). */
export function validateModelForCoordinator(model: LlmModel, config: CoordinatorConfig): void {
  int("model.maxSeqLen", model.maxSeqLen, 1);
  if (model.checkpoint?.kind === "Ephemeral") {
    fail("model.checkpoint", "a stored checkpoint (not Ephemeral)", "Ephemeral");
  }
  if (model.optimizer?.kind === "Dummy") fail("model.optimizer", "a real optimizer", "Dummy");
  const maxWarmup = Math.floor((config.epochTime - config.warmupTime) / config.maxRoundTrainTime);
  int("model.coldStartWarmupSteps", model.coldStartWarmupSteps, 0, maxWarmup);
}

/** Throws RangeError unless `runId`, `config`, `model` and `progress` are all valid. */
export function validateCoordinatorInputs(
  runId: string,
  config: CoordinatorConfig,
  model: LlmModel,
  progress: CoordinatorProgress,
): void {
  const idBytes = new TextEncoder().encode(runId).length;
  if (typeof runId !== "string" || idBytes === 0 || idBytes > MAX_RUN_ID_BYTES) {
    fail("runId", `1..${MAX_RUN_ID_BYTES} UTF-8 bytes`, JSON.stringify(runId));
  }
  validateCoordinatorConfig(config);
  validateModelForCoordinator(model, config);
  int("progress.epoch", progress.epoch, 0, 0xffff);
  int("progress.step", progress.step, 1, 0xffff_ffff);
  int("progress.epochStartDataIndex", progress.epochStartDataIndex, 0);
}
