import assert from "node:assert/strict";
import { brownToText, brownWord, detokenizeSentence } from "./brown.ts";

Deno.test("brownWord drops the tag after the last slash", () => {
  assert.equal(brownWord("jury/nn"), "jury");
  assert.equal(brownWord("Atlanta's/np$"), "Atlanta's");
  assert.equal(brownWord("1/2/cd"), "1/2");
  assert.equal(brownWord(".-hl"), ".-hl");
});

Deno.test("sentences are rejoined with English spacing and plain quotes", () => {
  assert.equal(
    detokenizeSentence([
      "He",
      "said",
      "``",
      "yes",
      "''",
      ",",
      "(",
      "twice",
      ")",
      "--",
      "then",
      "left",
      ".",
    ]),
    'He said "yes", (twice) -- then left.',
  );
  assert.equal(detokenizeSentence(["Why", "?", "!"]), "Why?!");
  assert.equal(detokenizeSentence([]), "");
});

Deno.test("a tagged document becomes running text without tags", () => {
  const tagged =
    "\n\n\tThe/at-tl Grand/jj-tl Jury/nn-tl said/vbd ./.\n\n\n\tIt/pps won/vbd ;/. ok/uh ./.\n";
  const text = brownToText(tagged);
  assert.equal(text, "The Grand Jury said. It won; ok.");
  assert.doesNotMatch(text, /\/[a-z]/);
});
