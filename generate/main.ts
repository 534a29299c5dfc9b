/**
 * `deno task generate`: text from a trained Llama checkpoint. Finds the folder (a path, or a Hub
 * repo id on disk: model/hub.ts), reads it (model/checkpoint.ts), picks the tokenizer
 * (data/prompt_tokenizer.ts), puts the weights in a {@link LlamaDecoder} (model/inference/: a forward
 * with a key/value cache) and runs the loop of generate/generator.ts, printing as it goes
 * (generate/log.ts). See generate/cli.ts for the flags and docs/using-the-model.md for examples:
 *
 * ```sh
 * deno task generate --model checkpoints/llama-bytes --prompt "The jury said" --max-new-tokens 64
 * ```
 *
 * @module
 */
import { GENERATE_SPEC, type GenerateCliOptions, generateOptions } from "./cli.ts";
import {
  decodeTokensPerSecond,
  generateTokens,
  type StopReason,
  tokensPerSecond,
} from "./generator.ts";
import { consoleLogger, type GenerateOutput, jsonLogger } from "./log.ts";
import { TokenSampler } from "./sampler.ts";
import { TextStream } from "./text_stream.ts";
import {
  chooseTokenizer,
  promptTokenizer,
  TOKENIZER_FILES,
  type TokenizerName,
} from "../data/mod.ts";
import { logLine, parseOrExit } from "../cli/entry.ts";
import {
  countParameters,
  type HubLookupOptions,
  readModelDir,
  resolveHubRepo,
} from "../model/mod.ts";
import { LlamaDecoder } from "../model/inference/mod.ts";
import { GpuRuntime } from "../shaders/mod.ts";

/** A model that cannot be sampled from; the message says why (exit status 1). */
export class GenerateError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "GenerateError";
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return false;
    throw e;
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isFile;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return false;
    throw e;
  }
}

/**
 * The folder `--model` names: an existing folder as given; else, unless it can only be a path
 * (`/…`, `./…`, `a/b/c`), a Hub repo id `owner/name[@revision]` looked up on disk (model/hub.ts:
 * `$PSYCHE_HUB_DIR`, the Hugging Face cache). Throws {@link GenerateError} saying where it looked.
 */
export async function modelFolder(model: string, lookup: HubLookupOptions = {}): Promise<string> {
  if (await isDirectory(model)) return model;
  const pathOnly = /^(\/|\.|~)/.test(model) || model.split("/").length !== 2 ||
    model.endsWith("/");
  if (pathOnly) throw new GenerateError(`--model ${model}: no such folder`);
  const at = model.lastIndexOf("@");
  const repo = at > 0
    ? { repoId: model.slice(0, at), revision: model.slice(at + 1) }
    : { repoId: model, revision: null };
  try {
    return await resolveHubRepo(repo, lookup);
  } catch (cause) {
    throw new GenerateError(
      `--model ${model} is neither a folder nor a Hub repo on this machine: ` +
        (cause as Error).message,
      { cause },
    );
  }
}

/** What {@link generate} did. */
export interface GenerateOutcome {
  tokenizer: TokenizerName;
  promptTokens: number[];
  tokens: number[];
  text: string;
  stop: StopReason;
  tokensPerSec: number;
}

/**
 * Runs `deno task generate` with parsed options. `stop` ends the generation after the token in
 * flight (the text so far and the speed are still printed); `signal` aborts at once.
 */
