/**
 * The room rules of tools/rooms.ts, as a pure function of the project's module graph: which
 * imports break them, and whether the rules themselves hold together (every room named exists,
 * the `uses` arrows form no circle). tools/check_rooms.ts reads the graph and prints what this
 * finds.
 *
 * @example
 * ```ts
 * import { checkRooms } from "./room_check.ts";
 * const rooms = [
 *   { path: "low/", job: "", uses: [] },
 *   { path: "high/", job: "", uses: ["low/"] },
 * ];
 * const violations = checkRooms({
 *   files: [{ path: "low/a.ts", text: "" }, { path: "high/b.ts", text: "" }],
 *   imports: [{ from: "low/a.ts", to: "high/b.ts", line: 3 }],
 * }, rooms);
 * if (violations.length !== 1 || violations[0].rule !== "uses") throw new Error("not found");
 * ```
 *
 * @module
 */
import type { Room } from "./rooms.ts";

/** A source file of the project. */
export interface SourceFile {
  /** From the repository root, `/`-separated. */
  readonly path: string;
  /** Its text (read for the pure rooms' clock, randomness and I/O names). */
  readonly text: string;
}

/** One import: `to` is a project path, or an outside specifier (`npm:…`, `node:…`, `jsr:…`). */
export interface Import {
  readonly from: string;
  readonly to: string;
  /** 1-based line of the import in `from`. */
  readonly line: number;
}

/** The project's files and imports. */
export interface HouseGraph {
  readonly files: readonly SourceFile[];
  readonly imports: readonly Import[];
}

/** Which rule a violation breaks. */
export type RoomRule = "room" | "uses" | "face" | "test-code" | "pure" | "rules";

/** One broken rule, with the file, the line and the import (or name) that break it. */
export interface Violation {
  readonly file: string;
  /** 0 when the rule is about the file, not one line of it. */
  readonly line: number;
  /** The import or name at fault ("" for a whole-file problem). */
  readonly found: string;
  readonly rule: RoomRule;
  /** What the rule says, for the reader. */
  readonly message: string;
}

/** `file:line imports X: message (rule)`, one line per violation. */
export function formatViolation(v: Violation): string {
  const where = v.line > 0 ? `${v.file}:${v.line}` : v.file;
  const what = v.found === "" ? "" : ` ${v.rule === "pure" ? "names" : "imports"} ${v.found}`;
  return `${where}${what}: ${v.message} [rule: ${v.rule}]`;
}

/**
 * Test code: tests, benches, harness folders, the cross-module tests, and bench/'s measurements
 * (run by hand; nothing the product runs may import them).
 */
export function isTestCode(path: string): boolean {
  return /(_test|_bench)\.ts$/.test(path) || isHarness(path) || path.startsWith("tests/") ||
    path.startsWith("bench/");
}

/** A harness test code of any room may import: a `testing/` folder, or tests/support/. */
export function isHarness(path: string): boolean {
  return path.split("/").includes("testing") || path.startsWith("tests/support/");
}

/** The room holding `path`: the one with the longest path that is a prefix of it. */
export function roomOf(path: string, rooms: readonly Room[]): Room | undefined {
  let best: Room | undefined;
  for (const room of rooms) {
    if (path.startsWith(room.path) && (best === undefined || room.path.length > best.path.length)) {
      best = room;
    }
  }
  return best;
}

/** Whether `path` is a face of `room`: its face, or the `mod.ts` of one of its folders. */
export function isFace(path: string, room: Room): boolean {
  if (path === (room.face ?? `${room.path}mod.ts`)) return true;
  return path.endsWith("/mod.ts") && path.startsWith(room.path);
}

/** Names a pure room's product code may not use: clocks, randomness, I/O, logging, timers. */
export const IMPURE_NAMES: readonly string[] = [
  "Deno.",
  "fetch(",
  "console.",
  "Date.now",
  "new Date(",
  "performance.now",
  "Math.random",
  "getRandomValues",
  "randomBytes",
  "setTimeout",
  "setInterval",
  "queueMicrotask",
];

/**
 * `text` with comments, string contents and regular expressions blanked out (line breaks kept),
 * so a name in a comment or a message does not count; the code inside a template literal's
 * `${...}` does.
 */
