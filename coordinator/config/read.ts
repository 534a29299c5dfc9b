/**
 * state.toml → typed values: reads Psyche's run-config layout (serde's externally tagged
 * enums, snake_case keys) into the camelCase vocabulary of coordinator/core/types.ts.
 *
 * This layer checks presence, TOML types, integer widths and unknown keys only; the rules
 * (timing order, client counts, schedule sanity, ...) live in coordinator/config/validate.ts.
 * A value with a problem is left `undefined` in the draft so validation can still check
 * everything else and report all problems together.
 *
 * @module
 */
import type { RunConfigDraft } from "./types.ts";
import {
  type DataLocation,
  type GcsRepo,
  type HttpLocation,
  type HubRepo,
  type LrSchedule,
  type OptimizerDefinition,
  type Shuffle,
  type TableReader,
  TOKEN_SIZE_NAMES,
  type VariantChoice,
} from "../../common/mod.ts";
import {
  type Checkpoint,
  type CoordinatorConfig,
  type CoordinatorProgress,
  DEFAULT_MAX_CLIENTS,
  DEFAULT_VERIFICATION_BAR_EPOCHS,
  type LlmArchitecture,
  type LlmDataType,
  type LlmModel,
  MAX_WAITING_FOR_MEMBERS_EXTRA_TIME,
  RUN_STATES,
  SNAPSHOT_DTYPES,
} from "../core/mod.ts";

/** `[model.LLM] architecture` values. */
export const LLM_ARCHITECTURES: readonly LlmArchitecture[] = [
  "HfLlama",
  "HfDeepseek",
  "HfAuto",
  "Torchtitan",
];
/** `[model.LLM] data_type` values. */
export const LLM_DATA_TYPES: readonly LlmDataType[] = ["Pretraining", "Finetuning"];
/** `data_location` variants. */
export const DATA_LOCATION_KINDS: readonly DataLocation["kind"][] = [
  "Dummy",
  "Server",
  "Local",
  "Http",
  "WeightedHttp",
  "Preprocessed",
];
/** `data_location.Http.location` variants. */
export const HTTP_LOCATION_KINDS: readonly HttpLocation["kind"][] = [
  "SingleUrl",
  "NumberedFiles",
  "Gcp",
];
/** `checkpoint` variants (`Ephemeral` parses but never validates). */
export const CHECKPOINT_KINDS: readonly Checkpoint["kind"][] = [
  "Ephemeral",
  "Dummy",
  "Hub",
  "P2P",
  "Gcs",
  "P2PGcs",
];
/** `lr_schedule` variants. */
export const LR_SCHEDULE_KINDS: readonly LrSchedule["kind"][] = [
  "Constant",
  "Linear",
  "Cosine",
  "WarmupStableDecay",
];
/** `optimizer` variants (`Dummy` parses but never validates). */
export const OPTIMIZER_KINDS: readonly OptimizerDefinition["kind"][] = [
  "Dummy",
  "AdamW",
  "Distro",
];
/** Bytes in an HTTP data location's shuffle seed. */
export const HTTP_SHUFFLE_SEED_BYTES = 32;

/** Progress of a fresh run: epoch 0, step 1 (Psyche's steps start at 1), data index 0. */
export const DEFAULT_PROGRESS: Readonly<CoordinatorProgress> = {
  epoch: 0,
  step: 1,
  epochStartDataIndex: 0,
};

/**
 * Reads a parsed state.toml document into a draft; every presence/type problem is recorded
 * in the reader's issue list. Fields with problems are `undefined` in the draft.
 */
export function readRunConfig(root: TableReader): RunConfigDraft {
  const runId = root.string("run_id");
  const runState = root.oneOf("run_state", RUN_STATES);
  const configTable = root.table("config");
  const config = configTable === undefined ? {} : readCoordinatorConfig(configTable);
  const modelChoice = root.variant("model", ["LLM"]);
  const llmTable = modelChoice === undefined
    ? undefined
    : root.payload(modelChoice, "a table")?.table(modelChoice.tag);
  const model = llmTable === undefined ? {} : readLlm(llmTable);
  const progressTable = root.optionalTable("progress");
  let paramsDigest: Uint8Array | null | undefined = null;
  const progress = progressTable === null
    ? { ...DEFAULT_PROGRESS }
    : progressTable === undefined
    ? {}
    : readProgress(progressTable, (digest) => (paramsDigest = digest));
  root.finish();
  return { runId, runState, config, model, progress, paramsDigest };
}

