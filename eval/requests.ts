/**
 * From documents to token requests, as lm-evaluation-harness builds its log-likelihood requests:
 * the few-shot prefix, the context, and each choice after the target delimiter, tokenized as
 * one text so that a choice's first token is the one the model would really see after the
 * context. The choice's tokens are what the whole text's tokens add to the context's.
 *
 * Pure: the tokenizer is passed in, and the few-shot examples are picked by the caller.
 *
 * @module
 */
import { EvalDataError } from "./errors.ts";
import { type Document, FEWSHOT_DELIMITER, TARGET_DELIMITER } from "./tasks.ts";

/** Text to token ids, as the model was trained to read it (with its BOS, if it has one). */
export interface TextEncoder {
  encode(text: string): number[];
}

/** One (document, choice) pair to score: the log-likelihood of `tokens[start..]` given the rest. */
export interface ScoreRequest {
  /** Index of the document in the task's scored list. */
  readonly doc: number;
  /** Index of the choice. */
  readonly choice: number;
  /** Context then continuation, left-truncated to the model's window. */
  readonly tokens: readonly number[];
  /** Where the continuation starts in `tokens` (at least 1: something must predict it). */
  readonly start: number;
}

/**
 * The prompt before a document's question: its description, then each few-shot example as its
 * context, the delimiter and its right answer, each followed by a blank line.
 */
export function fewshotPrefix(doc: Document, examples: readonly Document[]): string {
  let prefix = doc.description ?? "";
  for (const ex of examples) {
    prefix += ex.context + TARGET_DELIMITER + ex.choices[ex.answer] + FEWSHOT_DELIMITER;
  }
  return prefix;
}

/**
 * Splits `context + continuation` into the tokens of each: trailing spaces of the context move
 * to the continuation (so `"Answer: "` + `"yes"` tokenizes like `"Answer:"` + `" yes"`), the
 * whole text is tokenized once, and the continuation is what it adds to the context's tokens.
 */
export function encodePair(
  encoder: TextEncoder,
  context: string,
  continuation: string,
): { context: number[]; continuation: number[] } {
  const trimmed = context.replace(/\s+$/u, "");
  const moved = context.slice(trimmed.length);
  const whole = encoder.encode(trimmed + moved + continuation);
  const ctx = encoder.encode(trimmed);
  return { context: ctx, continuation: whole.slice(ctx.length) };
}

/**
 * The requests of one document, one per choice, each at most `window` tokens (the model's
 * sequence length): a long context loses its oldest tokens, as the harness does. Throws
 * {@link EvalDataError} when a choice alone does not fit.
 */
export function documentRequests(
  encoder: TextEncoder,
  docIndex: number,
  doc: Document,
  prefix: string,
  window: number,
): ScoreRequest[] {
  return doc.choices.map((choice, c) => {
    const pair = encodePair(encoder, prefix + doc.context, TARGET_DELIMITER + choice);
    if (pair.continuation.length === 0) {
      throw new EvalDataError(`document ${docIndex}: choice ${c} is empty after tokenizing`);
    }
    if (pair.continuation.length >= window) {
      throw new EvalDataError(
        `document ${docIndex}: choice ${c} is ${pair.continuation.length} tokens, ` +
          `more than the model's window of ${window} minus one`,
      );
    }
    const all = [...pair.context, ...pair.continuation];
    const tokens = all.length > window ? all.slice(all.length - window) : all;
    return { doc: docIndex, choice: c, tokens, start: tokens.length - pair.continuation.length };
  });
}
