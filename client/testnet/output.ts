/**
 * The testnet's merged output: every child process runs with `--logs json`, and each line it
 * prints is shown with its process label, either rendered as the human line the process itself
 * would print (`console`, coloured per process when the terminal allows) or passed through as
 * JSON with a `"process"` field added (`json`, for tools and tests; docs/logs.md). Lines that
 * are not JSON events (a crash's stack trace, a runtime warning) are shown as they are, or as
 * an `output` event in JSON.
 *
 * Pure.
 *
 * @module
 */
import { type ClientEventName, type ClientEvents, describeEvent } from "../log.ts";
import type { TestnetLogFormat } from "./args.ts";
import { eventFromJson, formatEvent } from "../../coordinator/server/mod.ts";
import { logLine } from "../../cli/entry.ts";

/** Which program a child runs, deciding how its JSON events render. */
export type ProcessKind = "coordinator" | "client" | "testnet";

/** ANSI foreground colours given to processes in turn (coordinator first). */
export const PALETTE = [36, 33, 32, 35, 34, 91, 92, 93, 94, 95, 96] as const;

/** The colour code of the `index`-th process. */
export function colourFor(index: number): number {
  return PALETTE[index % PALETTE.length];
}

/** A parsed JSON event line, or null when the line is not one. */
export function parseEventLine(line: string): Record<string, unknown> | null {
  if (!line.startsWith("{")) return null;
  try {
    const value = JSON.parse(line);
    return typeof value === "object" && value !== null && !Array.isArray(value) &&
        typeof value.event === "string"
      ? value
      : null;
  } catch {
    return null;
  }
}

/** The human text of one process's event (the line that process prints with console logs). */
export function renderEvent(kind: ProcessKind, event: Record<string, unknown>): string {
  const { event: name, time: _time, level: _level, ...fields } = event;
  try {
    switch (kind) {
      case "coordinator":
        return formatEvent(eventFromJson(event));
      case "client":
        return describeEvent(
          name as ClientEventName,
          fields as unknown as ClientEvents[ClientEventName],
        );
      case "testnet":
        return String(fields.message ?? JSON.stringify(fields));
    }
  } catch {
    // An event this version does not know (or with missing fields): show it raw.
  }
  return `${String(name)} ${JSON.stringify(fields)}`;
}

/** How to format one line of a child. */
export interface LineFormat {
  readonly format: TestnetLogFormat;
  /** Colour the label (console only). */
  readonly colour: boolean;
  /** Width labels are padded to. */
  readonly labelWidth: number;
  /** When the line arrived: the `time` of a JSON `output` event (a line that is not JSON). */
  readonly timeMs?: number;
}

/**
 * The line to print for `line` from process `label`.
 *
 * @example
 * ```ts
 * import { formatLine } from "./output.ts";
 * const out = formatLine(
 *   { label: "client-1", kind: "client", index: 1 },
 *   '{"time":"1970-01-01T00:00:00.000Z","level":"info","event":"end","reason":"Finished"}',
 *   { format: "console", colour: false, labelWidth: 11 },
 * );
 * if (out !== "client-1    | stopped: Finished") throw new Error(out);
 * ```
 */
export function formatLine(
  process: { label: string; kind: ProcessKind; index: number },
  line: string,
  options: LineFormat,
): string {
  const event = parseEventLine(line);
  if (options.format === "json") {
    return event === null
      ? logLine(options.timeMs ?? 0, "info", "output", { process: process.label, line })
      : JSON.stringify({ ...event, process: process.label });
  }
  const text = event === null ? line : renderEvent(process.kind, event);
  const label = process.label.padEnd(options.labelWidth);
  const prefix = options.colour ? `\x1b[${colourFor(process.index)}m${label}\x1b[0m` : label;
  // An event rendered over several lines (a client's memory plan) keeps its label on each.
  return text.split("\n").map((part) => `${prefix} | ${part}`).join("\n");
}
