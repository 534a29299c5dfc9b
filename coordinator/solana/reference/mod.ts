/**
 * The TypeScript reference of the coordinator program: what the C program computes, instruction
 * by instruction, built on the coordinator's core. The differential and fuzz tests hold the
 * program to it; it is never deployed. Like shaders/reference/ beside the WGSL kernels.
 *
 * @module
 */
export {
  applyInstruction,
  clockSeed,
  type DepositAccounts,
  initialAccount,
  type InitOptions,
  type InstructionStep,
  type ProgramClock,
} from "./program_model.ts";
export { type ModelRuleViolation, modelRuleViolation } from "./model_rules.ts";
export { witnessBloomParametersInteger } from "./bloom_integer.ts";
