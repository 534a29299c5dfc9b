/**
 * One schema for every JSON log line the client, the coordinator and the testnet print
 * (`--logs json`, docs/logs.md): `time` (ISO-8601), `level`, `event` (snake_case), then the
 * event's fields in snake_case, with the same name for the same thing in every program
 * (`step`, `epoch`, `round`, `loss`, `tokens_per_sec`, `bytes_*`).
 *
 * Pure apart from formatting the given time (`Date`): the time comes in as milliseconds.
 *
 * @example
 * ```ts
 * import { logLine } from "./log_line.ts";
 * const line = logLine(0, "info", "listening", { run_id: "r" });
 * if (line !== '{"time":"1970-01-01T00:00:00.000Z","level":"info","event":"listening","run_id":"r"}') {
 *   throw new Error(line);
 * }
 * ```
 *
 * @module
 */

/** How much a log line matters: `warn` something refused or retried, `error` something failed. */
export type LogLevel = "info" | "warn" | "error";

/** Every {@link LogLevel}. */
export const LOG_LEVELS: readonly LogLevel[] = ["info", "warn", "error"];

/** The shape of an event name and of a field name: lower-case snake_case. */
export const SNAKE_CASE: RegExp = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

/** `StateChanged` → `state_changed`, `tokensPerSec` → `tokens_per_sec`. */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c, i) => (i === 0 ? "" : "_") + c.toLowerCase());
}

/** `state_changed` → `StateChanged` (`pascal`) or `stateChanged`; the inverse of {@link snakeCase}. */
export function fromSnakeCase(name: string, pascal = false): string {
  const camel = name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  return pascal ? camel[0].toUpperCase() + camel.slice(1) : camel;
}

/** One JSON log line: `{"time", "level", "event", ...fields}`. */
export function logLine(
  timeMs: number,
  level: LogLevel,
  event: string,
  fields: Readonly<Record<string, unknown>> = {},
): string {
  return JSON.stringify({ time: new Date(timeMs).toISOString(), level, event, ...fields });
}
