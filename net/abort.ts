/**
 * Cancellation helper for awaiting operations that do not take a signal themselves
 * (reads and writes on a `Deno.Conn`).
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
