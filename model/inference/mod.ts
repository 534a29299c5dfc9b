/**
 * Using a trained model: the Llama forward with a key/value cache that generation samples from
 * (`deno task generate`, generate/).
 *
 * @module
 */
export { LlamaDecoder, type LlamaDecoderOptions, type LogitsWanted } from "./decoder.ts";
export { gatherLogits, type LogitBlock, logitBlockLayout } from "./logit_blocks.ts";
