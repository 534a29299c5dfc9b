import assert from "node:assert/strict";
import { consoleLogger, type GenerateEnd, type GenerateStart, jsonLogger } from "./log.ts";

const START: GenerateStart = {
  model: "checkpoints/llama-bytes",
  folder: "checkpoints/llama-bytes",
  params: 1_869_504,
  tokenizer: "bytes",
  adapter: "llvmpipe",
  prompt: "The",
  promptTokens: 5,
  maxNewTokens: 3,
  contextLength: 8,
  sampling: { temperature: 0.8, topK: 40, topP: 0.95 },
  seed: 7,
  cache: true,
};
const END: GenerateEnd = {
  tokens: 3,
  stop: "max_new_tokens",
  text: " ca\uFFFD",
  rest: "\uFFFD",
  promptTokens: 5,
  prefillMs: 100,
  decodeMs: 50,
  tokensPerSec: 20,
  decodeTokensPerSec: 40,
};

Deno.test("console output: the text on stdout, the model and the speed on stderr", () => {
  let out = "";
  const err: string[] = [];
  const log = consoleLogger({ out: (t) => void (out += t), err: (l) => void err.push(l) });
  log.start(START);
  log.token({ index: 0, id: 32, text: " " });
  log.token({ index: 1, id: 99, text: "ca" });
  log.token({ index: 2, id: 0xc3, text: "" });
  log.end(END);
  assert.equal(out, "The ca\uFFFD\n");
  assert.deepEqual(err, [
    "checkpoints/llama-bytes: 1.87M parameters, bytes tokenizer, temperature 0.8, top-k 40, " +
    "top-p 0.95, seed 7, KV cache of 8 positions, on llvmpipe",
    "3 tokens in 0.15 s: 20.0 tok/s (prompt 5 tokens in 100 ms; decoding 40.0 tok/s); " +
    "stopped: --max-new-tokens reached",
  ]);
});

Deno.test("JSON output: start, a token per token, end, in the log schema's names", () => {
  const lines: string[] = [];
  const log = jsonLogger((l) => lines.push(l), () => 0);
  log.start({ ...START, sampling: { temperature: 0, topK: 0, topP: 1 } });
  log.token({ index: 0, id: 32, text: " " });
  log.end({ ...END, decodeTokensPerSec: null });
  const [start, token, end] = lines.map((l) => JSON.parse(l));
  assert.deepEqual(start, {
    time: "1970-01-01T00:00:00.000Z",
    level: "info",
    event: "start",
    model: "checkpoints/llama-bytes",
    dir: "checkpoints/llama-bytes",
    params: 1869504,
    tokenizer: "bytes",
    adapter: "llvmpipe",
    prompt: "The",
    prompt_tokens: 5,
    max_new_tokens: 3,
    context_length: 8,
    temperature: 0,
    top_k: 0,
    top_p: 1,
    seed: 7,
    cache: true,
  });
  assert.deepEqual(token, { ...token, event: "token", index: 0, id: 32, text: " " });
  assert.deepEqual(end, {
    time: "1970-01-01T00:00:00.000Z",
    level: "info",
    event: "end",
    tokens: 3,
    stop: "max_new_tokens",
    text: " ca\uFFFD",
    prompt_tokens: 5,
    prefill_ms: 100,
    decode_ms: 50,
    elapsed_ms: 150,
    tokens_per_sec: 20,
    decode_tokens_per_sec: null,
  });
});
