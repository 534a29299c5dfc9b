/**
 * The client's full-screen view (`--logs tui`): a pure reducer from logged events to a view
 * model (view.ts), a pure renderer from the view and the terminal size to a frame (render.ts,
 * sparkline.ts), and the edge that paints frames on stdout and restores the terminal
 * (screen.ts). docs/client.md shows a frame.
 *
 * @module
 */
export { initialView, type LoggedEvent, reduceView, type TuiView } from "./view.ts";
export { renderFrame, renderLines, summaryLines, type TerminalSize } from "./render.ts";
export { sparkline } from "./sparkline.ts";
export { openTerminalTui, type TerminalTui, TuiScreen, type TuiScreenOptions } from "./screen.ts";
