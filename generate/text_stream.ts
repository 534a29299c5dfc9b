/**
 * Printing sampled text as it comes: the text of the prompt and the tokens so far is decoded
 * whole, and what it adds to what was printed goes out, except a trailing U+FFFD, which is held
 * back until the next token (a UTF-8 character split over byte tokens, or a SentencePiece byte
 * fallback, decodes to U+FFFD until its last byte arrives). Pure.
 *
 * @module
 */

/** Text to print after each token of a generation. */
export class TextStream {
  readonly #decode: (ids: readonly number[]) => string;
  readonly #ids: number[];
  readonly #promptText: string;
  #printed = "";

  /** `decode` turns ids into text; `prompt` is the ids generation continues. */
  constructor(decode: (ids: readonly number[]) => string, prompt: readonly number[]) {
    this.#decode = decode;
    this.#ids = [...prompt];
    this.#promptText = decode(prompt);
  }

  /** The generated text so far (without the prompt), whole. */
  get text(): string {
    const all = this.#decode(this.#ids);
    return all.startsWith(this.#promptText) ? all.slice(this.#promptText.length) : all;
  }

  /**
   * Adds token `id`; returns the text to print now (maybe empty).
   *
   * @example
   * ```ts
   * import { TextStream } from "./text_stream.ts";
   * const decode = (ids: readonly number[]) => new TextDecoder().decode(Uint8Array.from(ids));
   * const s = new TextStream(decode, [104, 105]);          // "hi"
   * const parts = [32, 0xc3, 0xa9].map((b) => s.push(b)); // " é" in two bytes
   * if (parts.join("|") !== " ||é") throw new Error(parts.join("|"));
   * ```
   */
  push(id: number): string {
    this.#ids.push(id);
    const text = this.text;
    let ready = text.length;
    while (ready > this.#printed.length && text[ready - 1] === "\uFFFD") ready--;
    return this.#emit(text.slice(0, ready));
  }

  /** Whatever is still held back (at the end of a generation). */
  flush(): string {
    return this.#emit(this.text);
  }

  #emit(upTo: string): string {
    // Text already printed cannot be taken back: print on from its length.
    const out = upTo.length > this.#printed.length ? upTo.slice(this.#printed.length) : "";
    if (out !== "") this.#printed = upTo;
    return out;
  }
}
