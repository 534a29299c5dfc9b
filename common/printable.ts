/**
 * Text that ends up on an operator's terminal (a run id, a reason quoting a peer's words) must
 * not be able to rewrite it: a newline forges a second log line, U+202E (right-to-left override)
 * shows what follows it backwards, U+2066 isolates and zero-width characters hide what is there.
 * Identifiers refuse such characters ({@linkcode unprintableProblem}); text we only echo back is
 * escaped ({@linkcode quoteForTerminal}).
 *
 * Refused: Unicode's control (Cc: C0, DEL, C1), format (Cf: U+200E/U+200F marks, U+202A–U+202E
 * embeddings and overrides, U+2066–U+2069 isolates, U+061C, zero-width characters, U+FEFF, tag
 * characters, …), line and paragraph separators (Zl, Zp) and lone surrogates (Cs).
 *
 * Pure.
 *
 * @module
 */

const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;
const UNPRINTABLE_ALL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

/** A character that may not be shown raw, and where it is. */
export interface UnprintableCharacter {
  /** Its code point. */
  readonly codePoint: number;
  /** Its position, counted in code points from 1. */
  readonly position: number;
}

/** `U+000A` style: the code point in upper-case hex, at least four digits. */
export function formatCodePoint(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
}

/** The first control, format or separator character of `text`, or `null` when it has none. */
export function firstUnprintable(text: string): UnprintableCharacter | null {
  if (!UNPRINTABLE.test(text)) return null;
  let position = 0;
  for (const char of text) {
    position++;
    if (UNPRINTABLE.test(char)) return { codePoint: char.codePointAt(0)!, position };
  }
  return null;
}

/**
 * Why `text` cannot be an identifier shown on terminals, naming the first offending code point,
 * or `null` when it can.
 *
 * @example
 * ```ts
 * import { unprintableProblem } from "./printable.ts";
 * const problem = unprintableProblem("run\u202Egpj.exe");
 * if (problem !== "contains U+202E at character 4 (control and bidirectional-formatting characters are not allowed)") {
 *   throw new Error(problem ?? "accepted");
 * }
 * ```
 */
export function unprintableProblem(text: string): string | null {
  const found = firstUnprintable(text);
  if (found === null) return null;
  return `contains ${formatCodePoint(found.codePoint)} at character ${found.position} ` +
    "(control and bidirectional-formatting characters are not allowed)";
}

/**
 * `text` in double quotes with JSON's escapes, and every control, format or separator character
 * written as `\uXXXX` (JSON leaves U+202E and friends raw): safe to print whatever a peer sent.
 *
 * @example
 * ```ts
 * import { quoteForTerminal } from "./printable.ts";
 * if (quoteForTerminal("a\nb\u202E") !== '"a\\nb\\u202e"') throw new Error();
 * ```
 */
export function quoteForTerminal(text: string): string {
  return JSON.stringify(text).replace(
    UNPRINTABLE_ALL,
    (char) =>
      Array.from(
        { length: char.length },
        (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`,
      ).join(""),
  );
}
