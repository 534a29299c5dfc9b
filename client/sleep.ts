/**
 * An abortable wait, the one every retry loop uses.
 *
 * @example
 * ```ts
 * import { sleep } from "./sleep.ts";
 * const gone = new AbortController();
 * gone.abort(new Error("stopped"));
 * await sleep(5_000, gone.signal).then(() => { throw new Error("aborted waits reject"); }, () => {});
 * ```
 *
 * @module
 */

/** Waits `ms` milliseconds, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
