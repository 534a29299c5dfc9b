/**
 * The state encoding (docs/state-encoding.md), layout version 1 (whole seconds: the
 * program's clock and config are whole seconds), of single parts of a coordinator state:
 * an `LlmModel`, a `CoordinatorConfig`. The program stores and receives these parts in
 * exactly that encoding, so they are produced and checked by the one state codec
 * (coordinator/encoding/mod.ts) rather than by a second implementation: a part is encoded as
 * the model/config of a minimal state and cut out of it, and decoded by wrapping it in a
 * minimal state and running the strict decoder (which names the failing field).
 *
 * @module
 */

import {
  decodeCoordinatorState,
  encodeConfigPart,
  encodeCoordinatorState,
  encodeModelPart,
  STATE_HEADER_BYTES,
} from "../../encoding/mod.ts";
import {
  type CoordinatorConfig,
  type CoordinatorState,
  emptyEpochState,
  type LlmModel,
} from "../../core/mod.ts";

/** The program's layout version of the state encoding. */
const V1 = { version: 1 } as const;

/** The config an account holds before its first `update`: all zeros, with a client cap. */
export function zeroConfig(maxClients: number): CoordinatorConfig {
  return {
    warmupTime: 0,
    cooldownTime: 0,
    maxRoundTrainTime: 0,
    roundWitnessTime: 0,
    globalBatchSizeWarmupTokens: 0,
    epochTime: 0,
    totalSteps: 0,
    initMinClients: 0,
    minClients: 0,
    witnessNodes: 0,
    globalBatchSizeStart: 0,
    globalBatchSizeEnd: 0,
    verificationPercent: 0,
    waitingForMembersExtraTime: 0,
    maxClients,
  };
}

/** The model an account holds before its first `update`: nothing chosen yet. */
export function placeholderModel(): LlmModel {
  return {
    architecture: "HfLlama",
    dataType: "Pretraining",
    maxSeqLen: 0,
    coldStartWarmupSteps: 0,
    snapshotDtype: "f32",
    dataLocation: { kind: "Dummy" },
    checkpoint: { kind: "Ephemeral" },
    lrSchedule: { kind: "Constant", baseLr: 0, warmupSteps: 0, warmupInitLr: 0 },
    optimizer: { kind: "Dummy" },
  };
}

/** An Uninitialized state holding `model` and `config`: epoch 0, step 1, no clients. */
export function uninitializedState(
  runId: string,
  model: LlmModel,
  config: CoordinatorConfig,
): CoordinatorState {
  return {
    runId,
    runState: "Uninitialized",
    model,
    config,
    progress: { epoch: 0, step: 1, epochStartDataIndex: 0 },
    epochState: emptyEpochState(false),
    runStateStartUnixTimestamp: 0,
    pendingPause: false,
    paramsDigests: [],
  };
}

// Fillers for the part not being encoded; only read.
const PLACEHOLDER_CONFIG = zeroConfig(1);
const PLACEHOLDER_MODEL = placeholderModel();

/** Bytes of an encoded CoordinatorConfig (layout version 1: 66). */
export const CONFIG_WIRE_BYTES: number = encodeConfigPart(PLACEHOLDER_CONFIG, V1).length;

/**
 * A minimal state's encoding cut around its model and config: the header, an empty run id (its
 * length byte) and the run state in front; progress, an empty epoch state, the timestamp and the
 * pause flag behind (version 1 has no digest tail). Cut from the codec's own output, so no sum
 * of field sizes here can drift from the encoding.
 */
const MODEL_OFFSET = STATE_HEADER_BYTES + 1 + 1;
const PLACEHOLDER_STATE = encodeCoordinatorState(
  uninitializedState("", PLACEHOLDER_MODEL, PLACEHOLDER_CONFIG),
  V1,
);
const HEAD = PLACEHOLDER_STATE.slice(0, MODEL_OFFSET);
const TAIL = PLACEHOLDER_STATE.slice(
  MODEL_OFFSET + encodeModelPart(PLACEHOLDER_MODEL, V1).length + CONFIG_WIRE_BYTES,
);

/** The state encoding of `model` (RangeError/TypeError naming the field if it cannot be encoded). */
export function encodeModelBytes(model: LlmModel): Uint8Array {
  return encodeModelPart(model, V1);
}

/** The config's durations with their run-config (TOML) keys, for error messages. */
const DURATION_KEYS: readonly (readonly [keyof CoordinatorConfig, string])[] = [
  ["warmupTime", "warmup_time"],
  ["cooldownTime", "cooldown_time"],
  ["maxRoundTrainTime", "max_round_train_time"],
  ["roundWitnessTime", "round_witness_time"],
  ["epochTime", "epoch_time"],
  ["waitingForMembersExtraTime", "waiting_for_members_extra_time"],
];

/**
 * Throws RangeError naming the run-config key and value when a duration of `config` is not
 * a whole number of seconds. The program's config and clock are whole seconds (as Psyche's);
 * fractional durations are for the TCP coordinator, and rounding one here would silently
 * run a different config than the file says.
 */
export function checkWholeSecondDurations(config: CoordinatorConfig): void {
  for (const [field, key] of DURATION_KEYS) {
    const value = config[field];
    if (typeof value === "number" && !Number.isInteger(value)) {
      throw new RangeError(
        `config.${key} = ${value}: the Solana program keeps durations in whole seconds; ` +
          "use a whole number (fractional seconds need the TCP coordinator)",
      );
    }
  }
}

/**
 * The state encoding of `config` (66 bytes). Throws RangeError naming the key when a
 * duration is not whole seconds ({@linkcode checkWholeSecondDurations}).
 */
export function encodeConfigBytes(config: CoordinatorConfig): Uint8Array {
  checkWholeSecondDurations(config);
  return encodeConfigPart(config, V1);
}

/**
 * Wraps a model's and a config's encodings in a minimal state and decodes it. Throws the
 * state decoder's `StateDecodeError` (field path and offset) when either is malformed.
 */
export function decodeModelAndConfig(
  modelBytes: Uint8Array,
  configBytes: Uint8Array,
): { model: LlmModel; config: CoordinatorConfig } {
  const bytes = new Uint8Array(MODEL_OFFSET + modelBytes.length + configBytes.length + TAIL.length);
  bytes.set(HEAD, 0);
  bytes.set(modelBytes, MODEL_OFFSET);
  bytes.set(configBytes, MODEL_OFFSET + modelBytes.length);
  bytes.set(TAIL, MODEL_OFFSET + modelBytes.length + configBytes.length);
  const state = decodeCoordinatorState(bytes);
  return { model: state.model, config: state.config };
}

/** Decodes an encoded LlmModel (StateDecodeError when malformed). */
export function decodeModelBytes(bytes: Uint8Array): LlmModel {
  return decodeModelAndConfig(bytes, encodeConfigBytes(PLACEHOLDER_CONFIG)).model;
}

/** Decodes an encoded CoordinatorConfig (StateDecodeError when malformed). */
export function decodeConfigBytes(bytes: Uint8Array): CoordinatorConfig {
  if (bytes.length !== CONFIG_WIRE_BYTES) {
    throw new RangeError(`A config is ${CONFIG_WIRE_BYTES} bytes, found ${bytes.length}`);
  }
  return decodeModelAndConfig(encodeModelBytes(PLACEHOLDER_MODEL), bytes).config;
}
