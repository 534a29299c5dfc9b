/**
 * The run configuration (Psyche's `state.toml`): parse it into a {@link RunConfig}, check its
 * rules, write it back, and check a TCP data server's config against it. Pure: text in,
 * values or every problem out; reading the file is the caller's. docs/run-config.md lists
 * every key and rule.
 *
 * @module
 */
export type { RunConfig, RunConfigDraft } from "./types.ts";
export { assertValidRunConfig, parseRunConfig, validateRunConfig } from "./run_config.ts";
export {
  CHECKPOINT_KINDS,
  DATA_LOCATION_KINDS,
  DEFAULT_PROGRESS,
  HTTP_LOCATION_KINDS,
  HTTP_SHUFFLE_SEED_BYTES,
  LLM_ARCHITECTURES,
  LLM_DATA_TYPES,
  LR_SCHEDULE_KINDS,
  OPTIMIZER_KINDS,
  readHttpDataLocation,
  readRunConfig,
  readShuffle,
} from "./read.ts";
export {
  crossCheckDataConfig,
  type DataConfigMismatch,
  MAX_ADAM_EPS,
  MAX_CLIP_GRAD_NORM,
  MAX_GLOBAL_BATCH_SIZE,
  MAX_LEARNING_RATE,
  MAX_WEIGHT_DECAY,
  validateHttpDataLocation,
  validateRunConfigDraft,
} from "./validate.ts";
export { runConfigToToml } from "./write.ts";
