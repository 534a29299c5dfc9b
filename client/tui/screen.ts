/**
 * The TUI's edge: a {@link ClientLogger} that folds each event into the view (view.ts) and
 * repaints the alternate screen with the rendered frame (render.ts), at most one frame per
 * `minFrameMs` (a burst of events costs one repaint, the last state always shows). The
 * terminal, the clock and the timer are injected; {@link openTerminalTui} binds them to
 * Deno's stdout and restores the terminal on close, on exit, and on an uncaught error.
 *
 * @module
 */
import type { ClientEventName, ClientEvents, ClientLogger } from "../log.ts";
import { renderFrame, summaryLines, type TerminalSize } from "./render.ts";
import { initialView, type LoggedEvent, reduceView, type TuiView } from "./view.ts";

/** Alternate screen on, cursor hidden, no wrapping at the right edge, screen cleared. */
export const ENTER = "\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[2J";
/** Wrapping on, cursor shown, back to the normal screen (what was there before returns). */
export const LEAVE = "\x1b[?7h\x1b[?25h\x1b[?1049l";

/** The default repaint interval: at most four frames a second. */
export const MIN_FRAME_MS = 250;

/** What a {@link TuiScreen} draws on. */
export interface TuiScreenOptions {
  readonly runId: string;
  /** The coordinator's address (or the Solana RPC), shown in the title bar. */
  readonly coordinator: string;
  /** Writes escape-coded text to the terminal, all of it, before returning. */
  readonly write: (text: string) => void;
  /** The terminal's size now. */
  readonly size: () => TerminalSize;
  readonly clock?: () => number;
  /** Runs `fn` after `ms`; returns a cancel function. */
  readonly schedule?: (fn: () => void, ms: number) => () => void;
  readonly minFrameMs?: number;
}

/** Runs `fn` after `ms` without keeping the process alive for it. */
function unrefTimeout(fn: () => void, ms: number): () => void {
  const id = setTimeout(fn, ms);
  Deno.unrefTimer(id);
  return () => clearTimeout(id);
}

/** A full-screen view of the client, repainted in place as events arrive. */
export class TuiScreen implements ClientLogger {
  #view: TuiView;
  readonly #o: TuiScreenOptions;
  readonly #clock: () => number;
  readonly #schedule: (fn: () => void, ms: number) => () => void;
  readonly #minFrameMs: number;
  #lastFrameMs = -Infinity;
  #cancelPending: (() => void) | null = null;
  #open = false;

  constructor(o: TuiScreenOptions) {
    this.#o = o;
    this.#view = initialView({ runId: o.runId, coordinator: o.coordinator });
    this.#clock = o.clock ?? Date.now;
    this.#schedule = o.schedule ?? unrefTimeout;
    this.#minFrameMs = o.minFrameMs ?? MIN_FRAME_MS;
  }

  /** The view as of the last event. */
  get view(): TuiView {
    return this.#view;
  }

  /** Switches to the alternate screen and paints the first frame. */
  open(): void {
    if (this.#open) return;
    this.#open = true;
    this.#o.write(ENTER);
    this.draw();
  }

  log<K extends ClientEventName>(event: K, fields: ClientEvents[K]): void {
    this.#view = reduceView(this.#view, { event, fields } as LoggedEvent, this.#clock());
    this.requestDraw();
  }

  /** Paints now if the last frame is old enough, else once the interval has passed. */
  requestDraw(): void {
    if (!this.#open || this.#cancelPending !== null) return;
    const wait = this.#lastFrameMs + this.#minFrameMs - this.#clock();
    if (wait <= 0) return this.draw();
    this.#cancelPending = this.#schedule(() => {
      this.#cancelPending = null;
      this.draw();
    }, wait);
  }

  /** Paints the current view now (also after a resize). */
  draw(): void {
    if (!this.#open) return;
    this.#lastFrameMs = this.#clock();
    this.#o.write(renderFrame(this.#view, this.#o.size()));
  }

  /**
   * Gives the terminal back: cursor, wrapping and the normal screen. Returns the lines to print
   * there (why it stopped, the last step). Safe to call twice; nothing is painted after it.
   */
  close(): string[] {
    this.#cancelPending?.();
    this.#cancelPending = null;
    if (this.#open) {
      this.#open = false;
      this.#o.write(LEAVE);
    }
    return summaryLines(this.#view);
  }
}

/** Writes all of `text` to stdout synchronously (a restore must finish before the exit). */
function writeStdout(text: string): void {
  const bytes = new TextEncoder().encode(text);
  let done = 0;
  while (done < bytes.length) done += Deno.stdout.writeSync(bytes.subarray(done));
}

/** A TUI on Deno's stdout, and how to close it. */
export interface TerminalTui {
  readonly logger: ClientLogger;
  /** Restores the terminal and returns the lines to print on it. */
  close(): string[];
}

/**
 * Opens the TUI on the terminal that is stdout: repaints on resize (SIGWINCH), and restores the
 * terminal when closed, when the process exits (`unload`) and when an uncaught error or
 * rejection is about to end it, so the error prints on the normal screen. Ctrl-C is the
 * caller's SIGINT (the client stops, then closes this).
 */
export function openTerminalTui(o: { runId: string; coordinator: string }): TerminalTui {
  const screen = new TuiScreen({
    ...o,
    write: writeStdout,
    size: () => Deno.consoleSize(),
  });
  const redraw = () => screen.draw();
  const restore = () => void screen.close();
  Deno.addSignalListener("SIGWINCH", redraw);
  globalThis.addEventListener("unload", restore);
  globalThis.addEventListener("error", restore);
  globalThis.addEventListener("unhandledrejection", restore);
  screen.open();
  return {
    logger: screen,
    close() {
      Deno.removeSignalListener("SIGWINCH", redraw);
      globalThis.removeEventListener("unload", restore);
      globalThis.removeEventListener("error", restore);
      globalThis.removeEventListener("unhandledrejection", restore);
      return screen.close();
    },
  };
}
