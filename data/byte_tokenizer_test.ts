import assert from "node:assert/strict";
import { BYTE_VOCAB_SIZE, decodeByteTokens, encodeByteDocument } from "./byte_tokenizer.ts";

Deno.test("byte tokens round-trip any text, a blank line after each document", () => {
  const text = "The jury said “no” — 1961, naïve café.";
  const ids = encodeByteDocument(text);
  assert.ok(ids.every((id) => Number.isInteger(id) && id >= 0 && id < BYTE_VOCAB_SIZE));
  assert.equal(decodeByteTokens(ids), `${text}\n\n`);
  assert.deepEqual(ids.slice(-2), [10, 10]);
});

Deno.test("decoding names the first id that is not a byte", () => {
  assert.throws(() => decodeByteTokens([65, 256]), /Token id 256 at index 1 is not a byte/);
  assert.throws(() => decodeByteTokens([-1]), /Token id -1 at index 0/);
  // A cut UTF-8 sequence decodes to the replacement character, not an error.
  assert.equal(decodeByteTokens([0xc3]), "\ufffd");
});
