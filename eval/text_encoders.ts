/**
 * The tokenizer an eval reads a model's prompts with: UTF-8 bytes for a 256-token model (the
 * demo's), the bundled LLaMA-2 tokenizer (with its BOS) for a 32,000-token one, or the one
 * `--tokenizer` names. A model of any other vocabulary needs `--tokenizer`, since guessing
 * would score it on the wrong ids.
 *
 * @module
 */
import {
  BYTE_VOCAB_SIZE,
  encodeLlamaText,
  LLAMA2_VOCAB_SIZE,
  TOKENIZER_NAMES,
  type TokenizerName,
} from "../data/mod.ts";
import { EvalDataError } from "./errors.ts";
import type { TextEncoder } from "./requests.ts";

const utf8 = new globalThis.TextEncoder();

const ENCODERS: Readonly<Record<TokenizerName, TextEncoder & { vocabSize: number }>> = {
  bytes: { vocabSize: BYTE_VOCAB_SIZE, encode: (text) => Array.from(utf8.encode(text)) },
  llama: { vocabSize: LLAMA2_VOCAB_SIZE, encode: encodeLlamaText },
};

/** The tokenizer of a model with `vocabSize` ids, or the named one when given. */
export function tokenizerFor(vocabSize: number, named?: string): TokenizerName {
  if (named !== undefined) {
    if (!(TOKENIZER_NAMES as readonly string[]).includes(named)) {
      throw new EvalDataError(
        `unknown tokenizer "${named}" (known: ${TOKENIZER_NAMES.join(", ")})`,
      );
    }
    return named as TokenizerName;
  }
  if (vocabSize === BYTE_VOCAB_SIZE) return "bytes";
  if (vocabSize === LLAMA2_VOCAB_SIZE) return "llama";
  throw new EvalDataError(
    `the model's vocabulary of ${vocabSize} matches no bundled tokenizer; name one with ` +
      `--tokenizer (${TOKENIZER_NAMES.join(", ")})`,
  );
}

/** The encoder of a tokenizer; refuses one whose ids would not fit the model. */
export function textEncoder(name: TokenizerName, vocabSize: number): TextEncoder {
  const encoder = ENCODERS[name];
  if (encoder.vocabSize > vocabSize) {
    throw new EvalDataError(
      `tokenizer "${name}" has ${encoder.vocabSize} ids, the model only ${vocabSize}`,
    );
  }
  return encoder;
}
