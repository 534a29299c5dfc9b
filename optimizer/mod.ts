/**
 * Optimizers over the flat parameter buffer: AdamW (single node) and DisTrO (decentralized).
 *
 * @module
 */
export type {
  AdamWState,
  DistroState,
  Optimizer,
  OptimizerState,
  OptimizerStateBuffers,
  OptimizerStateScalars,
  OptimizerStepArgs,
  SegmentedBuffers,
} from "./optimizer.ts";
export {
  AdamW,
  ADAMW_DEFAULTS,
  type AdamWConfig,
  adamwReferenceStep,
  clipScale,
  validateAdamWConfig,
} from "./adamw.ts";

// DisTrO: reference maths (pure), exact aggregation, payload codec, commitments, GPU optimizer.
export { chunkSize, divisors, primeFactors } from "./chunking.ts";
export { type ChunkingOptions, type ChunkLayout, chunkLayout, chunkLayouts } from "./layout.ts";
export { MAX_COMPRESSION_CHUNK } from "./layout.ts";
export { dctMatrix, decode, encode } from "./dct.ts";
export {
  FAST_DCT_MAX,
  fastDctErrorBound,
  type FastDctPlan,
  fastDctPlan,
  fastEncodeErrorBound,
  hasFastDct,
  runFastDct,
} from "./fast_dct.ts";
export { quantizeSigns, scatterMean, signBit, type SparseParam, topk } from "./compress.ts";
export {
  type AggregatedParam,
  aggregateFixed,
  decodeFixed,
  fixedBasis,
  fixedErrorBound,
  updateSigns,
} from "./exact.ts";
export {
  defaultCodecWorkers,
  HostCodec,
  type HostCodecOptions,
  PARALLEL_MIN_ENTRIES,
  PARALLEL_MIN_PAYLOAD_BYTES,
} from "./codec_pool.ts";
export { canonicalOrder, compareResults, type DistroResult, type StateDigests } from "./result.ts";
export {
  clipGradNorm,
  type DistroConfig,
  distroConfig,
  DistroReference,
  type GeneratedResult,
  type NamedParam,
  validateDistroConfig,
} from "./distro.ts";
export {
  decodePayload,
  encodePayload,
  payloadBytes,
  PayloadDecodeError,
  type PayloadExpectation,
  STATE_DIGESTS_BYTES,
} from "./wire.ts";
export {
  decodeState,
  encodeState,
  stateBytes,
  StateDecodeError,
  stateDigest,
  stateEntries,
  type StateShape,
  zeroStateDigest,
} from "./state_wire.ts";
export {
  type CoefficientComparison,
  coefficientOverlap,
  compareCoefficients,
  compareStates,
  mismatchPpm,
  ownMatchesResult,
  splitOwn,
  type StateComparison,
} from "./replay_compare.ts";
export {
  commit,
  type Commitment,
  commitmentHash,
  type CommittedPayload,
  verifyCommitment,
} from "./commitment.ts";
export {
  DistroOptimizer,
  type DistroOptimizerOptions,
  type FlatParam,
  type GenerateArgs,
} from "./gpu/distro_gpu.ts";