function readCoordinatorConfig(t: TableReader): Partial<CoordinatorConfig> {
  const config: Partial<CoordinatorConfig> = {
    warmupTime: t.seconds("warmup_time"),
    cooldownTime: t.seconds("cooldown_time"),
    maxRoundTrainTime: t.seconds("max_round_train_time"),
    roundWitnessTime: t.seconds("round_witness_time"),
    globalBatchSizeWarmupTokens: t.integer("global_batch_size_warmup_tokens", "u64"),
    epochTime: t.seconds("epoch_time"),
    totalSteps: t.integer("total_steps", "u32"),
    initMinClients: t.integer("init_min_clients", "u16"),
    minClients: t.integer("min_clients", "u16"),
    witnessNodes: t.integer("witness_nodes", "u16"),
    globalBatchSizeStart: t.integer("global_batch_size_start", "u16"),
    globalBatchSizeEnd: t.integer("global_batch_size_end", "u16"),
    verificationPercent: t.integer("verification_percent", "u8"),
    waitingForMembersExtraTime: t.seconds(
      "waiting_for_members_extra_time",
      MAX_WAITING_FOR_MEMBERS_EXTRA_TIME,
    ),
    maxClients: t.integerOr("max_clients", "u16", DEFAULT_MAX_CLIENTS),
    verificationBarEpochs: t.integerOr(
      "verification_bar_epochs",
      "u16",
      DEFAULT_VERIFICATION_BAR_EPOCHS,
    ),
  };
  t.finish();
  return config;
}

/**
 * A `[progress]` table says where a saved run stands, so every key is required: a missing
 * `epoch` silently becoming 0 would restart the run's schedule. Without the table a run starts
 * fresh ({@linkcode DEFAULT_PROGRESS}). `params_digest` is optional (the run's recorded digest of
 * the parameters of `step`).
 */
function readProgress(
  t: TableReader,
  digest: (d: Uint8Array | null | undefined) => void,
): Partial<CoordinatorProgress> {
  digest(readParamsDigest(t, "params_digest"));
  const progress: Partial<CoordinatorProgress> = {
    epoch: t.integer("epoch", "u16"),
    step: t.integer("step", "u32"),
    epochStartDataIndex: t.integer("epoch_start_data_index", "u64"),
  };
  t.finish();
  return progress;
}

/** An optional parameter digest: 64 hex digits, not all zero. */
function readParamsDigest(t: TableReader, key: string): Uint8Array | null | undefined {
  const text = t.optionalString(key);
  if (text === null || text === undefined) return text;
  if (!/^[0-9a-f]{64}$/.test(text) || /^0+$/.test(text)) {
    t.report(key, text, "expected 64 lower-case hex digits (a 32-byte digest), not all zero");
    return undefined;
  }
  return Uint8Array.from(text.match(/../g)!, (pair) => parseInt(pair, 16));
}

function readLlm(t: TableReader): Partial<LlmModel> {
  const model: Partial<LlmModel> = {
    architecture: t.oneOf("architecture", LLM_ARCHITECTURES),
    dataType: t.oneOf("data_type", LLM_DATA_TYPES),
    maxSeqLen: t.integer("max_seq_len", "u32"),
    coldStartWarmupSteps: t.integerOr("cold_start_warmup_steps", "u32", 0),
    snapshotDtype: t.oneOfOr("snapshot_dtype", SNAPSHOT_DTYPES, "f32"),
    dataLocation: readDataLocation(t),
    checkpoint: readCheckpoint(t),
    lrSchedule: readLrSchedule(t),
    optimizer: readOptimizer(t),
  };
  t.finish();
  return model;
}

/** Reads a variant's payload table, finishing it after `read` so unknown keys are reported. */
function payloadTable<T>(
  parent: TableReader,
  choice: VariantChoice,
  read: (t: TableReader) => T | undefined,
): T | undefined {
  const table = parent.payload(choice, "a table")?.table(choice.tag);
  if (table === undefined) return undefined;
  const value = read(table);
  table.finish();
  return value;
}

function payloadString(parent: TableReader, choice: VariantChoice): string | undefined {
  return parent.payload(choice, "a string")?.string(choice.tag);
}

