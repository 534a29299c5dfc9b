/**
 * Whether a coordinator's refusal of an intent is only the run having moved on: the state the
 * intent was planned from is no longer the coordinator's latest (another run state, epoch or
 * step). That happens whenever a request crosses a transition in flight, and in bulk when a
 * client that was cut off catches up on a backlog of states: each one plans intents that the
 * coordinator, already further on, refuses. Those are expected and logged as `outdated`; a
 * refusal of an intent planned from the latest state is a real error.
 *
 * Pure.
 *
 * @module
 */
import type { CoordinatorState } from "../coordinator/core/mod.ts";

/** Whether `latest` has moved on from `planned` (see the module doc). */
export function movedOn(
  planned: CoordinatorState | null,
  latest: CoordinatorState | null,
): boolean {
  if (planned === null || latest === null || planned === latest) return false;
  return planned.runState !== latest.runState ||
    planned.progress.epoch !== latest.progress.epoch ||
    planned.progress.step !== latest.progress.step;
}
