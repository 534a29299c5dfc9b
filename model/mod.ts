/**
 * The Llama model: Hugging Face config and safetensors files, the flat parameter layout with
 * seeded init, the GPU forward/backward, and the f64 reference it is tested against.
 *
 * @module
 */
export {
  countParameters,
  HfConfigError,
  type LlamaConfig,
  llamaConfigToHf,
  parseLlamaConfig,
  readLlamaConfig,
} from "./hf_config.ts";
export {
  decodeSafetensors,
  type Dtype,
  DTYPE_SIZES,
  encodeSafetensors,
  encodeSafetensorsHeader,
  type FloatDtype,
  parseSafetensorsHeader,
  readSafetensors,
  readSafetensorsHeader,
  SafetensorsError,
  type SafetensorsFile,
  type SafetensorsHeader,
  type StoredTensor,
  tensorByteSize,
  tensorFromFloat32,
  type TensorHeader,
  type TensorSpec,
  tensorToFloat32,
  writeSafetensors,
} from "./safetensors.ts";
export {
  SAVE_CHUNK_FLOATS,
  type StreamedTensor,
  writeSafetensorsStreamed,
} from "./safetensors_stream.ts";
export {
  bf16BitsToF32,
  decodeBf16,
  decodeF16,
  encodeBf16,
  encodeF16,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
} from "./float_codec.ts";
export {
  bindingRanges,
  initParams,
  initTensorSlice,
  LAYER_TENSORS,
  layerTensorName,
  llamaParamLayout,
  llamaTensorShapes,
  lmHeadWeightName,
  PARAM_ALIGN,
  type ParamEntry,
  paramEntry,
  type ParamLayout,
  type ParamSegment,
  paramSegments,
  paramView,
  SEEDED_CHUNK_FLOATS,
  seededNormals,
  segmentIndex,
} from "./params.ts";
export { ParamBuffers } from "./param_buffers.ts";
export { uploadSeededParams } from "./seeded_upload.ts";
export {
  defaultSeededWorkers,
  initParamsParallel,
  type SeededChunk,
  seededChunks,
  type SeededInitOptions,
  seededWorkerCount,
} from "./seeded_init.ts";
export { uploadF32Weights } from "./streamed_load.ts";
export {
  throttledProgress,
  uploadParams,
  type UploadProgress,
  uploadProgressLine,
  uploadProgressLines,
} from "./weights_upload.ts";
export {
  checkShardIndex,
  DEFAULT_MAX_SHARD_BYTES,
  type ExpectedTensor,
  formatShardIndex,
  INDEX_FILE,
  parseByteSize,
  parseShardIndex,
  planShards,
  shardFileName,
  type ShardIndex,
} from "./shards.ts";
export {
  CONFIG_FILE,
  type F32TensorSource,
  f32WeightSources,
  type FloatRangeReader,
  type ModelDirContents,
  PREVIOUS_SUFFIX,
  readModelDir,
  type ReadProgress,
  WEIGHTS_FILE,
  weightsFromSafetensors,
  weightsToSafetensors,
  writeDirAtomically,
  writeModelDir,
} from "./checkpoint.ts";
export { LlamaModel, type LlamaModelOptions } from "./llama.ts";
export { type ActivationPlan, activationPlan } from "./recompute.ts";
export { LmHead } from "./lm_head.ts";
export {
  type ModelPrecision,
  PRECISION_CHOICES,
  type PrecisionChoice,
  resolvePrecision,
} from "./precision.ts";
export {
  type CastToF16,
  HALF_ALIGN,
  halfLayout,
  halfSegments,
  type HalfType,
  HalfWeights,
  matmulWeightNames,
} from "./half_weights.ts";
export {
  type AttentionDims,
  type CacheDims,
  IGNORE_TARGET,
  type LlamaKernels,
} from "./llama_kernels.ts";
export {
  concatRows,
  documentSpans,
  type RowExtras,
  rowPositions,
  rowTargets,
  sliceRows,
  type TrainingRows,
} from "./rows.ts";
export { shaderKernels } from "./shader_kernels.ts";
export { referenceLossAndGrad, type ReferenceResult } from "./reference.ts";
export {
  defaultHfCache,
  hfCacheFolderName,
  type HubCheckpoint,
  HubCheckpointError,
  type HubLookupOptions,
  loadHubCheckpoint,
  resolveHubRepo,
} from "./hub.ts";
export {
  checkMemoryPlan,
  DISTRO_WAVE_BYTES,
  formatBytes,
  formatCount,
  formatMemoryPlan,
  logitsChunkRows,
  type MemoryFix,
  type MemoryItem,
  type MemoryLimits,
  type MemoryPlan,
  type MemoryPlanInput,
  type MemoryProblem,
  type MemoryVerdict,
  planMemory,
} from "./memory_plan.ts";
export {
  adapterMemoryLimits,
  largestWeightsFile,
  MemoryPlanError,
  reportMemoryPlan,
  runtimeMemoryLimits,
} from "./memory_check.ts";
