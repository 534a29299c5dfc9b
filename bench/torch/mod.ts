/**
 * The PyTorch comparison of the GPU engine (issue 3): the same seeded Llama, batch and AdamW
 * steps run by our WebGPU engine and by eager PyTorch (`llama_step.py`), compared for loss and
 * gradient-norm agreement and step time. Run it with `deno task bench-torch`.
 *
 * @module
 */
export {
  type AgreementRow,
  compareReports,
  type Comparison,
  DEFAULT_TOLERANCES,
  formatComparison,
  lossTolerance,
  parseStepReport,
  relativeDifference,
  ReportError,
  type StepReport,
  type Tolerances,
} from "./report.ts";
export {
  corpusBatch,
  decodeTokenFile,
  encodeTokenFile,
  foldTokens,
  seededRangeReader,
  writeSeededModel,
} from "./inputs.ts";
export {
  addSquares,
  type EngineStepOptions,
  type FloatRangeVisitor,
  runEngineSteps,
  tensorNorms,
  tensorNormsStreamed,
} from "./engine_step.ts";
export {
  ENGINE_SCRIPT,
  type EngineJob,
  EngineRunError,
  parseEngineJob,
  parsePeakRss,
  runEngineProcess,
} from "./engine_process.ts";
export {
  ENGINE_PROCESS_BYTES,
  enginePlan,
  formatSidePlan,
  memoryRefusal,
  type PlanShape,
  type SidePlan,
  TORCH_PROCESS_BYTES,
  torchPlan,
} from "./memory.ts";
export {
  findTorchPython,
  pythonCandidates,
  runTorchSteps,
  SCRIPT_PATH,
  TorchRunError,
  torchStepArgs,
  type TorchStepOptions,
  TorchUnavailableError,
} from "./torch_runner.ts";
export { type CompareOptions, parseCompareArgs, USAGE } from "./cli.ts";
export {
  availableMemory,
  comparisonPlans,
  type ComparisonRun,
  describeRun,
  describeSide,
  MemoryRefusalError,
  runComparison,
} from "./compare.ts";
