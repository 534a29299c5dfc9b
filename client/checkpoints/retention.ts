/**
 * `--delete-old-steps` with `--keep-steps N` (Psyche's flags): after a new checkpoint is in place
 * (and uploaded, when this client uploads it), the run's older step folders
 * `{checkpoint_dir}/{run_id}-step{M}` beyond the newest N are deleted, except the one just
 * written and any still being uploaded, which are never touched. Other folders (another run's,
 * `{run_id}-interrupted`, a write's temporary or `.previous` folder) are left alone.
 *
 * {@linkcode stepsToDelete} decides (pure); {@linkcode deleteOldSteps} lists and deletes.
 *
 * @module
 */
import { join } from "node:path";

/** One step folder of a run: its name and step. */
export interface StepFolder {
  readonly name: string;
  readonly step: number;
}

/** The folder name of run `runId`'s checkpoint of `step`. */
export function stepFolderName(runId: string, step: number): string {
  return `${runId}-step${step}`;
}

/** The step folders of run `runId` among `names` (`{runId}-step{N}`, N a whole number). */
export function stepFolders(names: readonly string[], runId: string): StepFolder[] {
  const prefix = `${runId}-step`;
  const out: StepFolder[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const digits = name.slice(prefix.length);
    if (/^(0|[1-9]\d{0,15})$/.test(digits)) out.push({ name, step: Number(digits) });
  }
  return out;
}

/** What to keep: the newest `keep` steps, and every step in `protect`. */
export interface RetentionRule {
  readonly keep: number;
  /** Steps never deleted: the checkpoint just written, those still being uploaded. */
  readonly protect: ReadonlySet<number>;
}

/**
 * The step folders of `runId` among `names` to delete: all but the newest `rule.keep` by step,
 * never one in `rule.protect`. Oldest first.
 *
 * @example
 * ```ts
 * import { stepsToDelete } from "./retention.ts";
 * const names = ["r-step3", "r-step9", "r-step6", "r-interrupted", "q-step1"];
 * const gone = stepsToDelete(names, "r", { keep: 1, protect: new Set([3]) });
 * if (gone.map((f) => f.name).join() !== "r-step6") throw new Error("6 goes, 9 is newest, 3 is uploading");
 * ```
 */
export function stepsToDelete(
  names: readonly string[],
  runId: string,
  rule: RetentionRule,
): StepFolder[] {
  if (!Number.isSafeInteger(rule.keep) || rule.keep < 0) {
    throw new RangeError(`keep must be a non-negative integer, found ${String(rule.keep)}`);
  }
  const newestFirst = stepFolders(names, runId).sort((a, b) => b.step - a.step);
  return newestFirst.slice(rule.keep).filter((f) => !rule.protect.has(f.step)).reverse();
}

/**
 * Deletes the step folders of `runId` in `dir` that {@linkcode stepsToDelete} picks, and returns
 * them (with their paths). A folder that cannot be deleted is reported through `onError` and
 * skipped: cleaning up never stops training.
 */
export async function deleteOldSteps(
  dir: string,
  runId: string,
  rule: RetentionRule,
  onError: (path: string, error: Error) => void = () => {},
): Promise<{ path: string; step: number }[]> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) if (entry.isDirectory) names.push(entry.name);
  } catch (e) {
    onError(dir, e as Error);
    return [];
  }
  const deleted: { path: string; step: number }[] = [];
  for (const folder of stepsToDelete(names, runId, rule)) {
    const path = join(dir, folder.name);
    try {
      await Deno.remove(path, { recursive: true });
      deleted.push({ path, step: folder.step });
    } catch (e) {
      onError(path, e as Error);
    }
  }
  return deleted;
}
