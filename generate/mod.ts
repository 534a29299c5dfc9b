/**
 * `deno task generate`: text from a trained checkpoint. The pure parts (sampling, the tokenizer
 * rule, streamed text, the generation loop over any {@link LogitsModel}) and the command.
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
} from "../data/mod.ts";
export { TextStream } from "./text_stream.ts";
export {
  decodeTokensPerSecond,
  type GeneratedToken,
  type GenerateOptions,
  type GenerateResult,
  generateTokens,
  type LogitsModel,
  type StopReason,
  tokensPerSecond,
} from "./generator.ts";
export {
  DEFAULT_MAX_NEW_TOKENS,
  GENERATE_SPEC,
  type GenerateCliOptions,
  type GenerateFlags,
  generateOptions,
} from "./cli.ts";
export { generate, GenerateError, type GenerateOutcome, modelFolder } from "./main.ts";
