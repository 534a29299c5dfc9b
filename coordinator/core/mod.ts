/**
 * The coordinator: the run's state machine and everything clients and backends need to
 * follow it (committee and witness selection, data assignment, quorum and health rules,
 * checkpoint lifecycle). Pure logic only; backends (TCP server, Solana program) and
 * simulations drive it with their own clock and randomness.
 *
 * @module
 */

export * from "./types.ts";
export * from "./errors.ts";
export {
  CHANGED,
  checkTimeout,
  emptyEpochState,
  isHalted,
  isLegalTransition,
  LEGAL_TRANSITIONS,
  type Outcome,
  UNCHANGED,
  type WindDownCause,
} from "./machine_core.ts";
export {
  checkEjectionRecords,
  createCoordinator,
  type CreateCoordinatorOptions,
  MIN_ROUNDS_PER_EPOCH,
  nextTickDeadline,
  tick,
} from "./machine.ts";
export {
  checkWitnessShape,
  cooldownWitness,
  lateWitnessHeight,
  warmupWitness,
  witness,
} from "./machine_witness.ts";
export { pause, resume, withdraw, withdrawAll } from "./machine_membership.ts";
export { checkpoint, endCooldown } from "./machine_cooldown.ts";
export * from "./checkpointer_selection.ts";
export {
  type HealthCheck,
  healthCheck,
  isHealthy,
  trainerHealthScore,
  trainerHealthy,
  unhealthyTrainers,
} from "./health.ts";
export * from "./machine_queries.ts";
export { untrainedBatchCount, type UntrainedCount } from "./untrained_batches.ts";
export * from "./machine_validate.ts";
export * from "./witness_quorum.ts";
export * from "./checkpoint_lifecycle.ts";
export * from "./committee_selection.ts";
export * from "./data_selection.ts";
export * from "./bloom.ts";
export * from "./hash.ts";
export * from "./merkle.ts";
export * from "./swap_or_not.ts";
export * from "./lcg.ts";
export * from "./deterministic_shuffle.ts";
export { digestConsensus, isNoDigest, NO_DIGEST, recordedDigest } from "./params_digest.ts";
export {
  barEpoch,
  barredUntil,
  closeVerificationStages,
  dropVerificationTasks,
  ejectIdleWitnesses,
  findVerificationTask,
  isRejected,
  MAX_COMMITTEE_DRAWS,
  openVerificationTasks,
  pickDistinct,
  SAMPLE_SALT,
  stageSeats,
  TIE_BREAKER_SALT,
  verificationDraw,
  verificationMajority,
  verificationReport,
  verificationSampleCount,
  verificationStageSeconds,
  VERIFIER_SALT,
} from "./verification.ts";
