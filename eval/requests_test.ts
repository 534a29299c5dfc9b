import assert from "node:assert/strict";
import { promptTokenizer } from "../data/mod.ts";
import { documentRequests, encodePair, fewshotPrefix } from "./requests.ts";
import { evalTokenizer } from "./text_encoders.ts";

const bytes = promptTokenizer("bytes");
const ids = (s: string) => Array.from(new TextEncoder().encode(s));

Deno.test("a context's trailing spaces move to the continuation", () => {
  assert.deepEqual(encodePair(bytes, "Answer: ", "yes"), {
    context: ids("\n\nAnswer:"),
    continuation: ids(" yes"),
  }, "a byte prompt starts as a corpus document does, after a blank line");
  const llama = promptTokenizer("llama");
  const pair = encodePair(llama, "Question: is it?\nAnswer:", " yes");
  const whole = llama.encode("Question: is it?\nAnswer: yes");
  assert.deepEqual([...pair.context, ...pair.continuation], whole);
  assert.equal(pair.context[0], 1, "BOS first");
  assert.ok(pair.continuation.length >= 1);
});

Deno.test("requests: one per choice, the continuation at the end, long contexts cut on the left", () => {
  const doc = { context: "The sky is", choices: ["blue", "a lie"], answer: 0 };
  const reqs = documentRequests(bytes, 3, doc, "", 64);
  assert.equal(reqs.length, 2);
  assert.deepEqual(reqs[0].tokens, ids("\n\nThe sky is blue"));
  assert.equal(reqs[0].start, ids("\n\nThe sky is").length);
  assert.deepEqual(reqs[1].tokens.slice(reqs[1].start), ids(" a lie"));
  assert.deepEqual([reqs[1].doc, reqs[1].choice], [3, 1]);
  const cut = documentRequests(bytes, 0, doc, "", 8);
  assert.deepEqual(cut[0].tokens, ids(" is blue"), "8 tokens: the oldest dropped");
  assert.equal(cut[0].start, 3);
  assert.throws(
    () => documentRequests(bytes, 5, doc, "", 5),
    /document 5: choice 0 is 5 tokens, more than the model's window of 5 minus one/,
  );
});

Deno.test("few-shot prefix: description, then each example with its right answer", () => {
  const doc = { context: "Q3", choices: ["x", "y"], answer: 0, description: "About maths.\n\n" };
  const examples = [
    { context: "Q1", choices: ["a", "b"], answer: 1 },
    { context: "Q2", choices: ["c", "d"], answer: 0 },
  ];
  assert.equal(fewshotPrefix(doc, examples), "About maths.\n\nQ1 b\n\nQ2 c\n\n");
  assert.equal(fewshotPrefix({ ...doc, description: undefined }, []), "");
});

Deno.test("the eval tokenizer is generation's, its refusals named", () => {
  assert.equal(evalTokenizer(256).name, "bytes");
  assert.equal(evalTokenizer(32000).name, "llama");
  assert.equal(evalTokenizer(512, "bytes").name, "bytes");
  assert.throws(
    () => evalTokenizer(512),
    /cannot tell the tokenizer of a model with vocab_size 512/,
  );
  assert.throws(() => evalTokenizer(256, "gpt2"), /unknown tokenizer "gpt2"/);
  assert.throws(() => evalTokenizer(256, "llama"), /--tokenizer llama gives ids up to 31999/);
});
