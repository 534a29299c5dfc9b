/**
 * Which tokenizer turns a prompt into a model's token ids and its samples back into text, and
 * the two bundled ones: UTF-8 bytes (vocabulary 256, the demo's byte model) and LLaMA-2's
 * SentencePiece (vocabulary 32000, npm `llama-tokenizer-js`: llama-20m, llama-mini).
 *
 * The rule ({@link chooseTokenizer}), from the model's `config.json` and folder:
 * - `--tokenizer bytes|llama` is used as given (the model's vocabulary must hold its ids);
 * - otherwise (`auto`) `vocab_size` 256 is bytes and 32000 is LLaMA-2, whether or not the folder
 *   holds a `tokenizer.json`/`tokenizer.model` (this command reads neither: a 32000-token folder is
 *   taken to use LLaMA-2's);
 * - any other vocabulary is refused, naming the tokenizer file the folder holds if any (its own
 *   tokenizer, which is not bundled) and `--tokenizer` to use a bundled one anyway.
 *
 * @module
 */
import { decodeByteTokens } from "./byte_tokenizer.ts";
import { CORPUS_TOKENIZERS, type TokenizerName } from "./corpus.ts";
import { decodeTokens as decodeLlamaTokens, encodeDocument, EOS_ID } from "./llama_tokenizer.ts";

/** `--tokenizer` values: a bundled tokenizer, or `auto` (the rule of the module doc). */
export const TOKENIZER_CHOICES = ["auto", "bytes", "llama"] as const;
/** One of {@link TOKENIZER_CHOICES}. */
export type TokenizerChoice = typeof TOKENIZER_CHOICES[number];
/** Files that name a Hugging Face model's own tokenizer. */
export const TOKENIZER_FILES = ["tokenizer.json", "tokenizer.model"] as const;

/** No bundled tokenizer fits the model; the message says why and what to pass. */
export class TokenizerChoiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TokenizerChoiceError";
  }
}

/**
 * The tokenizer for a model of `vocabSize` tokens whose folder holds `tokenizerFiles` (of
 * {@link TOKENIZER_FILES}), by the rule of the module doc. Throws {@link TokenizerChoiceError}.
 *
 * @example
 * ```ts
 * import { chooseTokenizer } from "./prompt_tokenizer.ts";
 * if (chooseTokenizer({ choice: "auto", vocabSize: 256, tokenizerFiles: [] }) !== "bytes") {
 *   throw new Error("a 256-token model reads bytes");
 * }
 * ```
 */
export function chooseTokenizer(
  o: { choice: TokenizerChoice; vocabSize: number; tokenizerFiles: readonly string[] },
): TokenizerName {
  const { choice, vocabSize } = o;
  if (choice !== "auto") {
    const needs = CORPUS_TOKENIZERS[choice].vocabSize;
    if (vocabSize < needs) {
      throw new TokenizerChoiceError(
        `--tokenizer ${choice} gives ids up to ${needs - 1}, but the model's vocab_size is ` +
          `${vocabSize}`,
      );
    }
    return choice;
  }
  for (const name of ["bytes", "llama"] as const) {
    if (vocabSize === CORPUS_TOKENIZERS[name].vocabSize) return name;
  }
  const own = o.tokenizerFiles.length > 0
    ? `; its folder has its own tokenizer (${o.tokenizerFiles.join(", ")}), which is not bundled`
    : "";
  throw new TokenizerChoiceError(
    `cannot tell the tokenizer of a model with vocab_size ${vocabSize}${own}: the bundled ones ` +
      `are bytes (vocab_size 256) and llama (LLaMA-2, 32000); pass --tokenizer bytes|llama to ` +
      `use one anyway`,
  );
}

/** A bundled tokenizer as generation uses it. */
export interface PromptTokenizer {
  readonly name: TokenizerName;
  /**
   * The prompt's ids: a blank line and its UTF-8 bytes (every document of the byte corpus follows
   * a blank line: the bytes' stand-in for `<s>`), or LLaMA-2's `<s>` and tokens (no `</s>`).
   */
  encode(text: string): number[];
  /** The text of `ids`; an id the tokenizer does not have shows as U+FFFD. */
  decode(ids: readonly number[]): string;
  /** Ids that end a generation: LLaMA-2's `</s>`; none for bytes (documents end in a blank line). */
  readonly stopTokens: readonly number[];
}

/** `decode` over runs of ids below `vocab`, with U+FFFD for each id past it. */
function decodeKnown(
  ids: readonly number[],
  vocab: number,
  decode: (run: number[]) => string,
): string {
  let text = "", run: number[] = [];
  for (const id of ids) {
    if (id < vocab) {
      run.push(id);
      continue;
    }
    text += decode(run) + "\uFFFD";
    run = [];
  }
  return text + decode(run);
}

const encoder = new TextEncoder();
/** What precedes every document of the byte corpus (data/byte_tokenizer.ts ends each with it). */
const DOCUMENT_START = "\n\n";

/** The bundled tokenizer `name`. */
export function promptTokenizer(name: TokenizerName): PromptTokenizer {
  const vocab = CORPUS_TOKENIZERS[name].vocabSize;
  switch (name) {
    case "bytes":
      return {
        name,
        encode: (text) => Array.from(encoder.encode(`${DOCUMENT_START}${text}`)),
        decode: (ids) => decodeKnown(ids, vocab, decodeByteTokens),
        stopTokens: [],
      };
    case "llama":
      return {
        name,
        // encodeDocument frames a document as <s> … </s>; a prompt goes on, so no </s>.
        encode: (text) => encodeDocument(text).slice(0, -1),
        decode: (ids) => decodeKnown(ids, vocab, decodeLlamaTokens),
        stopTokens: [EOS_ID],
      };
  }
}
