/**
 * The tokenizer an eval reads a model's prompts with: the one generation uses
 * (data/prompt_tokenizer.ts: UTF-8 bytes after a blank line for a 256-token model, LLaMA-2 with its
 * `<s>` for a 32,000-token one, or the one `--tokenizer` names), so a prompt is framed as the
 * model saw the start of a document in training. Its refusals become {@link EvalDataError}s.
 *
 * @module
 */
import {
  chooseTokenizer,
  type PromptTokenizer,
  promptTokenizer,
  TOKENIZER_CHOICES,
  type TokenizerChoice,
  TokenizerChoiceError,
} from "../data/mod.ts";
import { EvalDataError } from "./errors.ts";

/**
 * The tokenizer of a model with `vocabSize` ids whose folder holds `tokenizerFiles`, or the
 * named one (`bytes`, `llama`, `auto`).
 */
export function evalTokenizer(
  vocabSize: number,
  named: string = "auto",
  tokenizerFiles: readonly string[] = [],
): PromptTokenizer {
  if (!(TOKENIZER_CHOICES as readonly string[]).includes(named)) {
    throw new EvalDataError(
      `unknown tokenizer "${named}" (known: ${TOKENIZER_CHOICES.join(", ")})`,
    );
  }
  try {
    const name = chooseTokenizer({ choice: named as TokenizerChoice, vocabSize, tokenizerFiles });
    return promptTokenizer(name);
  } catch (e) {
    if (!(e instanceof TokenizerChoiceError)) throw e;
    throw new EvalDataError(e.message, { cause: e });
  }
}
