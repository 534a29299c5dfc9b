/**
 * WebGPU runtime and transformer kernels. See docs/kernels.md for every kernel's bindings and
 * shapes (dimension names: B batch, T sequence, C model width, V vocabulary, H query heads,
 * KVH key/value heads, D head size, F MLP width, N = B·T tokens).
 *
 * Usage: create one {@link GpuRuntime}, construct kernels once (`new Matmul(rt)`), and per step
 * encode every kernel into `step.pass` of one {@link GpuStep}, then `await step.submit()`.
 *
 * @module
 */

export { GpuDeviceLostError, GpuStageError, GpuUnavailableError } from "./errors.ts";
export {
  f32Bits,
  GpuRuntime,
  type GpuRuntimeOptions,
  GpuStep,
  MAX_PROFILED_SECTIONS,
  MAX_TIMED_SECTIONS,
  resolveView,
  type SectionTiming,
  STORAGE_USAGE,
  type TensorView,
  viewLength,
} from "./gpu.ts";
export { type KernelTotal, ProfilingPass, summarizeTimings } from "./dispatch_profile.ts";
export { formatTiling, parseAttentionTiling, parseTiling } from "./tiling_arg.ts";
export { probeSubgroups, type SubgroupProbe } from "./subgroups.ts";
export { requestGpuAdapter } from "./runtime_dir.ts";
export { type EncodeCopy, ReadbackPool, type ReadOptions } from "./readback.ts";
export {
  matmulRuleFor,
  type MatmulShape,
  type MatmulTable,
  pickMatmulTiling,
  tileWorkgroups,
  validateMatmulTable,
} from "./matmul_picker.ts";
export {
  type AdapterDescription,
  attentionStrategyFor,
  type AttentionTiling,
  CPU_PROFILE,
  GPU_ATTENTION_TILES,
  GPU_MATMUL_TABLE,
  GPU_MEDIUM_WORKGROUPS,
  GPU_PROFILE,
  GPU_WIDE_WORKGROUPS,
  isCpuAdapter,
  type MatmulShapeRule,
  type MatmulTiling,
  profileFor,
  SPLIT_K_OFF,
  type SplitKPolicy,
  type TuningProfile,
  vec4Tiling,
} from "./profile.ts";
export {
  MAX_SPLIT_K_SCRATCH,
  pinnedSplitK,
  type SplitKLimits,
  type SplitKPlan,
  splitKPlan,
  type SplitKShape,
  validateSplitKPolicy,
} from "./split_k.ts";
export { BufferArena } from "./arena.ts";
export {
  bindTensors,
  ceilDiv,
  dispatch,
  dispatch1d,
  granuleStretches,
  grid1d,
  main1d,
  MAX_GRID,
  requireDims,
  requireLength,
  type RowBlock,
  rowBlocks,
  type SegmentPart,
} from "./kernel.ts";
export {
  Matmul,
  type MatmulArgs,
  type MatmulInputType,
  type MatmulLayout,
  type MatmulOperandTypes,
  type MatmulOptions,
  type MatmulVariant,
  matmulVariants,
  type SplitPartials,
  validateMatmulTiling,
} from "./matmul.ts";
export { Elementwise, type ElementwiseOp } from "./elementwise.ts";
export { BF16_BITS_WGSL, CastBf16, CastF16, toBf16Kernel, toF16Kernel } from "./cast.ts";
export { RoundBf16, roundBf16Kernel } from "./round_bf16.ts";
export { CHUNK_ITEMS, SumOfSquares, type SumsqInput } from "./sumsq.ts";
export {
  Embedding,
  type EmbeddingBackwardArgs,
  type EmbeddingDims,
  type EmbeddingForwardArgs,
} from "./embedding.ts";
export { embeddingLinks } from "./embedding_links.ts";
export {
  RmsNorm,
  type RmsNormBackwardArgs,
  type RmsNormDims,
  type RmsNormForwardArgs,
} from "./rmsnorm.ts";
export {
  type Llama3RopeScaling,
  Rope,
  type RopeBackwardArgs,
  type RopeDims,
  type RopeForwardArgs,
  type RopeFrequencies,
  ropeInvFreq,
  type RopeScaling,
  ropeTable,
} from "./rope.ts";
export { SwiGlu, type SwiGluBackwardArgs, type SwiGluForwardArgs } from "./swiglu.ts";
export {
  CrossEntropy,
  type CrossEntropyBackwardArgs,
  type CrossEntropyBlock,
  type CrossEntropyBlockedArgs,
  type CrossEntropyDims,
  type CrossEntropyForwardArgs,
  IGNORE_INDEX,
} from "./cross_entropy.ts";
export {
  Attention,
  type AttentionBackwardArgs,
  type AttentionDims,
  type AttentionForwardArgs,
  type AttentionOptions,
} from "./attention.ts";
export { type AttentionTiles, attentionTiles, tiledWorkgroupBytes } from "./attention_tiled.ts";
export {
  CachedAttention,
  type CachedAttentionArgs,
  type CachedAttentionDims,
} from "./cached_attention.ts";
export { KvCacheAppend, type KvCacheAppendArgs, type KvCacheDims } from "./kv_cache.ts";
export {
  DIGEST_BLOCK_WORDS,
  digestBytes,
  digestBytesYielding,
  digestSteps,
  GpuDigest,
  type HostDigestOptions,
} from "./digest.ts";
