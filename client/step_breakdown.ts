/**
 * Where one step's time went at a client, for its telemetry notice (docs/protocol.md,
 * "Telemetry"): the moments the client noted while it trained, published and applied the step,
 * cut into five parts that add up to the step's wall time at this client, from its round's
 * start to the end of its apply.
 *
 * ```text
 * roundStart  trainStart    trainEnd   publishEnd   applyQueued  applyStart   applyEnd
 *     |--wait--|----train----|--encode--|--exchange--|----wait----|---apply---|
 * ```
 *
 * `exchange` is the time from its own result being announced to the apply being due (the
 * peers' results arriving and the round's witness phase); `wait` is time spent waiting for the
 * batch to start and for the GPU queue (work of the next step queued before the apply). Pure.
 *
 * @module
 */
import { MAX_PHASE_MS, type StepPhase } from "../coordinator/server/mod.ts";

/** The moments (ms, one monotonic clock) the client noted for a step it trained and applied. */
export interface StepMoments {
  readonly roundStart: number;
  readonly trainStart: number;
  readonly trainEnd: number;
  readonly publishEnd: number;
  /** When the apply was dispatched (its results due), before it waited for the GPU queue. */
  readonly applyQueued: number;
  readonly applyStart: number;
  readonly applyEnd: number;
}

/** `to − from`, as a phase may report it: 0 for a clock that went back, at most MAX_PHASE_MS. */
function span(from: number, to: number): number {
  const ms = to - from;
  return Number.isFinite(ms) ? Math.min(MAX_PHASE_MS, Math.max(0, ms)) : 0;
}

/**
 * The step's breakdown in ms.
 *
 * @example
 * ```ts
 * import { stepBreakdown } from "./step_breakdown.ts";
 * const ms = stepBreakdown({
 *   roundStart: 0, trainStart: 5, trainEnd: 105, publishEnd: 115,
 *   applyQueued: 300, applyStart: 310, applyEnd: 330,
 * });
 * if (ms.train !== 100 || ms.exchange !== 185 || ms.wait !== 15) throw new Error("breakdown");
 * ```
 */
export function stepBreakdown(m: StepMoments): Record<StepPhase, number> {
  return {
    train: span(m.trainStart, m.trainEnd),
    encode: span(m.trainEnd, m.publishEnd),
    exchange: span(m.publishEnd, m.applyQueued),
    apply: span(m.applyStart, m.applyEnd),
    wait: Math.min(
      MAX_PHASE_MS,
      span(m.roundStart, m.trainStart) + span(m.applyQueued, m.applyStart),
    ),
  };
}
