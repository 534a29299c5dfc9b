/**
 * The training client: follows a run's coordinator, trains assigned batches with DisTrO,
 * exchanges results with its peers over libp2p, witnesses rounds and applies the consensus
 * results so every honest client holds bit-identical parameters.
 *
 * - Pure decisions: {@link roundView} (a round from this client's seat), {@link RoundTracker}
 *   (what was announced, verified and finished; witness blooms and Merkle root),
 *   {@link decideApply} (consensus commitment per batch, untrained batches),
 *   {@link planActions} (the per-RunState state machine, returning {@link Intent}s).
 * - Edges: {@link NetworkTrainer} (GPU), {@link Exchange} (the p2p transport),
 *   {@link RoundResults} (a round's results from announcement to apply, client/results/;
 *   `exchange.results`), {@link TrainingClient} (the driver), the command line
 *   (`deno task client`, client/main.ts).
 *
 * @example
 * ```ts ignore
 * import { Exchange, TrainingClient } from "./client/mod.ts";
 * const exchange = await Exchange.start({ runId, secretKey, publicKey, logger, onChange });
 * const client = new TrainingClient({ backend, exchange, identity, logger });
 * await client.run({ signal });
 * ```
 *
 * @module
 */
import "../net/p2p/mod.ts";

export { type StopReason, TrainingClient, type TrainingClientOptions } from "./client.ts";
export {
  type ClientArgs,
  parseClientArgs,
  type ShowIdentityArgs,
  type TrainArgs,
  USAGE,
} from "./cli.ts";
export { Exchange, type ExchangeFaults, type ExchangeOptions } from "./exchange.ts";
export {
  type ClientEventName,
  type ClientEvents,
  type ClientLogger,
  consoleClientLogger,
  describeEvent,
  jsonClientLogger,
  LOG_FORMATS,
  type LogFormat,
} from "./log.ts";
export { type LoadedModel, loadModel, ModelSourceError, runInitSeed } from "./model_source.ts";
export {
  type AnnouncedResult,
  type ApplyDecision,
  type BloomSetup,
  bloomSetup,
  checkResultPayload,
  type ChosenResult,
  compareBytes,
  decideApply,
  DEFAULT_EARLY_CAPACITY,
  EarlyBuffer,
  emptyWitness,
  expectedResultBytes,
  type GatheredResults,
  judgeChain,
  type Judgement,
  judgeReplay,
  labelCopy,
  type PayloadCheck,
  type PayloadRefusal,
  type RefusalReason,
  type ResultsTransport,
  RoundResults,
  type RoundResultsOptions,
  RoundTracker,
  StateChain,
  type Verdict,
  type VerificationOutcome,
  type VerifierParts,
  VERIFY_TOLERANCE,
  verifyResult,
  type VerifyTolerance,
} from "./results/mod.ts";
export { type ReplayedStep, ResultReplayer } from "./replayer.ts";
export {
  type Attack,
  ATTACKS,
  gradientFactor,
  otherBatch,
  parseAttack,
  randomSigns,
  republish,
  RESULT_ATTACKS,
} from "./attacks.ts";
export {
  isVerifying,
  keptParamHeights,
  paramsKept,
  planKeepParams,
  planVerifications,
} from "./state/verify.ts";
export {
  currentHeight,
  epochIndexOf,
  epochPeerKeys,
  indexOfPeer,
  isEpochPeer,
  memberIndexOf,
  type RoundView,
  roundView,
  type SelfInRound,
  stepLearningRate,
  stepOfHeight,
} from "./round_view.ts";
export { applyPlanFor, duePlans } from "./state/apply_targets.ts";
export {
  applyKey,
  ClientProgress,
  type ExchangeFacts,
  type Intent,
  intentKey,
  type PlanInput,
  roundKey,
  verifyKey,
} from "./state/intent.ts";
export { planActions, planRejoin, wasRemoved } from "./state/machine.ts";
export {
  NetworkTrainer,
  type NetworkTrainerOptions,
  type TrainedRound,
  wrappedRanges,
} from "./trainer.ts";
