/**
 * The TUI's renderer: a {@link TuiView} and a terminal size in, the screen's lines (and the
 * escape-coded frame that paints them in place) out. Pure: the same view and size always give
 * the same frame, so tests compare frames directly. Every line is cut to the width (an ellipsis
 * marks the cut) and the lines to the height; warnings and errors fill the rows that are left,
 * newest last.
 *
 * @example
 * ```ts
 * import { initialView } from "./view.ts";
 * import { renderLines } from "./render.ts";
 * const lines = renderLines(initialView({ runId: "r", coordinator: "h:1" }), { columns: 80, rows: 24 });
 * if (lines.length > 24 || lines.some((l) => [...l].length > 80)) throw new Error("overflow");
 * ```
 *
 * @module
 */
import { sparkline } from "./sparkline.ts";
import type { Notice, TuiView } from "./view.ts";

/** A terminal's size in character cells. */
export interface TerminalSize {
  readonly columns: number;
  readonly rows: number;
}

/** The width of a row's label column (two spaces of indent included). */
const LABEL = 14;

/** `text` cut to `width` columns, an ellipsis marking the cut (one column per code point). */
export function truncate(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  if (width <= 0) return "";
  return chars.slice(0, width - 1).join("") + "…";
}

/** `1234567` → `1,234,567` (no locale: the same on every machine). */
export function grouped(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const whole = Math.round(Math.abs(n)).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return (n < 0 ? "-" : "") + whole;
}

/** Bytes in SI units: `999 B`, `1.2 kB`, `3.4 MB`, `5.6 GB`. */
export function bytes(n: number): string {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${units[unit]}`;
}

const loss = (x: number) => (Number.isFinite(x) ? x.toFixed(4) : String(x));
const row = (label: string, value: string) => `  ${label.padEnd(LABEL - 2)}${value}`;
const clock = (ms: number) => new Date(ms).toISOString().slice(11, 19);
const short = (hex: string) => hex.slice(0, 12);

/** A section's title as a rule across the width: `── Training ─────`. */
const heading = (title: string, columns: number) =>
  `── ${title} ` + "─".repeat(Math.max(0, columns - title.length - 4));

function header(view: TuiView): string {
  const parts = [
    "psyche client",
    `run "${view.runId}"`,
    `coordinator ${view.coordinator}`,
    view.ended === null ? view.connection : `stopped: ${view.ended}`,
  ];
  return parts.join(" │ ");
}

function runLines(view: TuiView): string[] {
  const r = view.run;
  const identity = view.identity === null
    ? "not started"
    : `${short(view.identity)} on ${view.adapter ?? "?"}`;
  return [
    row(
      "run state",
      r === null ? "waiting for the coordinator" : `${r.state}  (${r.clients} clients)`,
    ),
    row("progress", r === null ? "-" : `epoch ${r.epoch}  step ${r.step}  round ${r.round}`),
    row("client", identity),
    row(
      "model",
      view.model === null
        ? "not loaded"
        : `${grouped(view.model.params)} params  hash ${
          short(view.model.hash)
        } (step ${view.model.step})`,
    ),
    // Only while a long phase is under way: it must not look like a hang.
    ...(view.activity === null ? [] : [row("now", view.activity)]),
  ];
}

function trainingLines(view: TuiView, columns: number): string[] {
  const t = view.lastTrain;
  if (t === null) return [heading("Training", columns), row("last step", "none yet")];
  const finite = view.losses.filter(Number.isFinite);
  const range = finite.length === 0
    ? ""
    : `  (min ${loss(Math.min(...finite))}, max ${loss(Math.max(...finite))})`;
  return [
    heading("Training", columns),
    row(
      "last step",
      `${t.step}  batch [${t.batch[0]}, ${t.batch[1]}]  ${grouped(t.ms)} ms  ` +
        `payload ${bytes(t.payloadBytes)}`,
    ),
    row("loss", loss(t.loss) + range),
    row("recent", sparkline(view.losses, Math.max(0, columns - LABEL))),
    row("tokens/s", grouped(t.tokensPerSec)),
  ];
}

function networkLines(view: TuiView, columns: number): string[] {
  const n = view.traffic;
  if (n === null) return [heading("Network", columns), row("peers", "no traffic report yet")];
  const rate = (perSec: number | null) => perSec === null ? "" : `  (${bytes(perSec)}/s)`;
  return [
    heading("Network", columns),
    row("peers", String(n.peers)),
    row("sent", bytes(n.bytesSent) + rate(n.sentPerSec)),
    row("received", bytes(n.bytesReceived) + rate(n.receivedPerSec)),
  ];
}

function roundLines(view: TuiView, columns: number): string[] {
  const w = view.witness;
  const a = view.apply;
  return [
    heading("Witness and apply", columns),
    row("parameters", view.sync),
    row(
      "witness",
      w === null
        ? "none yet"
        : `step ${w.step}: ${w.participants} trainers, ${w.commitments} commitments`,
    ),
    row(
      "apply",
      a === null
        ? "none yet"
        : `step ${a.step}: ${a.applied} results, ${a.untrained} untrained, params ${short(a.hash)}`,
    ),
  ];
}

function noticeLine(n: Notice): string {
  return `  ${clock(n.timeMs)} ${n.level === "error" ? "ERROR" : "warn "} ${n.text}`;
}

/**
 * The screen's lines for `view` at `size`: at most `size.rows` lines of at most `size.columns`
 * columns each (the first line is the title bar).
 */
export function renderLines(view: TuiView, size: TerminalSize): string[] {
  const { columns, rows } = size;
  if (rows <= 0 || columns <= 0) return [];
  const body = [
    header(view),
    ...runLines(view),
    ...trainingLines(view, columns),
    ...networkLines(view, columns),
    ...roundLines(view, columns),
    heading("Warnings and errors", columns),
  ];
  const room = Math.max(0, rows - body.length);
  const notices = view.notices.length === 0
    ? ["  none"]
    : view.notices.slice(-Math.max(1, room)).map(noticeLine);
  return [...body, ...notices].slice(0, rows).map((line) => truncate(line, columns));
}

/** Escape codes: cursor home, erase to the end of the line, reverse video on and off. */
const HOME = "\x1b[H";
const ERASE_LINE = "\x1b[K";
const REVERSE = "\x1b[7m";
const PLAIN = "\x1b[0m";

/**
 * The frame that repaints the whole screen in place: cursor home, then every row (the title bar
 * in reverse video, padded to the width), each erased to its end, so the previous frame (or any
 * stray output) never shows through. No newline after the last row, so the screen never scrolls.
 */
export function renderFrame(view: TuiView, size: TerminalSize): string {
  const lines = renderLines(view, size);
  const rows = Array.from({ length: Math.max(0, size.rows) }, (_, i) => {
    const line = lines[i] ?? "";
    if (i === 0) return REVERSE + line + " ".repeat(size.columns - [...line].length) + PLAIN;
    return line + ERASE_LINE;
  });
  return HOME + rows.join("\r\n");
}

/**
 * What stays on the terminal after the TUI closes (the alternate screen takes the frame with
 * it): why the client stopped, its last step, and the last warning or error.
 */
export function summaryLines(view: TuiView): string[] {
  const t = view.lastTrain;
  const last = view.notices.at(-1);
  return [
    `client stopped: ${view.ended ?? "no reason logged"}; ` +
    (t === null ? "no step trained" : `last step ${t.step}, loss ${loss(t.loss)}`),
    ...(last === undefined ? [] : [`last ${last.level}: ${last.text}`]),
  ];
}