export async function generate(
  options: GenerateCliOptions,
  io: {
    output: GenerateOutput;
    stop?: AbortSignal;
    signal?: AbortSignal;
    hub?: HubLookupOptions;
    clock?: () => number;
  },
): Promise<GenerateOutcome> {
  const folder = await modelFolder(options.model, io.hub);
  const { config, layout, weights } = await readModelDir(folder);
  if (weights === null) {
    throw new GenerateError(
      `${folder} has config.json but no weights (model.safetensors or its shards): nothing to ` +
        `sample from; train it first (deno task train --model ${folder})`,
    );
  }
  const tokenizerFiles: string[] = [];
  for (const name of TOKENIZER_FILES) {
    if (await isFile(`${folder}/${name}`)) tokenizerFiles.push(name);
  }
  let tokenizerName: TokenizerName;
  try {
    tokenizerName = chooseTokenizer({
      choice: options.tokenizer,
      vocabSize: config.vocabSize,
      tokenizerFiles,
    });
  } catch (cause) {
    throw new GenerateError(`${folder}: ${(cause as Error).message}`, { cause });
  }
  const tokenizer = promptTokenizer(tokenizerName);
  const prompt = tokenizer.encode(options.prompt);
  const maxPositions = config.maxPositionEmbeddings;
  if (prompt.length >= maxPositions) {
    throw new GenerateError(
      `the prompt is ${prompt.length} tokens, and ${folder}'s max_position_embeddings ` +
        `${maxPositions} leaves no room for a new one`,
    );
  }
  const contextLength = Math.min(maxPositions, prompt.length + options.maxNewTokens);
  using rt = await GpuRuntime.create();
  using decoder = new LlamaDecoder(rt, { config, layout, weights, contextLength });
  const logger = options.logs === "json"
    ? jsonLogger((line) => io.output.out(`${line}\n`), io.clock)
    : consoleLogger(io.output);
  logger.start({
    model: options.model,
    folder,
    params: countParameters(config),
    tokenizer: tokenizerName,
    adapter: rt.adapterName,
    prompt: options.prompt,
    promptTokens: prompt.length,
    maxNewTokens: options.maxNewTokens,
    contextLength,
    sampling: options.sampling,
    seed: options.seed,
    cache: options.cache,
  });
  const stream = new TextStream(tokenizer.decode, prompt);
  const result = await generateTokens(decoder, prompt, {
    maxNewTokens: options.maxNewTokens,
    sampler: new TokenSampler(options.sampling, options.seed),
    stopTokens: tokenizer.stopTokens,
    cache: options.cache,
    onToken: (t) => logger.token({ ...t, text: stream.push(t.id) }),
    stop: io.stop,
    signal: io.signal,
  });
  const rest = stream.flush();
  const tokensPerSec = tokensPerSecond(result);
  logger.end({
    tokens: result.tokens.length,
    stop: result.stop,
    text: stream.text,
    rest,
    promptTokens: prompt.length,
    prefillMs: result.prefillMs,
    decodeMs: result.decodeMs,
    tokensPerSec,
    decodeTokensPerSec: decodeTokensPerSecond(result),
  });
  return {
    tokenizer: tokenizerName,
    promptTokens: prompt,
    tokens: result.tokens,
    text: stream.text,
    stop: result.stop,
    tokensPerSec,
  };
}

if (import.meta.main) {
  const options = parseOrExit(GENERATE_SPEC, (parsed) => generateOptions(parsed.values));
  // The first SIGINT/SIGTERM ends after the token in flight and prints the summary; a second aborts.
  const stop = new AbortController();
  const abort = new AbortController();
  const onSignal = () => {
    if (!stop.signal.aborted) stop.abort(new Error("interrupted"));
    else abort.abort(new Error("interrupted twice"));
  };
  const signals = ["SIGINT", "SIGTERM"] as const;
  for (const s of signals) Deno.addSignalListener(s, onSignal);
  const encoder = new TextEncoder();
  const writeOut = (text: string) => {
    for (let bytes = encoder.encode(text); bytes.length > 0;) {
      bytes = bytes.subarray(Deno.stdout.writeSync(bytes));
    }
  };
  try {
    await generate(options, {
      output: {
        out: writeOut,
        err: (line) => console.error(line),
      },
      stop: stop.signal,
      signal: abort.signal,
    });
  } catch (e) {
    const message = (e as Error).message;
    if (options.logs === "json") {
      console.log(logLine(Date.now(), "error", "error", { what: "generate", error: message }));
    }
    console.error(`generate: ${message}`);
    Deno.exit(1);
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, onSignal);
  }
}
