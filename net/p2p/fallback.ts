/**
 * How a download walks its providers: try each usable provider in order, each attempt failing
 * once it makes no progress for the policy's `attemptTimeoutMs` (a stall timeout, re-armed by
 * every chunk received, so a large transfer over a slow link completes while a stalled one is
 * given up on); a provider that served bytes not matching the requested hash is marked bad and never
 * asked again; when every provider failed, wait `backoffMs * 2^round` (capped) and go round
 * again, up to `retries` extra rounds (Psyche's DisTrO-result policy: 2 s x 2^n, 3 retries).
 *
 * The transfer itself is the `attempt` callback and time is injected (`sleep`, `watchdog`), so
 * the policy is tested without a network or a clock.
 *
 * @module
 */
import { abortableSleep } from "../mod.ts";

/** Retry and timeout settings for one download. */
export interface RetryPolicy {
  /**
   * Milliseconds one attempt against one provider may go without progress: until its first
   * answer, then between two chunks of content.
   */
  attemptTimeoutMs: number;
  /** Extra rounds over all providers after the first one fails. */
  retries: number;
  /** Wait before the first retry round; doubled each round. */
  backoffMs: number;
  /** Longest wait between rounds. */
  maxBackoffMs: number;
}

/** Psyche's DisTrO-result policy, with a 30 s attempt timeout for our small payloads. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = {
  attemptTimeoutMs: 30_000,
  retries: 3,
  backoffMs: 2_000,
  maxBackoffMs: 30_000,
};

/** Why one attempt at one provider failed. */
export type AttemptFailureCode =
  | "not-found"
  | "hash-mismatch"
  | "too-large"
  | "over-budget"
  | "protocol"
  | "timeout"
  | "unreachable";

/** One attempt at one provider failed; `code` says why. Thrown by attempt functions. */
export class PayloadAttemptError extends Error {
  /** Why the attempt failed. */
  readonly code: AttemptFailureCode;
  /** Builds the error. */
  constructor(code: AttemptFailureCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PayloadAttemptError";
    this.code = code;
  }
}

/** One failed attempt, as recorded in a `PayloadFetchError`. */
export interface FailedAttempt {
  provider: string;
  round: number;
  code: AttemptFailureCode;
  message: string;
  /** The byte the attempt asked from, when it went on from bytes an earlier one left. */
  resumedFrom?: number;
}

/** Every provider failed in every round (or none was usable). */
export class PayloadFetchError extends Error {
  /** What each attempt ran into, in order. */
  readonly attempts: FailedAttempt[];
  /** Builds the error; the message summarises the attempts. */
  constructor(what: string, attempts: FailedAttempt[]) {
    const summary = attempts.length === 0
      ? "no usable provider"
      : attempts.map((a) =>
        `${a.provider.slice(-8)}: ${a.code}` +
        (a.resumedFrom === undefined ? "" : ` (from byte ${a.resumedFrom})`)
      ).join(", ");
    super(`Cannot fetch ${what}: ${summary}`);
    this.name = "PayloadFetchError";
    this.attempts = attempts;
  }
}

/** Options for `withFallback`. */
export interface FallbackOptions {
  /** What is being fetched, for error messages. */
  what: string;
  policy: RetryPolicy;
  /** Aborts the whole download (rejects with the signal's reason). */
  signal?: AbortSignal;
  /** Whether a provider is known bad (skipped). */
  isBad: (provider: string) => boolean;
  /** Called when a provider served bytes that do not match the hash. */
  markBad: (provider: string) => void;
  /** Called for every failed attempt, with why it failed. */
  onFailure?: (provider: string, code: AttemptFailureCode) => void;
  /** Waits `ms` (rejecting if `signal` aborts). Default: a timer. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A stall timer of `ms`: its signal aborts once `ms` pass without a `rearm`. */
  watchdog?: (ms: number) => Watchdog;
  /**
   * Runs each attempt, e.g. once a download slot is free (`Limiter.run`). The attempt's timeout
   * starts only when the gate lets it run, so waiting for a slot does not count against it.
   */
  gate?: <R>(provider: string, task: () => Promise<R>, signal?: AbortSignal) => Promise<R>;
  /**
   * Bytes the download already holds as an attempt starts (it asks for the rest); a failed
   * attempt that started past 0 records it as `resumedFrom`. Default: always 0.
   */
  heldBytes?: () => number;
}

/** A timer that aborts its signal once it has not been re-armed for its interval. */
export interface Watchdog {
  readonly signal: AbortSignal;
  /** Progress was made: the interval starts again. */
  rearm(): void;
  /** The attempt ended: the timer will never fire. */
  stop(): void;
}

/** A {@link Watchdog} on the real clock. */
export function stallTimer(ms: number): Watchdog {
  const controller = new AbortController();
  const fire = () => controller.abort(new DOMException(`no progress for ${ms} ms`, "TimeoutError"));
  let timer = setTimeout(fire, ms);
  return {
    signal: controller.signal,
    rearm() {
      if (controller.signal.aborted) return;
      clearTimeout(timer);
      timer = setTimeout(fire, ms);
    },
    stop: () => clearTimeout(timer),
  };
}

/**
 * Runs `attempt(provider, signal, progress)` over `providers` per the policy and returns the
 * first success; the attempt calls `progress()` whenever bytes arrive, which re-arms its stall
 * timeout. Throws `PayloadFetchError` when all fail, or the caller's abort reason. `onFailure`
 * hears of each failed attempt as it happens.
 */
export async function withFallback<T>(
  providers: readonly string[],
  attempt: (provider: string, signal: AbortSignal, progress: () => void) => Promise<T>,
  options: FallbackOptions,
): Promise<T> {
  const { policy, signal } = options;
  const wait = options.sleep ?? abortableSleep;
  const watchdog = options.watchdog ?? stallTimer;
  const gate = options.gate ?? (<R>(_: string, task: () => Promise<R>) => task());
  const failures: FailedAttempt[] = [];
  for (let round = 0; round <= policy.retries; round++) {
    if (round > 0) {
      const delay = Math.min(policy.maxBackoffMs, policy.backoffMs * 2 ** (round - 1));
      await wait(delay, signal);
    }
    const usable = providers.filter((p) => !options.isBad(p));
    if (usable.length === 0) break;
    for (const provider of usable) {
      signal?.throwIfAborted();
      let timer: Watchdog | undefined;
      let from = 0;
      try {
        return await gate(provider, () => {
          from = options.heldBytes?.() ?? 0;
          timer = watchdog(policy.attemptTimeoutMs);
          const { signal: stalled, rearm } = timer;
          return attempt(provider, signal ? AbortSignal.any([signal, stalled]) : stalled, rearm);
        }, signal);
      } catch (error) {
        signal?.throwIfAborted();
        const failure = classify(error, timer?.signal);
        failures.push({ provider, round, ...failure, ...(from > 0 ? { resumedFrom: from } : {}) });
        options.onFailure?.(provider, failure.code);
        if (failure.code === "hash-mismatch") options.markBad(provider);
      } finally {
        timer?.stop();
      }
    }
  }
  throw new PayloadFetchError(options.what, failures);
}

function classify(
  error: unknown,
  timer: AbortSignal | undefined,
): { code: AttemptFailureCode; message: string } {
  if (error instanceof PayloadAttemptError) return { code: error.code, message: error.message };
  const message = error instanceof Error ? error.message : String(error);
  if (timer?.aborted) return { code: "timeout", message };
  return { code: "unreachable", message };
}
