/**
 * What `deno task generate` prints: in `console` mode the prompt and the text as it comes on
 * stdout, the model line and the speed on stderr; in `json` mode one JSON object per line on
 * stdout, in the log schema of docs/logs.md (`start`, a `token` per token, `end`). The writers
 * and the clock are injected, so tests capture everything.
 *
 * @module
 */
import { logLine } from "../cli/entry.ts";
import type { SamplingOptions } from "./sampling.ts";
import type { StopReason } from "./generator.ts";
import type { TokenizerName } from "../data/mod.ts";

/** What the generation is, printed once before it starts. */
export interface GenerateStart {
  /** The `--model` given. */
  model: string;
  /** The folder it was read from. */
  folder: string;
  params: number;
  tokenizer: TokenizerName;
  adapter: string;
  prompt: string;
  promptTokens: number;
  maxNewTokens: number;
  /** Positions the KV cache holds. */
  contextLength: number;
  sampling: SamplingOptions;
  seed: number;
  cache: boolean;
}

/** One generated token and the text it lets out (empty while a character is incomplete). */
export interface GenerateToken {
  index: number;
  id: number;
  text: string;
}

/** What the generation did. */
export interface GenerateEnd {
  tokens: number;
  stop: StopReason;
  /** The whole generated text. */
  text: string;
  /** Text still held back at the end (console mode prints it). */
  rest: string;
  promptTokens: number;
  prefillMs: number;
  decodeMs: number;
  tokensPerSec: number;
  decodeTokensPerSec: number | null;
}

/** Receives a generation's progress. */
export interface GenerateLogger {
  start(info: GenerateStart): void;
  token(t: GenerateToken): void;
  end(info: GenerateEnd): void;
}

/** Where output goes: `out` writes to stdout as is (no newline added), `err` one line to stderr. */
export interface GenerateOutput {
  out(text: string): void;
  err(line: string): void;
}

function describeSampling(s: SamplingOptions, seed: number): string {
  if (s.temperature === 0) return "greedy";
  const cuts = [
    s.topK > 0 ? `top-k ${s.topK}` : "",
    s.topP < 1 ? `top-p ${s.topP}` : "",
  ].filter((x) => x !== "");
  return `temperature ${s.temperature}${cuts.map((c) => `, ${c}`).join("")}, seed ${seed}`;
}

const STOPS: Record<StopReason, string> = {
  max_new_tokens: "--max-new-tokens reached",
  stop_token: "end of text (</s>)",
  context_full: "the context is full (max_position_embeddings)",
  interrupted: "interrupted",
};

/** Human output: the text on stdout, the rest on stderr. */
export function consoleLogger(output: GenerateOutput): GenerateLogger {
  return {
    start: (i) => {
      output.err(
        `${i.folder}: ${(i.params / 1e6).toFixed(2)}M parameters, ${i.tokenizer} tokenizer, ` +
          `${describeSampling(i.sampling, i.seed)}, ${i.cache ? "KV cache" : "no cache"} of ` +
          `${i.contextLength} positions, on ${i.adapter}`,
      );
      output.out(i.prompt);
    },
    token: (t) => {
      if (t.text !== "") output.out(t.text);
    },
    end: (e) => {
      output.out(`${e.rest}\n`);
      const decode = e.decodeTokensPerSec === null
        ? ""
        : `; decoding ${e.decodeTokensPerSec.toFixed(1)} tok/s`;
      output.err(
        `${e.tokens} tokens in ${((e.prefillMs + e.decodeMs) / 1000).toFixed(2)} s: ` +
          `${e.tokensPerSec.toFixed(1)} tok/s (prompt ${e.promptTokens} tokens in ` +
          `${e.prefillMs.toFixed(0)} ms${decode}); stopped: ${STOPS[e.stop]}`,
      );
    },
  };
}

/**
 * One JSON object per line (docs/logs.md): `start`, `token` per generated token (its id and the
 * text it lets out), `end` (the whole text, the stop reason, the speeds).
 */
export function jsonLogger(
  write: (line: string) => void,
  clock: () => number = Date.now,
): GenerateLogger {
  const log = (event: string, fields: Record<string, unknown>) =>
    write(logLine(clock(), "info", event, fields));
  return {
    start: (i) =>
      log("start", {
        model: i.model,
        dir: i.folder,
        params: i.params,
        tokenizer: i.tokenizer,
        adapter: i.adapter,
        prompt: i.prompt,
        prompt_tokens: i.promptTokens,
        max_new_tokens: i.maxNewTokens,
        context_length: i.contextLength,
        temperature: i.sampling.temperature,
        top_k: i.sampling.topK,
        top_p: i.sampling.topP,
        seed: i.seed,
        cache: i.cache,
      }),
    token: (t) => log("token", { index: t.index, id: t.id, text: t.text }),
    end: (e) =>
      log("end", {
        tokens: e.tokens,
        stop: e.stop,
        text: e.text,
        prompt_tokens: e.promptTokens,
        prefill_ms: Math.round(e.prefillMs),
        decode_ms: Math.round(e.decodeMs),
        elapsed_ms: Math.round(e.prefillMs + e.decodeMs),
        tokens_per_sec: e.tokensPerSec,
        decode_tokens_per_sec: e.decodeTokensPerSec,
      }),
  };
}
