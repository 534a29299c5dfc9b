/**
 * The checks a coordinator's config, model and progress must pass before the state machine runs on
 * them (Psyche's `check_error`, `Model::check`, `CoordinatorProgress::check` and
 * `check_cold_start_warmup_steps`, shared/coordinator/src/coordinator.rs and model.rs). The
 * run-config parser reports TOML problems with file positions; these checks guard the machine
 * itself, whoever built the values, and throw RangeError naming the field, the rule and the value
 * found.
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
  SNAPSHOT_DTYPES,
} from "./types.ts";
import { durationProblem, MAX_TIME_SECONDS, toMillis } from "../../common/mod.ts";

/**
 * Largest `waitingForMembersExtraTime`, in seconds: Psyche stores it as a u8 of seconds, so 255;
 * fractions are allowed below it.
 */
export const MAX_WAITING_FOR_MEMBERS_EXTRA_TIME = 0xff;

function fail(field: string, rule: string, found: unknown): never {
  throw new RangeError(`${field} must be ${rule}, found ${String(found)}`);
}

function int(field: string, value: number, min: number, max = Number.MAX_SAFE_INTEGER): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    fail(field, `an integer in [${min}, ${max}]`, value);
  }
}

/** A duration in seconds: whole milliseconds up to `max`, and > 0 when `positive`. */
function seconds(field: string, value: number, positive: boolean, max = MAX_TIME_SECONDS): void {
  const problem = durationProblem(value, max) ?? (positive && value === 0 ? "must be > 0" : null);
  if (problem !== null) {
    throw new RangeError(`${field} (seconds) ${problem}, found ${String(value)}`);
  }
}

/** Throws RangeError unless `config` keeps Psyche's `check_error` rules and `maxClients`'s. */
export function validateCoordinatorConfig(config: CoordinatorConfig): void {
  const c = config;
  seconds("config.epochTime", c.epochTime, true);
  seconds("config.warmupTime", c.warmupTime, false);
  if (c.warmupTime >= c.epochTime) {
    fail("config.warmupTime", `< epochTime (${c.epochTime})`, c.warmupTime);
  }
  seconds("config.cooldownTime", c.cooldownTime, true);
  seconds("config.maxRoundTrainTime", c.maxRoundTrainTime, true);
  if (c.maxRoundTrainTime >= c.epochTime) {
    fail("config.maxRoundTrainTime", `< epochTime (${c.epochTime})`, c.maxRoundTrainTime);
  }
  seconds("config.roundWitnessTime", c.roundWitnessTime, true);
  int("config.globalBatchSizeWarmupTokens", c.globalBatchSizeWarmupTokens, 0);
  int("config.totalSteps", c.totalSteps, 1, 0xffff_ffff);
  int("config.maxClients", c.maxClients, 1, MAX_CLIENTS_LIMIT);
  int("config.minClients", c.minClients, 1, c.maxClients);
  int("config.initMinClients", c.initMinClients, c.minClients, c.maxClients);
  int("config.witnessNodes", c.witnessNodes, 0, Math.min(c.minClients, MAX_WITNESSES));
  int("config.globalBatchSizeStart", c.globalBatchSizeStart, 1, 0xffff);
  int("config.globalBatchSizeEnd", c.globalBatchSizeEnd, c.globalBatchSizeStart, 0xffff);
  int("config.verificationPercent", c.verificationPercent, 0, 100);
  int("config.verificationBarEpochs", c.verificationBarEpochs, 0, 0xffff);
  seconds(
    "config.waitingForMembersExtraTime",
    c.waitingForMembersExtraTime,
    true,
    MAX_WAITING_FOR_MEMBERS_EXTRA_TIME,
  );
  witnessBloomParameters(c.maxClients);
}

/**
 * Rounds that fit in an epoch after Warmup: ⌊(epochTime − warmupTime) / maxRoundTrainTime⌋, in
 * integer milliseconds so fractional durations divide exactly (the bound of
 * `coldStartWarmupSteps`, Psyche's `check_cold_start_warmup_steps`).
 */
export function roundsPerEpoch(
  config: Pick<CoordinatorConfig, "epochTime" | "warmupTime" | "maxRoundTrainTime">,
): number {
  const { epochTime, warmupTime, maxRoundTrainTime } = config;
  if (
    Number.isInteger(epochTime) && Number.isInteger(warmupTime) &&
    Number.isInteger(maxRoundTrainTime)
  ) {
    return Math.floor((epochTime - warmupTime) / maxRoundTrainTime);
  }
  return Math.floor((toMillis(epochTime) - toMillis(warmupTime)) / toMillis(maxRoundTrainTime));
}

/** Throws RangeError unless the model is trainable by the machine (Psyche's `Model::check`). */
export function validateModelForCoordinator(model: LlmModel, config: CoordinatorConfig): void {
  int("model.maxSeqLen", model.maxSeqLen, 1);
  if (model.checkpoint?.kind === "Ephemeral") {
    fail("model.checkpoint", "a stored checkpoint (not Ephemeral)", "Ephemeral");
  }
  if (model.optimizer?.kind === "Dummy") fail("model.optimizer", "a real optimizer", "Dummy");
  int("model.coldStartWarmupSteps", model.coldStartWarmupSteps, 0, roundsPerEpoch(config));
  if (!SNAPSHOT_DTYPES.includes(model.snapshotDtype)) {
    fail(
      "model.snapshotDtype",
      `one of ${SNAPSHOT_DTYPES.map((d) => JSON.stringify(d)).join(", ")}`,
      JSON.stringify(model.snapshotDtype),
    );
  }
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
