import assert from "node:assert/strict";
import { generate, GenerateError, modelFolder } from "./main.ts";
import { generateOptions } from "./cli.ts";
import { writeTinyCheckpoint } from "./testing/checkpoint.ts";
import { logSchemaProblem } from "../client/testing/log_schema.ts";
import { hfCacheFolderName } from "../model/mod.ts";
import { UsageError } from "../common/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** `deno task generate` as a user runs it. */
async function runCli(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "generate", ...args],
    cwd: ROOT,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** Captured output of an in-process {@link generate}. */
function capture() {
  const o = { out: "", err: [] as string[] };
  return {
    o,
    output: { out: (t: string) => void (o.out += t), err: (l: string) => void o.err.push(l) },
  };
}

Deno.test("deno task generate: text on stdout, speed on stderr; JSON logs; the same greedy tokens", async () => {
  const dir = await writeTinyCheckpoint(await Deno.makeTempDir({ prefix: "generate-" }));
  try {
    const text = await runCli(["--model", dir, "--prompt", "ab", "--max-new-tokens", "6"]);
    assert.equal(text.code, 0, text.stderr);
    assert.ok(text.stdout.startsWith("ab"), text.stdout);
    assert.match(
      text.stderr,
      /0\.\d\dM parameters, bytes tokenizer, greedy, KV cache of 10 positions/,
    );
    assert.match(
      text.stderr,
      /6 tokens in [\d.]+ s: [\d.]+ tok\/s \(prompt 4 tokens in \d+ ms; decoding [\d.]+ tok\/s\); stopped: --max-new-tokens reached/,
    );

    const json = await runCli([
      "--model",
      dir,
      "--prompt",
      "ab",
      "--max-new-tokens",
      "6",
      "--logs",
      "json",
    ]);
    assert.equal(json.code, 0, json.stderr);
    const lines = json.stdout.trimEnd().split("\n");
    for (const line of lines) assert.equal(logSchemaProblem(line), null);
    const events = lines.map((l) => JSON.parse(l));
    assert.deepEqual(events.map((e) => e.event), ["start", ...Array(6).fill("token"), "end"]);
    assert.equal(events[0].tokenizer, "bytes");
    assert.equal(events[0].prompt_tokens, 4, "a blank line, then the prompt's bytes");
    const end = events[7];
    assert.equal(end.tokens, 6);
    assert.equal(end.stop, "max_new_tokens");
    assert.ok(end.tokens_per_sec > 0);
    // Token events carry the text as it is let out; a character still incomplete at the end is
    // only in `end.text`.
    assert.ok(end.text.startsWith(events.slice(1, 7).map((e) => e.text).join("")));
    // The console run printed the same text.
    assert.equal(text.stdout, `ab${end.text}\n`);

    // In process: the same tokens; a seed's samples repeat.
    const { output } = capture();
    const greedy = await generate(
      generateOptions({ model: dir, prompt: "ab", "max-new-tokens": "6" }),
      { output },
    );
    assert.deepEqual(greedy.tokens, events.slice(1, 7).map((e) => e.id));
    const sampled = (seed: string) =>
      generate(
        generateOptions({
          model: dir,
          prompt: "ab",
          "max-new-tokens": "8",
          temperature: "1",
          "top-k": "40",
          seed,
        }),
        { output },
      );
    assert.deepEqual((await sampled("5")).tokens, (await sampled("5")).tokens);
    const noCache = await generate(
      generateOptions({ model: dir, prompt: "ab", "max-new-tokens": "6", "no-cache": true }),
      { output },
    );
    assert.deepEqual(noCache.tokens, greedy.tokens);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task generate: a missing folder and a bad flag value are named", async () => {
  const missing = await runCli(["--model", "/nonexistent/checkpoint"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /generate: --model \/nonexistent\/checkpoint: no such folder/);
  const bad = await runCli(["--model", "x", "--temperature", "-1"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--temperature must be a number >= 0 \(0: greedy\), found "-1"/);
  const topP = await runCli(["--model", "x", "--top-p", "1.5"]);
  assert.equal(topP.code, 2);
  assert.match(topP.stderr, /--top-p must be in \(0, 1\] \(1: off\), found "1.5"/);
  const noModel = await runCli([]);
  assert.equal(noModel.code, 2);
  assert.match(noModel.stderr, /--model is required/);
});

Deno.test("flags are checked by name", () => {
  const ok = generateOptions({ model: "m" });
  assert.deepEqual(ok, {
    model: "m",
    prompt: "",
    maxNewTokens: 128,
    sampling: { temperature: 0, topK: 0, topP: 1 },
    seed: 1,
    tokenizer: "auto",
    cache: true,
    logs: "console",
  });
  for (
    const [flag, value, message] of [
      ["max-new-tokens", "0", /--max-new-tokens must be an integer in \[1,/],
      ["top-k", "2.5", /--top-k must be an integer/],
      ["seed", "-3", /--seed must be an integer in \[0, 4294967295\]/],
      ["tokenizer", "gpt2", /--tokenizer must be one of auto, bytes, llama, found "gpt2"/],
      ["logs", "yaml", /--logs must be one of console, json/],
    ] as const
  ) {
    assert.throws(
      () => generateOptions({ model: "m", [flag]: value }),
      (e: Error) => e instanceof UsageError && message.test(e.message),
    );
  }
});

Deno.test("models that cannot be sampled from are refused with the reason", async () => {
  const dir = await Deno.makeTempDir({ prefix: "generate-" });
  try {
    const { output } = capture();
    const run = (model: string, extra: Record<string, string> = {}) =>
      generate(generateOptions({ model, "max-new-tokens": "2", ...extra }), { output });
    // config.json alone: a seeded start, nothing trained.
    const bare = `${dir}/bare`;
    await writeTinyCheckpoint(bare);
    await Deno.remove(`${bare}/model.safetensors`);
    await assert.rejects(() => run(bare), /has config.json but no weights/);
    // A vocabulary neither bundled tokenizer has: refused, unless --tokenizer says which.
    const odd = await writeTinyCheckpoint(`${dir}/odd`, { vocabSize: 300 });
    await Deno.writeTextFile(`${odd}/tokenizer.json`, "{}");
    await assert.rejects(
      () => run(odd),
      /vocab_size 300; its folder has its own tokenizer \(tokenizer.json\)/,
    );
    assert.equal((await run(odd, { tokenizer: "bytes" })).tokenizer, "bytes");
    // A prompt the context cannot take.
    const short = await writeTinyCheckpoint(`${dir}/short`, { maxPositions: 4 });
    await assert.rejects(
      () => run(short, { prompt: "abc" }),
      /the prompt is 5 tokens, and .* max_position_embeddings 4 leaves no room/,
    );
    // Generation stops at the end of the context.
    const full = await generate(
      generateOptions({ model: short, prompt: "a", "max-new-tokens": "9" }),
      { output },
    );
    assert.equal(full.stop, "context_full");
    assert.equal(full.tokens.length, 1);
    await assert.rejects(() => run(`${dir}/missing/`), GenerateError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a 32000-token model reads LLaMA-2 tokens", async () => {
  const dir = await writeTinyCheckpoint(await Deno.makeTempDir({ prefix: "generate-llama-" }), {
    vocabSize: 32000,
  });
  try {
    const { o, output } = capture();
    const r = await generate(
      generateOptions({ model: dir, prompt: "Hello world", "max-new-tokens": "4" }),
      { output },
    );
    assert.equal(r.tokenizer, "llama");
    assert.equal(r.promptTokens[0], 1, "<s> first");
    assert.equal(r.tokens.length, 4);
    assert.ok(o.out.startsWith("Hello world"), o.out);
    assert.match(o.err[0], /llama tokenizer/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a Hub repo id is found in the Hugging Face cache layout", async () => {
  const cache = await Deno.makeTempDir({ prefix: "generate-hf-" });
  try {
    const root = `${cache}/${hfCacheFolderName("psyche/tiny-bytes")}`;
    await writeTinyCheckpoint(`${root}/snapshots/abc123`);
    await Deno.mkdir(`${root}/refs`);
    await Deno.writeTextFile(`${root}/refs/main`, "abc123\n");
    const hub = { hfCache: cache, env: () => undefined };
    assert.equal(await modelFolder("psyche/tiny-bytes", hub), `${root}/snapshots/abc123`);
    assert.equal(await modelFolder("psyche/tiny-bytes@abc123", hub), `${root}/snapshots/abc123`);
    const { output } = capture();
    const r = await generate(
      generateOptions({ model: "psyche/tiny-bytes", "max-new-tokens": "3" }),
      { output, hub },
    );
    assert.equal(r.tokens.length, 3);
    await assert.rejects(
      () => modelFolder("psyche/absent", hub),
      /--model psyche\/absent is neither a folder nor a Hub repo on this machine: Hub repo "psyche\/absent" is not available locally/,
    );
  } finally {
    await Deno.remove(cache, { recursive: true });
  }
});

/** Words of a one-line shell command: spaces split, double quotes group. */
function shellWords(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]);
}

Deno.test("the example command of docs/using-the-model.md runs", async () => {
  const doc = await Deno.readTextFile(`${ROOT}docs/using-the-model.md`);
  const line = doc.split("\n").find((l) => l.startsWith("deno task generate "));
  assert.ok(line, "the page shows a deno task generate command");
  const args = shellWords(line).slice(3);
  const model = args.indexOf("--model") + 1;
  assert.ok(model > 0);
  const dir = await writeTinyCheckpoint(await Deno.makeTempDir({ prefix: "generate-doc-" }));
  try {
    // The page's checkpoint is a trained byte model; a tiny one of the same vocabulary stands in.
    args[model] = dir;
    const r = await runCli(args);
    assert.equal(r.code, 0, r.stderr);
    const prompt = args[args.indexOf("--prompt") + 1];
    assert.ok(r.stdout.startsWith(prompt), r.stdout);
    assert.match(r.stderr, /tok\/s/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
