/**
 * The generation loop: the prompt is read once (the prefill), then each token is chosen from the
 * last logits and fed back, until `maxNewTokens`, a stop token (LLaMA-2's `</s>`) or the end of
 * the model's context. With the cache (the default) a new token costs one token's forward pass
 * (model/inference/decoder.ts); without it every token re-reads the whole sequence from an empty
 * cache, which is what generation costs without a KV cache (the benchmark's baseline).
 *
 * The model and the clock come in, so tests drive the loop with a fake model and a fake clock.
 *
 * @module
 */

/** What the loop needs of a model: model/inference/mod.ts `LlamaDecoder` is one. */
export interface LogitsModel {
  /** Positions the model can hold: prompt and generated tokens together. */
  readonly contextLength: number;
  /** Empties the cache. */
  reset(): void;
  /** Appends tokens to the sequence; returns the last one's logits `[V]`. */
  append(tokens: ArrayLike<number>, options?: { signal?: AbortSignal }): Promise<Float32Array>;
}

/** Why a generation ended. */
export type StopReason = "max_new_tokens" | "stop_token" | "context_full" | "interrupted";

/** One generated token, as the loop reports it. */
export interface GeneratedToken {
  /** 0 for the first generated token. */
  readonly index: number;
  readonly id: number;
}

/** Options of {@link generateTokens}. */
export interface GenerateOptions {
  /** Tokens to generate at most (≥ 1). */
  readonly maxNewTokens: number;
  /** Chooses each token from the logits (generate/sampler.ts `TokenSampler`). */
  readonly sampler: { next(logits: Float32Array): number };
  /** Tokens that end the generation (kept as its last token). */
  readonly stopTokens?: readonly number[];
  /** Use the KV cache (default true); false re-reads the whole sequence for every token. */
  readonly cache?: boolean;
  /** Called after each token is chosen. */
  readonly onToken?: (token: GeneratedToken) => void;
  /** Ends the loop after the token in flight (stop reason `interrupted`). */
  readonly stop?: AbortSignal;
  /** Aborts at once (the promise rejects). */
  readonly signal?: AbortSignal;
  /** Milliseconds (default `performance.now`). */
  readonly clock?: () => number;
}

/** What {@link generateTokens} did. */
export interface GenerateResult {
  /** The generated ids (a stop token included). */
  readonly tokens: number[];
  readonly stop: StopReason;
  readonly promptTokens: number;
  /** Time to the first token's logits: the prompt's forward pass. */
  readonly prefillMs: number;
  /** Time of everything after: the forward passes of every token but the last, and sampling. */
  readonly decodeMs: number;
}

/** New tokens per second over the whole generation, prefill included (0 when none). */
export function tokensPerSecond(r: GenerateResult): number {
  const ms = r.prefillMs + r.decodeMs;
  return ms > 0 ? (r.tokens.length * 1000) / ms : 0;
}

/**
 * Tokens per second of the decoding alone: the forward passes after the prefill (one per token
 * but the last, which needs none) over their time; null with fewer than two tokens.
 */
export function decodeTokensPerSecond(r: GenerateResult): number | null {
  const passes = r.tokens.length - 1;
  return passes > 0 && r.decodeMs > 0 ? (passes * 1000) / r.decodeMs : null;
}

/**
 * Generates up to `maxNewTokens` tokens after `prompt` (at least one token; the model's cache is
 * reset first). Throws a RangeError for an empty prompt, one longer than the context, or a bad
 * `maxNewTokens`.
 */
export async function generateTokens(
  model: LogitsModel,
  prompt: readonly number[],
  options: GenerateOptions,
): Promise<GenerateResult> {
  const { maxNewTokens, sampler } = options;
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) {
    throw new RangeError(`maxNewTokens must be an integer >= 1, got ${maxNewTokens}`);
  }
  if (prompt.length === 0) throw new RangeError("the prompt has no tokens");
  if (prompt.length >= model.contextLength) {
    throw new RangeError(
      `the prompt's ${prompt.length} tokens leave no room in the model's context of ` +
        `${model.contextLength} positions`,
    );
  }
  const clock = options.clock ?? (() => performance.now());
  const cache = options.cache ?? true;
  const stops = new Set(options.stopTokens ?? []);
  const signal = options.signal;
  const started = clock();
  model.reset();
  let logits = await model.append(prompt, { signal });
  const prefillMs = clock() - started;
  const tokens: number[] = [];
  let stop: StopReason;
  for (;;) {
    signal?.throwIfAborted();
    const id = sampler.next(logits);
    tokens.push(id);
    options.onToken?.({ index: tokens.length - 1, id });
    if (stops.has(id)) stop = "stop_token";
    else if (tokens.length >= maxNewTokens) stop = "max_new_tokens";
    else if (prompt.length + tokens.length >= model.contextLength) stop = "context_full";
    else if (options.stop?.aborted) stop = "interrupted";
    else {
      if (cache) {
        logits = await model.append([id], { signal });
      } else {
        model.reset();
        logits = await model.append([...prompt, ...tokens], { signal });
      }
      continue;
    }
    break;
  }
  return {
    tokens,
    stop,
    promptTokens: prompt.length,
    prefillMs,
    decodeMs: clock() - started - prefillMs,
  };
}
