/**
 * What a run config is, whole ({@link RunConfig}) and while it is being read
 * ({@link RunConfigDraft}). Their own module, so the reader, the validator and the writer
 * depend on the types and run_config.ts depends on all three, with no loop between them.
 *
 * @module
 */
import type { CoordinatorConfig, CoordinatorProgress, LlmModel, RunState } from "../core/mod.ts";

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
