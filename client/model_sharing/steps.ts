/**
 * Drives work written as steps (common/steps.ts: a generator that `yield`s at each point where
 * it may pause) giving the event loop a turn at a pause whenever a time slice has run out;
 * `runSteps` (common/) runs them in one go.
 *
 * Why: a Cooldown snapshot digests, encodes and hashes a 1B model's 4.9 GB, seconds of CPU per
 * phase. Run in one go it blocks the event loop, so libp2p (gossip heartbeats, peers fetching
 * blobs), the coordinator connection and the TUI all starve. Turning at every pause instead
 * would cost a timer's turn (a few ms) per tensor; a time slice keeps the loop answering
 * within tens of ms for a small fraction of the work's time.
 *
 * @module
 */

/** Milliseconds of work between two turns of the event loop by default. */
export const STEP_SLICE_MS = 20;

/**
 * Runs `steps` to the end, giving the event loop a turn (a `setTimeout(0)`, so timers and I/O
 * run) at the first pause after every `sliceMs` of work; with `sliceMs` 0, at every pause.
 */
export async function runStepsYielding<T>(
  steps: Generator<void, T>,
  options: { sliceMs?: number; now?: () => number } = {},
): Promise<T> {
  const sliceMs = options.sliceMs ?? STEP_SLICE_MS;
  const now = options.now ?? (() => performance.now());
  let turned = now();
  let step = steps.next();
  while (!step.done) {
    if (now() - turned >= sliceMs) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      turned = now();
    }
    step = steps.next();
  }
  return step.value;
}
