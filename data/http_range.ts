/**
 * HTTP byte-range fetching with the checks and retries a data provider needs:
 * a per-request timeout, exponential backoff on failures that may pass (timeouts,
 * dropped connections, 5xx, short or mislabelled ranges), and an immediate clear
 * error on those that will not (404 and other 4xx, a server that ignores `Range`).
 *
 * @module
 */
import { DataError } from "./errors.ts";
import { abortableSleep, BodyTooLargeError, readBody } from "../net/mod.ts";

/** Retry and timeout settings for HTTP requests. */
export interface HttpFetchOptions {
  /** Milliseconds one request (headers and body) may take (default 5000, as Psyche). */
  timeoutMs?: number;
  /** Tries per request, including the first (default 4). */
  maxAttempts?: number;
  /** Delay before the first retry; doubles each retry (default 200 ms). */
  baseDelayMs?: number;
  /** Largest delay between retries (default 5000 ms). */
  maxDelayMs?: number;
  /** Waits between retries; injectable so tests need not sleep. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The fetch implementation (default the global one). */
  fetch?: typeof fetch;
}

/** Delay before retry number `retry` (1-based): `base * 2^(retry-1)`, capped at `max`. */
export function backoffDelay(retry: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** (retry - 1));
}

/** Fetches sizes and byte ranges of remote files. */
export class HttpRangeClient {
  readonly #timeoutMs: number;
  readonly #maxAttempts: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly #fetch: typeof fetch;

