import assert from "node:assert/strict";
import { chooseTokenizer, promptTokenizer, TokenizerChoiceError } from "./prompt_tokenizer.ts";
import { BOS_ID } from "./llama_tokenizer.ts";

Deno.test("the tokenizer follows from the vocabulary, or from --tokenizer", () => {
  const choose = (choice: "auto" | "bytes" | "llama", vocabSize: number, files: string[] = []) =>
    chooseTokenizer({ choice, vocabSize, tokenizerFiles: files });
  assert.equal(choose("auto", 256), "bytes");
  assert.equal(choose("auto", 32000), "llama");
  assert.equal(choose("auto", 32000, ["tokenizer.model"]), "llama");
  assert.equal(choose("bytes", 512), "bytes");
  assert.equal(choose("llama", 32064), "llama");
  assert.throws(() => choose("auto", 512), TokenizerChoiceError);
  assert.throws(
    () => choose("auto", 128256, ["tokenizer.json"]),
    /vocab_size 128256; its folder has its own tokenizer \(tokenizer.json\), which is not bundled.*--tokenizer bytes\|llama/,
  );
  assert.throws(
    () => choose("llama", 256),
    /--tokenizer llama gives ids up to 31999, but the model's vocab_size is 256/,
  );
});

Deno.test("prompts are bytes, or <s> and LLaMA-2 tokens", () => {
  const bytes = promptTokenizer("bytes");
  assert.deepEqual(bytes.encode("hé"), [10, 10, 104, 195, 169], "after a blank line");
  assert.deepEqual(bytes.encode(""), [10, 10], "an empty prompt starts a document");
  assert.equal(bytes.decode([104, 195, 169]), "hé");
  assert.deepEqual(bytes.stopTokens, []);
  const llama = promptTokenizer("llama");
  const ids = llama.encode("Hello world");
  assert.equal(ids[0], BOS_ID);
  assert.notEqual(ids[ids.length - 1], 2, "no </s> after a prompt");
  assert.equal(llama.decode(ids), "Hello world");
  assert.deepEqual(llama.stopTokens, [2]);
});

Deno.test("ids past the tokenizer's vocabulary decode as U+FFFD", () => {
  assert.equal(promptTokenizer("bytes").decode([104, 300, 105]), "h\uFFFDi");
  assert.equal(promptTokenizer("llama").decode([40000]), "\uFFFD");
});
