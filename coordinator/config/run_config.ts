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
import { readRunConfig } from "./read.ts";
import { validateRunConfigDraft } from "./validate.ts";
import type { RunConfig, RunConfigDraft } from "./types.ts";
import { ConfigError, type ConfigIssue, parseTomlText, TableReader } from "../../common/mod.ts";
import type { CoordinatorConfig, CoordinatorProgress, LlmModel } from "../core/mod.ts";

/**
 * Parses and validates state.toml text. `source` names the file in error messages.
 * Throws {@link ConfigError} with every problem found.
 *
 * @example
 * ```ts
 * import { ConfigError } from "../../common/mod.ts";
 * import { parseRunConfig } from "./run_config.ts";
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
