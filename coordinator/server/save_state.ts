/**
 * Saving and resuming a run (`--save-state-dir`): at every successful epoch end the server
 * writes the run as a state.toml (`{run_id}-step{n}.toml`, Psyche's name) that
 * `coordinator run --state` loads to resume at the saved step and checkpoint. Only what
 * outlives an epoch is saved (config, model with its checkpoint, progress, and the digest
 * the run recorded for the parameters of the saved step, so that clients resume only from
 * those parameters); clients and rounds are per-epoch and start empty, as Psyche's
 * `reset_ephemeral` does.
 *
 * @module
 */
import { join } from "node:path";
import { type CoordinatorState, createCoordinator, recordedDigest } from "../core/mod.ts";
import { parseRunConfig, type RunConfig, runConfigToToml } from "../config/mod.ts";

/** File name of the run saved at `step`: unsafe characters of the run id become `_`. */
export function savedStateFileName(runId: string, step: number): string {
  return `${runId.replace(/[^A-Za-z0-9._-]/g, "_")}-step${step}.toml`;
}

/**
 * The run config that resumes `state`: WaitingForMembers (Paused stays Paused), the
 * state's config with `warmupTime` as configured (not an `--init-warmup-time` override),
 * its model (checkpoint included) and progress.
 */
export function resumableRunConfig(state: CoordinatorState, warmupTime: number): RunConfig {
  return {
    runId: state.runId,
    runState: state.runState === "Paused" ? "Paused" : "WaitingForMembers",
    config: { ...state.config, warmupTime },
    model: structuredClone(state.model),
    progress: { ...state.progress },
    paramsDigest: recordedDigest(state.paramsDigests, state.progress.step),
  };
}

/**
 * Writes `run` into `dir` (created if missing) as `{run_id}-step{n}.toml`, atomically (a
 * temporary file renamed into place), and returns the path.
 */
export async function saveRunConfig(dir: string, run: RunConfig): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  const path = join(dir, savedStateFileName(run.runId, run.progress.step));
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, runConfigToToml(run));
  await Deno.rename(tmp, path);
  return path;
}

/**
 * A coordinator for `run` starting at `now` (seconds): WaitingForMembers, or Paused when
 * the file says so. Throws ConfigError / RangeError naming what is wrong.
 */
export function coordinatorFromRunConfig(run: RunConfig, now: number): CoordinatorState {
  return createCoordinator({
    runId: run.runId,
    config: run.config,
    model: run.model,
    progress: run.progress,
    paramsDigests: run.paramsDigest ? [{ step: run.progress.step, digest: run.paramsDigest }] : [],
    now,
    paused: run.runState === "Paused",
  });
}

/** Parses state.toml text (`source` names it in errors) into a coordinator at `now`. */
export function coordinatorFromToml(text: string, source: string, now: number): CoordinatorState {
  return coordinatorFromRunConfig(parseRunConfig(text, source), now);
}