export function codeOnly(text: string): string {
  const blank = (s: string) => s.replace(/[^\n]/g, " ");
  // What the scanner is in: code (with its brace depth, to find the `}` ending a `${`), or the
  // text part of a template literal.
  const stack: ({ kind: "code"; depth: number } | { kind: "template" })[] = [
    { kind: "code", depth: 0 },
  ];
  let out = "";
  let i = 0;
  let lastSignificant = "";
  while (i < text.length) {
    const top = stack[stack.length - 1];
    const ch = text[i];
    const next = text[i + 1];
    if (top.kind === "template") {
      if (ch === "\\") {
        out += blank(text.slice(i, i + 2));
        i += 2;
      } else if (ch === "`") {
        out += ch;
        stack.pop();
        lastSignificant = ch;
        i++;
      } else if (ch === "$" && next === "{") {
        out += "${";
        stack.push({ kind: "code", depth: 0 });
        lastSignificant = "{";
        i += 2;
      } else {
        out += blank(ch);
        i++;
      }
      continue;
    }
    if (ch === "/" && next === "/") {
      const end = text.indexOf("\n", i);
      const stop = end < 0 ? text.length : end;
      out += blank(text.slice(i, stop));
      i = stop;
    } else if (ch === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += blank(text.slice(i, stop));
      i = stop;
    } else if (ch === '"' || ch === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== ch && text[j] !== "\n") j += text[j] === "\\" ? 2 : 1;
      out += ch + blank(text.slice(i + 1, j)) + ch;
      i = j + 1;
      lastSignificant = ch;
    } else if (ch === "`") {
      out += ch;
      stack.push({ kind: "template" });
      i++;
    } else if (
      ch === "/" && (lastSignificant === "" || "(,=:[!&|?{};+-*%<>~^".includes(lastSignificant))
    ) {
      // A regular expression literal: skip to its closing slash (outside a class).
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== "\n") {
        if (text[j] === "\\") j++;
        else if (text[j] === "[") inClass = true;
        else if (text[j] === "]") inClass = false;
        else if (text[j] === "/" && !inClass) break;
        j++;
      }
      out += "/" + blank(text.slice(i + 1, j)) + "/";
      i = j + 1;
      lastSignificant = "/";
    } else {
      if (ch === "{") top.depth++;
      if (ch === "}") {
        if (top.depth === 0 && stack.length > 1) {
          stack.pop();
          out += ch;
          i++;
          continue;
        }
        top.depth--;
      }
      out += ch;
      if (!/\s/.test(ch)) lastSignificant = ch;
      i++;
    }
  }
  return out;
}

/** The problems of the rules themselves: unknown rooms in `uses`, and circles. */
export function ruleProblems(rooms: readonly Room[]): Violation[] {
  const out: Violation[] = [];
  const byPath = new Map(rooms.map((r) => [r.path, r]));
  for (const room of rooms) {
    for (const used of room.uses) {
      if (!byPath.has(used)) {
        out.push({
          file: "tools/rooms.ts",
          line: 0,
          found: "",
          rule: "rules",
          message: `${room.path} uses "${used}", which is no room`,
        });
      }
    }
  }
  // Depth-first search for a circle of `uses`.
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (path: string): string[] | null => {
    if (state.get(path) === "done") return null;
    if (state.get(path) === "open") return [...stack.slice(stack.indexOf(path)), path];
    state.set(path, "open");
    stack.push(path);
    for (const used of byPath.get(path)?.uses ?? []) {
      const circle = visit(used);
      if (circle !== null) return circle;
    }
    stack.pop();
    state.set(path, "done");
    return null;
  };
  for (const room of rooms) {
    const circle = visit(room.path);
    if (circle !== null) {
      out.push({
        file: "tools/rooms.ts",
        line: 0,
        found: "",
        rule: "rules",
        message: `the rooms' uses form a circle: ${circle.join(" -> ")}`,
      });
      break;
    }
  }
  return out;
}

/** Every import and name of `graph` that breaks the rules of `rooms`, in file order. */
export function checkRooms(graph: HouseGraph, rooms: readonly Room[]): Violation[] {
  const out: Violation[] = [...ruleProblems(rooms)];
  for (const file of graph.files) {
    const room = roomOf(file.path, rooms);
    if (room === undefined) {
      out.push({
        file: file.path,
        line: 0,
        found: "",
        rule: "room",
        message: "belongs to no room of tools/rooms.ts",
      });
      continue;
    }
    if (room.pure && !isTestCode(file.path)) {
      const code = codeOnly(file.text).split("\n");
      code.forEach((line, i) => {
        for (const name of IMPURE_NAMES) {
          if (line.includes(name)) {
            out.push({
              file: file.path,
              line: i + 1,
              found: name.replace(/\($/, ""),
              rule: "pure",
              message: `${room.path} is pure: no clock, randomness, I/O, console or timers`,
            });
          }
        }
      });
    }
  }
  for (const imp of graph.imports) {
    const room = roomOf(imp.from, rooms);
    if (room === undefined) continue;
    const test = isTestCode(imp.from);
    const outside = /^[a-z]+:/.test(imp.to);
    if (outside) {
      if (room.pure && !test && !(room.packages ?? []).some((p) => imp.to.startsWith(p))) {
        const allowed = (room.packages ?? []).join(", ") || "none";
        out.push({
          file: imp.from,
          line: imp.line,
          found: imp.to,
          rule: "pure",
          message: `${room.path} is pure: the only outside modules it may import are ${allowed}`,
        });
      }
      continue;
    }
    const target = roomOf(imp.to, rooms);
    if (!test && isTestCode(imp.to)) {
      out.push({
        file: imp.from,
        line: imp.line,
        found: imp.to,
        rule: "test-code",
        message: "product code must not import test code (tests, benches, testing/ harnesses)",
      });
      continue;
    }
    if (target === undefined || target === room) continue;
    if (test && isHarness(imp.to)) continue;
    if (!test && !room.uses.includes(target.path)) {
      const uses = room.uses.length === 0 ? "no other room" : room.uses.join(", ");
      out.push({
        file: imp.from,
        line: imp.line,
        found: imp.to,
        rule: "uses",
        message: `${room.path} may not use ${target.path} (it uses ${uses})`,
      });
      continue;
    }
    if (!isFace(imp.to, target)) {
      out.push({
        file: imp.from,
        line: imp.line,
        found: imp.to,
        rule: "face",
        message: `another room's internals: reach ${target.path} through ${
          target.face ?? `${target.path}mod.ts`
        } (or a folder's mod.ts)`,
      });
    }
  }
  return out;
}
