/**
 * The state encoding (docs/state-encoding.md) of single parts of a coordinator state: a
 * `CoordinatorConfig` in layout version 1 (whole seconds: the program's clock and config are
 * whole seconds) followed by its `verificationBarEpochs` as a u16 (which version 1 lacks), an
 * `LlmModel` in version 4 (version 1's bytes, then the snapshot dtype, which version 1 lacks).
 * The program stores and receives these parts in
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
  SNAPSHOT_DTYPE_SINCE_VERSION,
  STATE_HEADER_BYTES,
} from "../../encoding/mod.ts";
import {
  type CoordinatorConfig,
  type CoordinatorState,
  DEFAULT_VERIFICATION_BAR_EPOCHS,
  emptyEpochState,
  type LlmModel,
} from "../../core/mod.ts";

/** The program's layout version of the state encoding (whole seconds). */
const V1 = { version: 1 } as const;
/**
 * The layout version of the model the program receives: the model of version 1, then the
 * snapshot dtype (a model has no times, so nothing else differs).
 */
const MODEL_VERSION = { version: SNAPSHOT_DTYPE_SINCE_VERSION } as const;

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
    verificationBarEpochs: DEFAULT_VERIFICATION_BAR_EPOCHS,
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
    ejections: [],
  };
}

// Fillers for the part not being encoded; only read.
const PLACEHOLDER_CONFIG = zeroConfig(1);
const PLACEHOLDER_MODEL = placeholderModel();

/**
 * Bytes of a CoordinatorConfig in the state encoding's version 1 (66): the start of the config
 * the program receives and of the account's config.
 */
export const CONFIG_V1_BYTES: number = encodeConfigPart(PLACEHOLDER_CONFIG, V1).length;
/**
 * Bytes of the config the program receives (68): version 1's config, then
 * `verificationBarEpochs` (u16 little-endian). Appending the one field version 1 lacks keeps the
 * program's whole-second config as it was; version 5's config would bring millisecond durations.
 */
export const CONFIG_WIRE_BYTES: number = CONFIG_V1_BYTES + 2;

/**
 * A minimal state's encoding of `version`, cut around its model and config: the header, an empty
 * run id (its length byte) and the run state in front; progress, an empty epoch state, the
 * timestamp, the pause flag and the digest counts of that version behind. Cut from the codec's
 * own output, so no sum of field sizes here can drift from the encoding.
 */
function minimalState(options: { version: 1 | typeof SNAPSHOT_DTYPE_SINCE_VERSION }) {
  const state = encodeCoordinatorState(
    uninitializedState("", PLACEHOLDER_MODEL, PLACEHOLDER_CONFIG),
    options,
  );
  const model = encodeModelPart(PLACEHOLDER_MODEL, options);
  const config = encodeConfigPart(PLACEHOLDER_CONFIG, options);
  return {
    head: state.slice(0, MODEL_OFFSET),
    model,
    config,
    tail: state.slice(MODEL_OFFSET + model.length + config.length),
  };
}
const MODEL_OFFSET = STATE_HEADER_BYTES + 1 + 1;
/** Around a config the program receives (version 1). */
const CONFIG_FRAME = minimalState(V1);
/** Around a model the program receives (version 4). */
const MODEL_FRAME = minimalState(MODEL_VERSION);

/**
 * The state encoding of `model` as the program receives it: version 1's bytes, then the
 * snapshot dtype (RangeError/TypeError naming the field if it cannot be encoded).
 */
export function encodeModelBytes(model: LlmModel): Uint8Array {
  return encodeModelPart(model, MODEL_VERSION);
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
 * The config as the program receives it ({@linkcode CONFIG_WIRE_BYTES} bytes: version 1's
 * encoding, then the bar epochs). Throws RangeError naming the key when a duration is not whole
 * seconds ({@linkcode checkWholeSecondDurations}) or the bar epochs are not a u16.
 */
export function encodeConfigBytes(config: CoordinatorConfig): Uint8Array {
  checkWholeSecondDurations(config);
  const bar = config.verificationBarEpochs;
  if (!Number.isSafeInteger(bar) || bar < 0 || bar > 0xffff) {
    throw new RangeError(
      `config.verificationBarEpochs must be an integer in [0, 65535], found ${String(bar)}`,
    );
  }
  // Version 1 has no bar epochs (it writes only the default); they follow it instead.
  const v1 = encodeConfigPart(
    { ...config, verificationBarEpochs: DEFAULT_VERIFICATION_BAR_EPOCHS },
    V1,
  );
  const out = new Uint8Array(CONFIG_WIRE_BYTES);
  out.set(v1);
  new DataView(out.buffer).setUint16(CONFIG_V1_BYTES, bar, true);
  return out;
}

/** `parts` in one buffer, decoded as a state (StateDecodeError names the failing field). */
function decodeFramed(parts: readonly Uint8Array[]): CoordinatorState {
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  return decodeCoordinatorState(bytes);
}

/** Decodes an encoded LlmModel, version 4 (StateDecodeError when malformed). */
export function decodeModelBytes(bytes: Uint8Array): LlmModel {
  const f = MODEL_FRAME;
  return decodeFramed([f.head, bytes, f.config, f.tail]).model;
}

/**
 * Decodes a config as the program receives it: version 1's CoordinatorConfig, then the bar
 * epochs (StateDecodeError when malformed, RangeError on a wrong length).
 */
export function decodeConfigBytes(bytes: Uint8Array): CoordinatorConfig {
  if (bytes.length !== CONFIG_WIRE_BYTES) {
    throw new RangeError(`A config is ${CONFIG_WIRE_BYTES} bytes, found ${bytes.length}`);
  }
  const f = CONFIG_FRAME;
  const config = decodeFramed([f.head, f.model, bytes.subarray(0, CONFIG_V1_BYTES), f.tail]).config;
  config.verificationBarEpochs = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
    .getUint16(CONFIG_V1_BYTES, true);
  return config;
}
