/**
 * Reading a fetch response's body under a signal that the read itself obeys. Deno's fetch does
 * not always end a body read that is pending when the request's signal aborts (a test of the
 * Hub download's stall watchdog hung about one run in five on it), so a timeout or a caller's
 * abort given only to `fetch` can leave `response.arrayBuffer()` waiting forever.
 *
 * @module
 */
import { withAbort } from "./abort.ts";
import { concatBytes } from "../common/mod.ts";

/** A body longer than the caller allowed. */
export class BodyTooLargeError extends RangeError {
  /** Builds the error. */
  constructor(readonly limit: number, readonly received: number) {
    super(`the response body exceeds its limit of ${limit} bytes (${received} bytes so far)`);
    this.name = "BodyTooLargeError";
  }
}

/**
 * The whole body of `response`. Rejects with the signal's reason as soon as it aborts, and with
 * a {@link BodyTooLargeError} once more than `maxBytes` arrived; either way the body is
 * cancelled, so the connection is let go.
 */
export async function readBody(
  response: Response,
  signal: AbortSignal,
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await withAbort(reader.read(), signal);
      if (done) break;
      total += value.length;
      if (total > maxBytes) throw new BodyTooLargeError(maxBytes, total);
      chunks.push(value);
    }
  } catch (error) {
    reader.cancel(error).catch(() => {});
    throw error;
  }
  return chunks.length === 1 ? chunks[0] : concatBytes(chunks);
}

/** Called around each read of a body that {@link obeyingSignal} wraps (a stall watchdog's arm). */
export interface ReadHooks {
  readonly beforeRead?: () => void;
  readonly afterRead?: () => void;
}

/**
 * `response` with a body whose every read races `signal`: once it aborts, a pending read rejects
 * with its reason and the original body is cancelled. For responses handed to code that reads
 * them itself (a library's `fetch` option).
 */
export function obeyingSignal(
  response: Response,
  signal: AbortSignal,
  hooks: ReadHooks = {},
): Response {
  if (response.body === null) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      hooks.beforeRead?.();
      try {
        const { done, value } = await withAbort(reader.read(), signal);
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        if (signal.aborted) reader.cancel(signal.reason).catch(() => {});
        controller.error(signal.aborted ? signal.reason : error);
      } finally {
        hooks.afterRead?.();
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
