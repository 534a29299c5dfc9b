/**
 * Learning-rate schedules, exactly as Psyche computes them (`LearningRateSchedule::get_lr`
 * in shared/core/src/definitions.rs): same branches, same f64 operations in the same
 * order, so every client derives the same rate for a step.
 *
 * Every schedule starts with a linear warmup from `warmupInitLr` to `baseLr` over
 * `warmupSteps` steps; then:
 * - `Constant`: `baseLr`.
 * - `Linear`: straight line from `baseLr` (at `warmupSteps`) to `finalLr` (at `totalSteps`),
 *   then `finalLr`.
 * - `Cosine`: `finalLr + (baseLr - finalLr) * 0.5 * (1 + cos(pi * progress))` with
 *   `progress = (step - warmupSteps) / (totalSteps - warmupSteps)`. Like Psyche it does not
 *   clamp past `totalSteps` (the curve rises again), which is why the run-config validator
 *   requires `totalSteps >= config.total_steps`.
 * - `WarmupStableDecay`: `baseLr` for `stableSteps`, a cosine to `cosineDecayFinalLr` over
 *   `cosineDecaySteps`, a line to `linearDecayFinalLr` over `linearDecaySteps`, then
 *   `linearDecayFinalLr`.
 *
 * @module
 */
import type { LrSchedule } from "./types.ts";

/**
 * The learning rate for `step` (an unsigned 32-bit step number, as Psyche's `u32`).
 *
 * Throws `RangeError` for a step that is not a u32 and where Psyche would panic or produce
 * NaN: a cosine schedule evaluated at or after `warmupSteps` when `totalSteps <= warmupSteps`,
 * or a WarmupStableDecay schedule whose final rates are not descending.
 *
 * @example
 * ```ts
 * import { learningRate } from "./lr_schedule.ts";
 * const cosine = {
 *   kind: "Cosine", baseLr: 0.01, warmupSteps: 10, warmupInitLr: 0.001, totalSteps: 110, finalLr: 0,
 * } as const;
 * if (learningRate(cosine, 60) !== 0.005) throw new Error("halfway down the cosine");
 * ```
 */
export function learningRate(schedule: LrSchedule, step: number): number {
  if (!Number.isInteger(step) || step < 0 || step > 0xffff_ffff) {
    throw new RangeError(`learningRate: step must be a u32 integer, found ${step}`);
  }
  if (schedule.kind === "WarmupStableDecay") assertDescendingFinals(schedule);
  if (step < schedule.warmupSteps) {
    return schedule.warmupInitLr +
      (schedule.baseLr - schedule.warmupInitLr) * (step / schedule.warmupSteps);
  }
  switch (schedule.kind) {
    case "Constant":
      return schedule.baseLr;
    case "Linear":
      if (step < schedule.totalSteps) {
        return schedule.baseLr +
          (schedule.finalLr - schedule.baseLr) *
            ((step - schedule.warmupSteps) / (schedule.totalSteps - schedule.warmupSteps));
      }
      return schedule.finalLr;
    case "Cosine": {
      if (schedule.totalSteps <= schedule.warmupSteps) {
        throw new RangeError(
          `learningRate: Cosine totalSteps (${schedule.totalSteps}) must exceed warmupSteps ` +
            `(${schedule.warmupSteps})`,
        );
      }
      const progress = (step - schedule.warmupSteps) /
        (schedule.totalSteps - schedule.warmupSteps);
      const cosineDecay = 0.5 * (1 + Math.cos(Math.PI * progress));
      return schedule.finalLr + (schedule.baseLr - schedule.finalLr) * cosineDecay;
    }
    case "WarmupStableDecay":
      return warmupStableDecayAfterWarmup(schedule, step);
    default: {
      const unknown: never = schedule;
      throw new TypeError(`learningRate: unknown schedule ${JSON.stringify(unknown)}`);
    }
  }
}

type WarmupStableDecay = Extract<LrSchedule, { kind: "WarmupStableDecay" }>;

/** Psyche asserts these on every call, warmup included. */
function assertDescendingFinals(s: WarmupStableDecay): void {
  if (!(s.cosineDecayFinalLr <= s.baseLr) || !(s.linearDecayFinalLr <= s.cosineDecayFinalLr)) {
    throw new RangeError(
      `learningRate: WarmupStableDecay needs linearDecayFinalLr (${s.linearDecayFinalLr}) <= ` +
        `cosineDecayFinalLr (${s.cosineDecayFinalLr}) <= baseLr (${s.baseLr})`,
    );
  }
}

function warmupStableDecayAfterWarmup(s: WarmupStableDecay, step: number): number {
  const stableEnd = s.stableSteps + s.warmupSteps;
  const cosineEnd = stableEnd + s.cosineDecaySteps;
  const linearEnd = cosineEnd + s.linearDecaySteps;
  if (step < stableEnd) return s.baseLr;
  if (step < cosineEnd) {
    const progress = (step - stableEnd) / s.cosineDecaySteps;
    const cosineDecay = 0.5 * (1 + Math.cos(Math.PI * progress));
    return s.cosineDecayFinalLr + (s.baseLr - s.cosineDecayFinalLr) * cosineDecay;
  }
  if (step < linearEnd) {
    return s.cosineDecayFinalLr -
      (s.cosineDecayFinalLr - s.linearDecayFinalLr) * ((step - cosineEnd) / s.linearDecaySteps);
  }
  return s.linearDecayFinalLr;
}
