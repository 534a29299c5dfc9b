/**
 * The byte tokenizer: a token is one byte of the text's UTF-8, so the vocabulary is 256 and
 * needs no file. Documents are separated by a blank line, not by special tokens. A model over
 * bytes has a small embedding and head, which is what lets the demo learn in minutes on a CPU.
 *
 * @module
 */

/** Byte vocabulary size. */
export const BYTE_VOCAB_SIZE = 256;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: false });

/**
 * The UTF-8 bytes of `text` followed by a blank line, as token ids.
 *
 * @example
 * ```ts
 * import { encodeByteDocument } from "./byte_tokenizer.ts";
 * const ids = encodeByteDocument("hé");
 * if (ids.join() !== "104,195,169,10,10") throw new Error("UTF-8 bytes, then a blank line");
 * ```
 */
export function encodeByteDocument(text: string): number[] {
  return Array.from(encoder.encode(`${text}\n\n`));
}

/** Text of byte token ids; a broken UTF-8 sequence becomes U+FFFD. Throws on an id over 255. */
export function decodeByteTokens(ids: ArrayLike<number>): string {
  const bytes = new Uint8Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (!Number.isInteger(id) || id < 0 || id >= BYTE_VOCAB_SIZE) {
      throw new RangeError(`Token id ${id} at index ${i} is not a byte`);
    }
    bytes[i] = id;
  }
  return decoder.decode(bytes);
}
