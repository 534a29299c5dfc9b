/**
 * Coordinator time: seconds as a JS `number`, with at most millisecond precision.
 *
 * Psyche keeps every time and duration in whole seconds (u64). The Solana program still does
 * (its clock is whole seconds), but the TCP coordinator reads a millisecond clock, so its
 * timestamps and run-config durations may carry a fraction: `round_witness_time = 0.1`. A time
 * is valid when it is a whole number of milliseconds, i.e. `ms / 1000` for an integer `ms`
 * (the double nearest to it, which is what both `0.1` in a TOML file and `100 / 1000` give).
 *
 * Comparisons never add fractional seconds as floats (`0.1 + 0.2 !== 0.3`): they convert to
 * integer milliseconds first, which is exact below {@linkcode MAX_TIME_MS}. Whole seconds take
 * the integer path they always took, so a host that passes whole seconds (the Solana program,
 * the differential tests) sees exactly Psyche's behaviour.
 *
 * @example
 * ```ts
 * import { isMillisecondTime, timeReached, toMillis } from "./time.ts";
 * if (!isMillisecondTime(0.1) || isMillisecondTime(0.0005)) throw new Error("ms precision");
 * if (toMillis(1.25) !== 1250) throw new Error("exact");
 * if (!timeReached(10.3, 10.2, 0.1)) throw new Error("10.2 s + 0.1 s is reached at 10.3 s");
 * ```
 *
 * @module
 */

/** Milliseconds in a second. */
export const MS_PER_SECOND = 1000;

/**
 * Largest time with a fraction, in milliseconds: 2^50 - 1 (about 35,700 years). Below it,
 * `Math.round((ms / 1000) * 1000) === ms` holds for every integer, so seconds and
 * milliseconds convert both ways exactly. Also the largest time the state encoding (version
 * 2, which stores milliseconds) carries.
 */
export const MAX_TIME_MS = 2 ** 50 - 1;

/** {@linkcode MAX_TIME_MS} in seconds. */
export const MAX_TIME_SECONDS = MAX_TIME_MS / MS_PER_SECOND;

/**
 * Whether `seconds` is a valid coordinator time or duration: a whole number of milliseconds in
 * [0, MAX_TIME_SECONDS], or any non-negative safe integer (whole seconds, as Psyche allows).
 */
export function isMillisecondTime(seconds: number): boolean {
  if (typeof seconds !== "number" || !(seconds >= 0)) return false;
  if (Number.isInteger(seconds)) return Number.isSafeInteger(seconds);
  if (seconds > MAX_TIME_SECONDS) return false;
  return Math.round(seconds * MS_PER_SECOND) / MS_PER_SECOND === seconds;
}

/**
 * `seconds` in whole milliseconds. Exact for every value {@linkcode isMillisecondTime} accepts
 * up to MAX_TIME_SECONDS; callers check validity first.
 */
export function toMillis(seconds: number): number {
  return Math.round(seconds * MS_PER_SECOND);
}

/** `ms` milliseconds in seconds (the canonical double for that many milliseconds). */
export function fromMillis(ms: number): number {
  return ms / MS_PER_SECOND;
}

/**
 * Whether `now >= start + duration`, computed exactly: with integers when all three are whole
 * seconds (Psyche's arithmetic), in integer milliseconds otherwise. Arguments are valid times.
 */
export function timeReached(now: number, start: number, duration: number): boolean {
  if (Number.isInteger(now) && Number.isInteger(start) && Number.isInteger(duration)) {
    return now >= start + duration;
  }
  return toMillis(now) >= toMillis(start) + toMillis(duration);
}

/**
 * `start + duration` in seconds (a deadline), exact in milliseconds: the canonical double for
 * the sum, so `timeReached(deadline, start, duration)` holds and one millisecond earlier does
 * not.
 */
export function addTime(start: number, duration: number): number {
  if (Number.isInteger(start) && Number.isInteger(duration)) return start + duration;
  return fromMillis(toMillis(start) + toMillis(duration));
}

/**
 * What is wrong with `seconds` as a run-config duration, or null when nothing is: not a finite
 * number, negative, above `max`, or finer than a millisecond. For error messages that name the
 * key and the value (the caller adds both).
 */
export function durationProblem(seconds: unknown, max: number = MAX_TIME_SECONDS): string | null {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) {
    return "expected a finite number of seconds";
  }
  if (seconds < 0) return "must not be negative";
  if (seconds > max) return `must be at most ${max} seconds`;
  if (!isMillisecondTime(seconds)) {
    return "must be a whole number of milliseconds (at most 3 decimal places)";
  }
  return null;
}
