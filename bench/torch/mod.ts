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
  writeSeededModel,
} from "./inputs.ts";
export { type EngineStepOptions, runEngineSteps, tensorNorms } from "./engine_step.ts";
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
export { type ComparisonRun, describeRun, describeSide, runComparison } from "./compare.ts";