  /** A client with the given retry policy. */
  constructor(options: HttpFetchOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#maxAttempts = options.maxAttempts ?? 4;
    this.#baseDelayMs = options.baseDelayMs ?? 200;
    this.#maxDelayMs = options.maxDelayMs ?? 5000;
    this.#sleep = options.sleep ?? abortableSleep;
    this.#fetch = options.fetch ?? fetch;
    if (!Number.isInteger(this.#maxAttempts) || this.#maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, found ${this.#maxAttempts}`);
    }
  }

  /** The file's size from a `HEAD` request's `Content-Length`. */
  size(url: string, signal?: AbortSignal): Promise<number> {
    return this.#withRetries(url, "HEAD", signal, async (s) => {
      const res = await this.#request(url, { method: "HEAD" }, s);
      await res.body?.cancel();
      if (res.status !== 200) throw statusError(url, res, "HEAD");
      const header = res.headers.get("content-length");
      const size = header === null ? NaN : Number(header);
      if (!Number.isSafeInteger(size) || size < 0) {
        throw new DataError(`${url}: HEAD gave no valid Content-Length (found ${header})`, {
          file: url,
        });
      }
      return size;
    });
  }

  /**
   * A whole small document (a weighted mix's JSON) from a `GET`: status 200 and at most
   * `maxBytes` bytes (default 1 MiB), decoded as UTF-8.
   */
  text(url: string, options: { maxBytes?: number; signal?: AbortSignal } = {}): Promise<string> {
    const maxBytes = options.maxBytes ?? 1 << 20;
    return this.#withRetries(url, "GET", options.signal, async (s) => {
      const res = await this.#request(url, {}, s);
      if (res.status !== 200) {
        await res.body?.cancel();
        throw statusError(url, res, "GET");
      }
      const declared = Number(res.headers.get("content-length") ?? NaN);
      if (declared > maxBytes) {
        await res.body?.cancel();
        throw new DataError(`${url}: ${declared} bytes is more than the ${maxBytes} expected`, {
          file: url,
        });
      }
      let bytes: Uint8Array;
      try {
        bytes = await readBody(res, s, maxBytes);
      } catch (cause) {
        if (s.aborted) throw s.reason;
        if (cause instanceof BodyTooLargeError) {
          throw new DataError(`${url}: more than the ${maxBytes} bytes expected`, { file: url });
        }
        throw new DataError(`${url}: connection lost while reading: ${(cause as Error).message}`, {
          file: url,
          retryable: true,
        }, { cause });
      }
      try {
        return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      } catch (cause) {
        throw new DataError(`${url}: not UTF-8 text`, { file: url }, { cause });
      }
    });
  }

  /**
   * Exactly `length` bytes at `offset` (one `Range` request). Checks the status is 206,
   * the `Content-Range` names this range, and the body has exactly `length` bytes.
   */
  range(url: string, offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (length <= 0) return Promise.resolve(new Uint8Array(0));
    const last = offset + length - 1;
    const what = `range ${offset}-${last}`;
    return this.#withRetries(url, what, signal, async (s) => {
      const res = await this.#request(url, { headers: { Range: `bytes=${offset}-${last}` } }, s);
      if (res.status !== 206) {
        await res.body?.cancel();
        if (res.status === 200) {
          throw new DataError(
            `${url}: server ignored the Range header (status 200 for bytes ${offset}-${last})`,
            { file: url, offset },
          );
        }
        throw statusError(url, res, what);
      }
      const contentRange = res.headers.get("content-range");
      const m = contentRange === null ? null : /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(contentRange);
      if (m === null || Number(m[1]) !== offset || Number(m[2]) !== last) {
        await res.body?.cancel();
        throw new DataError(
          `${url}: asked for bytes ${offset}-${last}, server sent Content-Range ${contentRange}`,
          { file: url, offset, retryable: true },
        );
      }
      let bytes: Uint8Array;
      try {
        bytes = await readBody(res, s, length);
      } catch (cause) {
        if (s.aborted) throw s.reason;
        if (cause instanceof BodyTooLargeError) {
          throw new DataError(
            `${url}: asked for bytes ${offset}-${last} (${length} bytes), server sent more`,
            { file: url, offset, retryable: true },
          );
        }
        throw new DataError(
          `${url}: connection lost while reading bytes ${offset}-${last}: ${
            (cause as Error).message
          }`,
          { file: url, offset, retryable: true },
          { cause },
        );
      }
      if (bytes.length !== length) {
        throw new DataError(
          `${url}: short read at byte offset ${offset}: expected ${length} bytes, got ${bytes.length}`,
          { file: url, offset: offset + Math.min(bytes.length, length), retryable: true },
        );
      }
      return bytes;
    });
  }

  async #request(url: string, init: RequestInit, signal: AbortSignal): Promise<Response> {
    try {
      return await this.#fetch(url, { ...init, signal });
    } catch (cause) {
      if (signal.aborted) throw signal.reason;
      throw new DataError(`${url}: request failed: ${(cause as Error).message}`, {
        file: url,
        retryable: true,
      }, { cause });
    }
  }

  /** Runs `attempt` with a fresh timeout each try, retrying retryable DataErrors. */
  async #withRetries<T>(
    url: string,
    what: string,
    signal: AbortSignal | undefined,
    attempt: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    let last: DataError | undefined;
    for (let i = 1; i <= this.#maxAttempts; i++) {
      if (i > 1) {
        await this.#sleep(backoffDelay(i - 1, this.#baseDelayMs, this.#maxDelayMs), signal);
      }
      signal?.throwIfAborted();
      const timeout = new AbortController();
      const timer = setTimeout(() => {
        timeout.abort(
          new DataError(`${url}: ${what} timed out after ${this.#timeoutMs} ms`, {
            file: url,
            retryable: true,
          }),
        );
      }, this.#timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout.signal]) : timeout.signal;
      try {
        return await attempt(combined);
      } catch (e) {
        signal?.throwIfAborted();
        const error = e instanceof DataError
          ? e
          : timeout.signal.aborted
          ? timeout.signal.reason as DataError
          : null;
        if (error === null) throw e;
        if (!error.retryable) throw error;
        last = error;
      } finally {
        clearTimeout(timer);
      }
    }
    throw new DataError(
      `${url}: ${what} failed after ${this.#maxAttempts} attempts; last error: ${last!.message}`,
      { file: url, offset: last!.offset, retryable: true },
      { cause: last },
    );
  }
}

function statusError(url: string, res: Response, what: string): DataError {
  const retryable = res.status >= 500 || res.status === 408 || res.status === 429;
  return new DataError(`${url}: HTTP ${res.status} ${res.statusText} for ${what}`, {
    file: url,
    retryable,
  });
}
