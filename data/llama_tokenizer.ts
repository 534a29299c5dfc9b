/**
 * The LLaMA-2 tokenizer (SentencePiece BPE, vocabulary 32000; npm `llama-tokenizer-js`,
 * which embeds the vocabulary and merges) and the document framing the corpus uses:
 * `<s>` (BOS, id 1), the text's tokens, `</s>` (EOS, id 2).
 *
 * @module
 */
import llamaTokenizer from "llama-tokenizer-js";

/** LLaMA-2 vocabulary size. */
export const LLAMA2_VOCAB_SIZE = 32000;
/** Beginning-of-sequence token id. */
export const BOS_ID = 1;
/** End-of-sequence token id. */
export const EOS_ID = 2;

/**
 * `[BOS, ...tokens(text), EOS]`, with SentencePiece's leading-space convention.
 *
 * @example
 * ```ts
 * import { encodeDocument, BOS_ID, EOS_ID } from "./llama_tokenizer.ts";
 * const ids = encodeDocument("Hello world");
 * if (ids[0] !== BOS_ID || ids[ids.length - 1] !== EOS_ID) throw new Error("framing");
 * ```
 */
export function encodeDocument(text: string): number[] {
  const ids = llamaTokenizer.encode(text, true, true, false);
  ids.push(EOS_ID);
  return ids;
}

/** Text of token ids (BOS/EOS dropped); for inspecting samples. */
export function decodeTokens(ids: ArrayLike<number>): string {
  return llamaTokenizer.decode(
    Array.from(ids).filter((t) => t !== BOS_ID && t !== EOS_ID),
    false,
    true,
  );
}