function readDataLocation(t: TableReader): DataLocation | undefined {
  const choice = t.variant("data_location", DATA_LOCATION_KINDS);
  if (choice === undefined) return undefined;
  const tag = choice.tag as DataLocation["kind"];
  switch (tag) {
    case "Dummy":
      return t.unitPayload(choice) && { kind: "Dummy" };
    case "Server": {
      const address = payloadString(t, choice);
      return address === undefined ? undefined : { kind: "Server", address };
    }
    case "Local": {
      const path = payloadString(t, choice);
      return path === undefined ? undefined : { kind: "Local", path };
    }
    case "WeightedHttp": {
      const url = payloadString(t, choice);
      return url === undefined ? undefined : { kind: "WeightedHttp", url };
    }
    case "Preprocessed": {
      const source = payloadString(t, choice);
      return source === undefined ? undefined : { kind: "Preprocessed", source };
    }
    case "Http":
      return payloadTable(t, choice, readHttpDataLocation);
    default:
      return unreachable(tag);
  }
}

/**
 * The keys of an `Http` data location (Psyche's `HttpLLMTrainingDataLocation`): `location`,
 * `token_size_in_bytes` and `shuffle`, read from `t`; the caller calls `t.finish()`. Also reads
 * each entry of a `WeightedHttp` mix's JSON (data/weighted_config.ts), which has this layout.
 */
export function readHttpDataLocation(
  t: TableReader,
): Extract<DataLocation, { kind: "Http" }> | undefined {
  const location = readHttpLocation(t);
  const tokenSizeInBytes = t.oneOf("token_size_in_bytes", TOKEN_SIZE_NAMES);
  const shuffle = readShuffle(t);
  if (location === undefined || tokenSizeInBytes === undefined || shuffle === undefined) {
    return undefined;
  }
  return { kind: "Http", location, tokenSizeInBytes, shuffle };
}

function readHttpLocation(t: TableReader): HttpLocation | undefined {
  const choice = t.variant("location", HTTP_LOCATION_KINDS);
  if (choice === undefined) return undefined;
  const tag = choice.tag as HttpLocation["kind"];
  switch (tag) {
    case "SingleUrl": {
      const url = payloadString(t, choice);
      return url === undefined ? undefined : { kind: "SingleUrl", url };
    }
    case "NumberedFiles":
      return payloadTable(t, choice, (n) => {
        const urlTemplate = n.string("url_template");
        const startIndex = n.integer("start_index", "u32");
        const nLeftPadZeros = n.integer("n_left_pad_zeros", "u8");
        const numFiles = n.integer("num_files", "u32");
        if (
          urlTemplate === undefined || startIndex === undefined || nLeftPadZeros === undefined ||
          numFiles === undefined
        ) return undefined;
        return { kind: "NumberedFiles", urlTemplate, startIndex, nLeftPadZeros, numFiles };
      });
    case "Gcp":
      return payloadTable(t, choice, (g) => {
        const bucketName = g.string("bucket_name");
        const filterDirectory = g.string("filter_directory");
        if (bucketName === undefined || filterDirectory === undefined) return undefined;
        return { kind: "Gcp", bucketName, filterDirectory };
      });
    default:
      return unreachable(tag);
  }
}

/**
 * A `shuffle` key: `"DontShuffle"` or `{ Seeded = [32 u8] }`. Also the top-level `shuffle` of a
 * `WeightedHttp` mix's JSON.
 */
export function readShuffle(t: TableReader): Shuffle | undefined {
  const choice = t.variant("shuffle", ["DontShuffle", "Seeded"]);
  if (choice === undefined) return undefined;
  if (choice.tag === "DontShuffle") return t.unitPayload(choice) && { kind: "DontShuffle" };
  const seed = t.payload(choice, `an array of ${HTTP_SHUFFLE_SEED_BYTES} u8`)?.bytes(
    choice.tag,
    HTTP_SHUFFLE_SEED_BYTES,
  );
  return seed === undefined ? undefined : { kind: "Seeded", seed };
}

function readHubRepo(t: TableReader): HubRepo | undefined {
  const repoId = t.string("repo_id");
  const revision = t.optionalString("revision");
  if (repoId === undefined || revision === undefined) return undefined;
  return { repoId, revision };
}

function readGcsRepo(t: TableReader): GcsRepo | undefined {
  const bucket = t.string("bucket");
  const prefix = t.optionalString("prefix");
  if (bucket === undefined || prefix === undefined) return undefined;
  return { bucket, prefix };
}

function readCheckpoint(t: TableReader): Checkpoint | undefined {
  const choice = t.variant("checkpoint", CHECKPOINT_KINDS);
  if (choice === undefined) return undefined;
  const tag = choice.tag as Checkpoint["kind"];
  switch (tag) {
    case "Ephemeral":
      return t.unitPayload(choice) && { kind: "Ephemeral" };
    case "Dummy":
    case "Hub":
    case "P2P": {
      const repo = payloadTable(t, choice, readHubRepo);
      return repo === undefined ? undefined : { kind: tag, repo };
    }
    case "Gcs":
    case "P2PGcs": {
      const repo = payloadTable(t, choice, readGcsRepo);
      return repo === undefined ? undefined : { kind: tag, repo };
    }
    default:
      return unreachable(tag);
  }
}

