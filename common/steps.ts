/**
 * Work written as steps: a generator that `yield`s wherever it may pause (a chunk hashed, a
 * tensor encoded), so one piece of code serves a caller that runs it in one go and one that
 * gives the event loop turns between steps (client/model_sharing/steps.ts).
 *
 * @module
 */

/**
 * Runs `steps` to the end without pausing; returns what they return.
 *
 * @example
 * ```ts
 * import { runSteps } from "./steps.ts";
 * function* count(): Generator<void, number> {
 *   yield;
 *   yield;
 *   return 2;
 * }
 * console.assert(runSteps(count()) === 2);
 * ```
 */
export function runSteps<T>(steps: Generator<void, T>): T {
  let step = steps.next();
  while (!step.done) step = steps.next();
  return step.value;
}
