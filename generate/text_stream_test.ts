import assert from "node:assert/strict";
import { promptTokenizer } from "../data/mod.ts";
import { TextStream } from "./text_stream.ts";

Deno.test("streamed text holds back a split character and adds up to the whole", () => {
  const bytes = promptTokenizer("bytes");
  const prompt = bytes.encode("Caf");
  const stream = new TextStream(bytes.decode, prompt);
  const sample = Array.from(new TextEncoder().encode("é — ok"));
  const parts = sample.map((id) => stream.push(id));
  assert.equal(parts[0], "", "the first byte of é alone is held");
  assert.equal(parts[1], "é");
  assert.equal(parts.join("") + stream.flush(), "é — ok");
  assert.equal(stream.text, "é — ok");
  // A sample ending mid-character prints its U+FFFD at the flush.
  const cut = new TextStream(bytes.decode, prompt);
  assert.equal(cut.push(0xc3), "");
  assert.equal(cut.flush(), "\uFFFD");
  // LLaMA-2 pieces carry their leading spaces.
  const llama = promptTokenizer("llama");
  const lp = llama.encode("The cat");
  const ls = new TextStream(llama.decode, lp);
  const more = llama.encode("The cat sat on the mat").slice(lp.length);
  assert.equal(more.map((id) => ls.push(id)).join("") + ls.flush(), " sat on the mat");
});
