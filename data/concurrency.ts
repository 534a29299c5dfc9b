/**
 * Bounded parallelism that cleans up after itself: on the first failure the other
 * tasks are told to stop (through their signal) and awaited, so nothing keeps running
 * after the caller has seen the error.
 *
 * @module
 */

/**
 * Runs `task(i, signal)` for `i = 0..count-1`, at most `lanes` at a time. Rejects with
 * the first task error after every started task has settled.
 *
 * @example
 * ```ts
 * import { forEachLimited } from "./concurrency.ts";
 * const seen: number[] = [];
 * await forEachLimited(5, 2, async (i) => void seen.push(i));
 * if (seen.length !== 5) throw new Error("missed a task");
 * ```
 */
export async function forEachLimited(
  count: number,
  lanes: number,
  task: (index: number, signal: AbortSignal) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  const stop = new AbortController();
  const combined = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
  let next = 0;
  let firstError: { error: unknown } | null = null;
  const worker = async () => {
    while (next < count && firstError === null) {
      combined.throwIfAborted();
      const i = next++;
      try {
        await task(i, combined);
      } catch (error) {
        firstError ??= { error };
        stop.abort(error);
        return;
      }
    }
  };
  const n = Math.max(1, Math.min(lanes, count));
  await Promise.allSettled(Array.from({ length: n }, worker));
  if (firstError !== null) throw (firstError as { error: unknown }).error;
  signal?.throwIfAborted();
}
