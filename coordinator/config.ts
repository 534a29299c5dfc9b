/**
 * The run configuration (Psyche's `state.toml`): parse, validate and write it.
 *
 * - {@link parseRunConfig}: TOML text → {@link RunConfig}, throwing a {@link ConfigError}
 *   that lists every problem (syntax, missing/unknown keys, wrong types, broken rules).
 * - {@link validateRunConfig}: the rules alone, for configs built in code.
 * - {@link runConfigToToml}: the inverse of `parseRunConfig` (saved run states).
 *
 * The layout, every key and every rule are described in docs/run-config.md.
 *
 * @module
 */
import { ConfigError, type ConfigIssue } from "../common/config_error.ts";
import { parseTomlText, TableReader } from "../common/config_reader.ts";
import { readRunConfig } from "./config_toml.ts";
import { validateRunConfigDraft } from "./config_validate.ts";
import type { CoordinatorConfig, CoordinatorProgress, LlmModel, RunState } from "./core/types.ts";

export { ConfigError, type ConfigIssue, formatIssue } from "../common/config_error.ts";
export { DEFAULT_PROGRESS } from "./config_toml.ts";
export {
  crossCheckDataConfig,
  type DataConfigMismatch,
  MAX_GLOBAL_BATCH_SIZE,
} from "./config_validate.ts";
export { runConfigToToml } from "./config_write.ts";

/** A whole, validated run config: what the coordinator starts a run from. */
export interface RunConfig {
  /** Run identifier (at most MAX_RUN_ID_BYTES UTF-8 bytes). */
  runId: string;
  /** State to start in; the TCP server resets it to WaitingForMembers when it loads a run. */
  runState: RunState;
  /** `[config]`: timing, membership and batch sizes. */
  config: CoordinatorConfig;
  /** `[model.LLM]`: architecture, data, checkpoint, schedule and optimizer. */
  model: LlmModel;
  /** `[progress]`, or DEFAULT_PROGRESS when the file has none. */
  progress: CoordinatorProgress;
  /**
   * `progress.params_digest`: the run's recorded digest of the parameters of `progress.step`
   * (a saved run carries it, so clients that rejoin a restarted coordinator load only the
   * run's model). Absent (null or undefined) when unknown.
   */
  paramsDigest?: Uint8Array | null;
}

/**
 * A run config as far as it could be read: any value the reader rejected is `undefined`.
 * The validator accepts drafts so that one pass reports every problem.
 */
export interface RunConfigDraft {
  /** `run_id`, if it was read. */
  runId?: string;
  /** `run_state`, if it was read. */
  runState?: RunState;
  /** `[config]` keys that were read. */
  config: Partial<CoordinatorConfig>;
  /** `[model.LLM]` keys that were read. */
  model: Partial<LlmModel>;
  /** `[progress]` keys that were read (defaults filled in). */
  progress: Partial<CoordinatorProgress>;
  /** `progress.params_digest`: null when absent, undefined after a reported problem. */
  paramsDigest?: Uint8Array | null;
}

/**
 * Parses and validates state.toml text. `source` names the file in error messages.
 * Throws {@link ConfigError} with every problem found.
 *
 * @example
 * ```ts
 * import { ConfigError, parseRunConfig } from "./config.ts";
 * try {
 *   parseRunConfig('run_id = "x"', "state.toml");
 * } catch (error) {
 *   if (!(error instanceof ConfigError)) throw error;
 *   // run_state, [config] and [model] are missing
 *   if (error.issues.length !== 3) throw new Error(error.message);
 * }
 * ```
 */
export function parseRunConfig(text: string, source: string): RunConfig {
  const issues: ConfigIssue[] = [];
  const doc = parseTomlText(text, issues);
  if (doc === undefined) throw new ConfigError(source, issues);
  const draft = readRunConfig(new TableReader(doc, "", issues));
  issues.push(...validateRunConfigDraft(draft));
  const run = issues.length === 0 ? completeDraft(draft) : undefined;
  if (run === undefined) throw new ConfigError(source, issues);
  return run;
}

/**
 * Every rule the config breaks (empty when valid), for configs built in code.
 * Checks integer widths too, since no TOML reader saw these values.
 */
export function validateRunConfig(run: RunConfig): ConfigIssue[] {
  return validateRunConfigDraft(run);
}

/** Throws {@link ConfigError} (with `source` as its origin) when the config breaks any rule. */
export function assertValidRunConfig(run: RunConfig, source = "run config"): void {
  const issues = validateRunConfig(run);
  if (issues.length > 0) throw new ConfigError(source, issues);
}

function completeDraft(draft: RunConfigDraft): RunConfig | undefined {
  const { runId, runState } = draft;
  const config = allDefined(draft.config);
  const model = allDefined(draft.model);
  const progress = allDefined(draft.progress);
  if (
    runId === undefined || runState === undefined || config === undefined ||
    model === undefined || progress === undefined
  ) return undefined;
  if (draft.paramsDigest === undefined) return undefined;
  return {
    runId,
    runState,
    config: config as CoordinatorConfig,
    model: model as LlmModel,
    progress: progress as CoordinatorProgress,
    ...(draft.paramsDigest === null ? {} : { paramsDigest: draft.paramsDigest }),
  };
}

function allDefined<T extends object>(partial: Partial<T>): Partial<T> | undefined {
  return Object.values(partial).every((value) => value !== undefined) ? partial : undefined;
}