function readLrSchedule(t: TableReader): LrSchedule | undefined {
  const choice = t.variant("lr_schedule", LR_SCHEDULE_KINDS);
  if (choice === undefined) return undefined;
  const tag = choice.tag as LrSchedule["kind"];
  return payloadTable(t, choice, (s): LrSchedule | undefined => {
    const baseLr = s.float("base_lr");
    const warmupSteps = s.integer("warmup_steps", "u32");
    const warmupInitLr = s.float("warmup_init_lr");
    const warmup = baseLr === undefined || warmupSteps === undefined || warmupInitLr === undefined
      ? undefined
      : { baseLr, warmupSteps, warmupInitLr };
    switch (tag) {
      case "Constant":
        return warmup && { kind: "Constant", ...warmup };
      case "Linear":
      case "Cosine": {
        const totalSteps = s.integer("total_steps", "u32");
        const finalLr = s.float("final_lr");
        if (warmup === undefined || totalSteps === undefined || finalLr === undefined) {
          return undefined;
        }
        return { kind: tag, ...warmup, totalSteps, finalLr };
      }
      case "WarmupStableDecay": {
        const stableSteps = s.integer("stable_steps", "u32");
        const cosineDecaySteps = s.integer("cosine_decay_steps", "u32");
        const cosineDecayFinalLr = s.float("cosine_decay_final_lr");
        const linearDecaySteps = s.integer("linear_decay_steps", "u32");
        const linearDecayFinalLr = s.float("linear_decay_final_lr");
        if (
          warmup === undefined || stableSteps === undefined || cosineDecaySteps === undefined ||
          cosineDecayFinalLr === undefined || linearDecaySteps === undefined ||
          linearDecayFinalLr === undefined
        ) return undefined;
        return {
          kind: "WarmupStableDecay",
          ...warmup,
          stableSteps,
          cosineDecaySteps,
          cosineDecayFinalLr,
          linearDecaySteps,
          linearDecayFinalLr,
        };
      }
      default:
        return unreachable(tag);
    }
  });
}

function readOptimizer(t: TableReader): OptimizerDefinition | undefined {
  const choice = t.variant("optimizer", OPTIMIZER_KINDS);
  if (choice === undefined) return undefined;
  const tag = choice.tag as OptimizerDefinition["kind"];
  switch (tag) {
    case "Dummy":
      return t.unitPayload(choice) && { kind: "Dummy" };
    case "AdamW":
      return payloadTable(t, choice, (o) => {
        const betas = readBetas(o);
        const weightDecay = o.float("weight_decay");
        const eps = o.float("eps");
        const clipGradNorm = o.optionalFloat("clip_grad_norm");
        if (
          betas === undefined || weightDecay === undefined || eps === undefined ||
          clipGradNorm === undefined
        ) return undefined;
        return { kind: "AdamW", betas, weightDecay, eps, clipGradNorm };
      });
    case "Distro":
      return payloadTable(t, choice, (o) => {
        const clipGradNorm = o.optionalFloat("clip_grad_norm");
        const weightDecay = o.optionalFloat("weight_decay");
        const compressionDecay = o.float("compression_decay");
        const compressionTopk = o.integer("compression_topk", "u16");
        const compressionChunk = o.integer("compression_chunk", "u16");
        const quantize1bit = o.boolean("quantize_1bit");
        if (
          clipGradNorm === undefined || weightDecay === undefined ||
          compressionDecay === undefined || compressionTopk === undefined ||
          compressionChunk === undefined || quantize1bit === undefined
        ) return undefined;
        return {
          kind: "Distro",
          clipGradNorm,
          weightDecay,
          compressionDecay,
          compressionTopk,
          compressionChunk,
          quantize1bit,
        };
      });
    default:
      return unreachable(tag);
  }
}

function readBetas(t: TableReader): [number, number] | undefined {
  const expected = "an array of 2 numbers";
  const betas = t.array("betas", expected);
  if (betas === undefined) return undefined;
  if (betas.length !== 2 || !betas.every((beta) => typeof beta === "number")) {
    t.report("betas", betas, `expected ${expected}`);
    return undefined;
  }
  return [betas[0] as number, betas[1] as number];
}

function unreachable(tag: never): undefined {
  throw new Error(`unhandled variant ${String(tag)}`);
}
