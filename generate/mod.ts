/**
 * `deno task generate`: text from a trained checkpoint. The pure parts: sampling, the tokenizer
 * rule, streamed text.
 *
 * @module
 */
export {
  argmax,
  type Candidates,
  candidates,
  checkSampling,
  chooseToken,
  drawCandidate,
  GREEDY,
  type SamplingOptions,
} from "./sampling.ts";
export { samplingSeedBytes, TokenSampler } from "./sampler.ts";
export {
  chooseTokenizer,
  type PromptTokenizer,
  promptTokenizer,
  TOKENIZER_CHOICES,
  TOKENIZER_FILES,
  type TokenizerChoice,
  TokenizerChoiceError,
  type TokenizerName,
} from "./tokenizer.ts";
export { TextStream } from "./text_stream.ts";
