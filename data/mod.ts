/**
 * Training data: token datasets cut into fixed-length sequences, and the providers
 * that serve them by sequence index (local folder, HTTP, the TCP data server, Psyche's
 * preprocessed parquet datasets, weighted mixes of any of them), the bundled Brown corpus,
 * and a model-independent validation-loss helper.
 *
 * @module
 */
export { DataError, type DataErrorContext } from "./errors.ts";
export type { DataProvider, TokenBatch } from "./provider.ts";
export {
  type DataServerConfig,
  parseDataConfig,
  type ParseDataConfigOptions,
} from "./data_config.ts";
export {
  decodeTokens,
  DTYPE_BYTES,
  dtypeForTokenSize,
  type TokenDtype,
  tokenSizeBytes,
  type TokenSource,
} from "./token_format.ts";
export { type NpyHeader, parseNpyHeader } from "./npy.ts";
export {
  isTokenFileName,
  npyLayout,
  rawLayout,
  sortByteWise,
  TOKEN_FILE_EXTENSIONS,
  type TokenFileLayout,
} from "./token_file.ts";
export { Sha256CounterStream, SHUFFLE_SEED_BYTES, shufflePermutation } from "./shuffle.ts";
export {
  buildSequenceIndex,
  checkBatch,
  planReads,
  type ReadRun,
  type SequenceIndex,
  type SequenceIndexOptions,
} from "./sequence_index.ts";
export type { DatasetOptions } from "./dataset_options.ts";
export { LocalDataProvider } from "./local.ts";
export { backoffDelay, type HttpFetchOptions, HttpRangeClient } from "./http_range.ts";
export { HttpDataProvider, httpLocationUrls, type HttpProviderOptions } from "./http.ts";
export {
  DATA_SERVER_CONTEXT,
  type DataClientMessage,
  type DataServerMessage,
  decodeDataClientMessage,
  decodeDataServerMessage,
  encodeDataClientMessage,
  encodeDataServerMessage,
  REJECT_REASONS,
  type RejectReason,
} from "./tcp_messages.ts";
export {
  type AuthorizeFn,
  type AuthorizeResult,
  type DataServer,
  type DataServerEvent,
  type DataServerOptions,
  DEFAULT_DATA_IDLE_TIMEOUT_MS,
  DEFAULT_DATA_MAX_CONNECTIONS,
  DEFAULT_DATA_MAX_CONNECTIONS_PER_ADDRESS,
  startDataServer,
} from "./tcp_server.ts";
export {
  DEFAULT_MAX_RATE_CLIENTS,
  type RateLimit,
  type RateVerdict,
  SequenceRateLimiter,
} from "./rate_limit.ts";
export { parseHostPort, TcpDataProvider, type TcpProviderOptions } from "./tcp_client.ts";
export {
  type ConfiguredDataServer,
  loadDataServerConfig,
  openConfiguredDataset,
  startDataServerFromConfig,
} from "./data_server_config.ts";
export { DummyDataProvider } from "./dummy.ts";
export {
  blockOf,
  buildPreprocessedIndex,
  locateSample,
  type ParquetFileRows,
  type PreprocessedIndex,
  type RowAddress,
  type RowBlock,
  selectPreprocessedFiles,
} from "./preprocessed_index.ts";
export {
  IGNORED_LABEL,
  PREPROCESSED_COLUMNS,
  type PreprocessedColumn,
  preprocessedColumns,
} from "./parquet_columns.ts";
export {
  DEFAULT_BLOCK_BYTES,
  DEFAULT_CACHED_BLOCKS,
  type PreprocessedBatch,
  PreprocessedDataProvider,
  type PreprocessedOptions,
} from "./preprocessed.ts";
export {
  buildWeightedIndex,
  MAX_WEIGHTED_DATASETS,
  planWeightedReads,
  type WeightedIndex,
  type WeightedIndexOptions,
  type WeightedRun,
} from "./weighted_index.ts";
export {
  WeightedDataProvider,
  type WeightedProviderOptions,
  type WeightedSource,
} from "./weighted.ts";
export {
  type HttpDataLocation,
  parseWeightedHttpConfig,
  type WeightedHttpConfig,
  type WeightedHttpEntry,
} from "./weighted_config.ts";
export { providerForLocation, type ProviderForLocationOptions } from "./factory.ts";
export { evaluateLoss, type EvaluateLossOptions, type LossReport } from "./validation.ts";
export {
  BOS_ID,
  decodeTokens as decodeLlamaTokens,
  encodeDocument,
  EOS_ID,
  LLAMA2_VOCAB_SIZE,
} from "./llama_tokenizer.ts";
export {
  buildBrownCorpus,
  type BuildCorpusOptions,
  type BuiltCorpus,
  BUNDLED_CORPUS_DIR,
  BYTE_CORPUS_DIR,
  CORPUS_TOKENIZERS,
  type CorpusFile,
  type CorpusManifest,
  type CorpusSplit,
  type CorpusTokenizer,
  ensureCorpus,
  type EnsureCorpusOptions,
  openBundledCorpus,
  type OpenCorpusOptions,
  type Split,
  SPLITS,
  TOKENIZER_NAMES,
  type TokenizerName,
  VALIDATION_EVERY,
  verifyCorpus,
} from "./corpus.ts";
export { BYTE_VOCAB_SIZE, decodeByteTokens, encodeByteDocument } from "./byte_tokenizer.ts";
export { type TokenizedFile, tokenizeFolder } from "./tokenize_folder.ts";
export { type ScanOptions, scanTokenFiles, type TokenScan } from "./token_scan.ts";
export {
  chooseTokenizer,
  type PromptTokenizer,
  promptTokenizer,
  TOKENIZER_CHOICES,
  TOKENIZER_FILES,
  type TokenizerChoice,
  TokenizerChoiceError,
} from "./prompt_tokenizer.ts";
