/**
 * Checks a JSON log line against the one schema of docs/logs.md: a JSON object whose `time` is
 * an ISO-8601 time, `level` one of info/warn/error, `event` snake_case, and every top-level
 * field name snake_case. Tests run real processes with `--logs json` and pass each line here.
 *
 * @module
 */
import { LOG_LEVELS, type LogLevel, SNAKE_CASE } from "../../cli/entry.ts";

const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** The problem with `line` as a log line of the schema, or null when it keeps the schema. */
export function logSchemaProblem(line: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return `not JSON: ${line}`;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return `not a JSON object: ${line}`;
  }
  const o = value as Record<string, unknown>;
  if (
    typeof o.time !== "string" || !ISO_TIME.test(o.time) || !Number.isFinite(Date.parse(o.time))
  ) {
    return `"time" is not an ISO-8601 time: ${line}`;
  }
  if (!LOG_LEVELS.includes(o.level as LogLevel)) return `"level" is not info/warn/error: ${line}`;
  if (typeof o.event !== "string" || !SNAKE_CASE.test(o.event)) {
    return `"event" is not snake_case: ${line}`;
  }
  const bad = Object.keys(o).find((k) => !SNAKE_CASE.test(k));
  return bad === undefined ? null : `field "${bad}" is not snake_case: ${line}`;
}
