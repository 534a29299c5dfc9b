/**
 * Cancellation helpers: awaiting operations that do not take a signal themselves (reads and
 * writes on a `Deno.Conn`), and the abortable wait every retry loop uses.
 *
 * @module
 */

/**
 * Settles with `promise`, or rejects with the signal's reason as soon as it aborts.
 * The underlying operation keeps running: callers close the connection to end it.
 */
export function withAbort<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      promise.catch(() => {});
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Waits `ms` milliseconds, or rejects with the signal's reason when it aborts first.
 *
 * @example
 * ```ts
 * import { abortableSleep } from "./abort.ts";
 * const gone = new AbortController();
 * gone.abort(new Error("stopped"));
 * await abortableSleep(5_000, gone.signal).then(() => {
 *   throw new Error("aborted waits reject");
 * }, () => {});
 * ```
 */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
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
