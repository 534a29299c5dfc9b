/**
 * Typed run config → state.toml text, in Psyche's layout, so a saved run can be reloaded
 * with `parseRunConfig` (the save-state feature writes `{run_id}-step{n}.toml` with this).
 * Optional values that are `null` are left out; `max_clients` is always written.
 *
 * @module
 */
import { stringify } from "smol-toml";
import type { RunConfig } from "./types.ts";
import {
  type DataLocation,
  type HttpLocation,
  type LrSchedule,
  type OptimizerDefinition,
  toHex,
} from "../../common/mod.ts";
import type { Checkpoint, CoordinatorConfig, LlmModel } from "../core/mod.ts";

type Toml = Record<string, unknown>;

/** Drops `null` entries (absent optional keys). */
function compact(table: Toml): Toml {
  return Object.fromEntries(Object.entries(table).filter(([, value]) => value !== null));
}

/**
 * Renders a run config as state.toml text. `parseRunConfig(runConfigToToml(c), ...)` gives
 * back a value deep-equal to `c`.
 */
export function runConfigToToml(run: RunConfig): string {
  const doc: Toml = {
    run_id: run.runId,
    run_state: run.runState,
    config: coordinatorConfigToToml(run.config),
    model: { LLM: llmToToml(run.model) },
    progress: compact({
      epoch: run.progress.epoch,
      step: run.progress.step,
      epoch_start_data_index: run.progress.epochStartDataIndex,
      params_digest: run.paramsDigest ? toHex(run.paramsDigest) : null,
    }),
  };
  return stringify(doc);
}

function coordinatorConfigToToml(c: CoordinatorConfig): Toml {
  return {
    warmup_time: c.warmupTime,
    cooldown_time: c.cooldownTime,
    max_round_train_time: c.maxRoundTrainTime,
    round_witness_time: c.roundWitnessTime,
    global_batch_size_warmup_tokens: c.globalBatchSizeWarmupTokens,
    epoch_time: c.epochTime,
    total_steps: c.totalSteps,
    init_min_clients: c.initMinClients,
    min_clients: c.minClients,
    witness_nodes: c.witnessNodes,
    global_batch_size_start: c.globalBatchSizeStart,
    global_batch_size_end: c.globalBatchSizeEnd,
    verification_percent: c.verificationPercent,
    waiting_for_members_extra_time: c.waitingForMembersExtraTime,
    max_clients: c.maxClients,
    verification_bar_epochs: c.verificationBarEpochs,
  };
}

function llmToToml(m: LlmModel): Toml {
  return {
    architecture: m.architecture,
    data_type: m.dataType,
    max_seq_len: m.maxSeqLen,
    cold_start_warmup_steps: m.coldStartWarmupSteps,
    snapshot_dtype: m.snapshotDtype,
    data_location: dataLocationToToml(m.dataLocation),
    checkpoint: checkpointToToml(m.checkpoint),
    lr_schedule: lrScheduleToToml(m.lrSchedule),
    optimizer: optimizerToToml(m.optimizer),
  };
}

function dataLocationToToml(d: DataLocation): unknown {
  switch (d.kind) {
    case "Dummy":
      return "Dummy";
    case "Server":
      return { Server: d.address };
    case "Local":
      return { Local: d.path };
    case "WeightedHttp":
      return { WeightedHttp: d.url };
    case "Preprocessed":
      return { Preprocessed: d.source };
    case "Http":
      return {
        Http: {
          location: httpLocationToToml(d.location),
          token_size_in_bytes: d.tokenSizeInBytes,
          shuffle: d.shuffle.kind === "DontShuffle"
            ? "DontShuffle"
            : { Seeded: [...d.shuffle.seed] },
        },
      };
  }
}

function httpLocationToToml(h: HttpLocation): Toml {
  switch (h.kind) {
    case "SingleUrl":
      return { SingleUrl: h.url };
    case "NumberedFiles":
      return {
        NumberedFiles: {
          url_template: h.urlTemplate,
          start_index: h.startIndex,
          n_left_pad_zeros: h.nLeftPadZeros,
          num_files: h.numFiles,
        },
      };
    case "Gcp":
      return { Gcp: { bucket_name: h.bucketName, filter_directory: h.filterDirectory } };
  }
}

function checkpointToToml(c: Checkpoint): unknown {
  switch (c.kind) {
    case "Ephemeral":
      return "Ephemeral";
    case "Dummy":
    case "Hub":
    case "P2P":
      return { [c.kind]: compact({ repo_id: c.repo.repoId, revision: c.repo.revision }) };
    case "Gcs":
    case "P2PGcs":
      return { [c.kind]: compact({ bucket: c.repo.bucket, prefix: c.repo.prefix }) };
  }
}

function lrScheduleToToml(s: LrSchedule): Toml {
  const warmup = {
    base_lr: s.baseLr,
    warmup_steps: s.warmupSteps,
    warmup_init_lr: s.warmupInitLr,
  };
  switch (s.kind) {
    case "Constant":
      return { Constant: warmup };
    case "Linear":
    case "Cosine":
      return { [s.kind]: { ...warmup, total_steps: s.totalSteps, final_lr: s.finalLr } };
    case "WarmupStableDecay":
      return {
        WarmupStableDecay: {
          ...warmup,
          stable_steps: s.stableSteps,
          cosine_decay_steps: s.cosineDecaySteps,
          cosine_decay_final_lr: s.cosineDecayFinalLr,
          linear_decay_steps: s.linearDecaySteps,
          linear_decay_final_lr: s.linearDecayFinalLr,
        },
      };
  }
}

function optimizerToToml(o: OptimizerDefinition): unknown {
  switch (o.kind) {
    case "Dummy":
      return "Dummy";
    case "AdamW":
      return {
        AdamW: compact({
          betas: [...o.betas],
          weight_decay: o.weightDecay,
          eps: o.eps,
          clip_grad_norm: o.clipGradNorm,
        }),
      };
    case "Distro":
      return {
        Distro: compact({
          clip_grad_norm: o.clipGradNorm,
          weight_decay: o.weightDecay,
          compression_decay: o.compressionDecay,
          compression_topk: o.compressionTopk,
          compression_chunk: o.compressionChunk,
          quantize_1bit: o.quantize1bit,
        }),
      };
  }
}
