/**
 * A round's results, from the announcement to the apply: {@link RoundResults} follows each result
 * of the current epoch's rounds as it is announced, judged, fetched, checked, recorded, witnessed
 * and chosen for the apply (client/results/round_results.ts says how), over the narrow
 * {@link ResultsTransport} the exchange gives it. Its pure parts: the per-round ledger of what
 * was announced, verified and finished ({@link RoundTracker}), the checks of an announced size
 * and of downloaded bytes ({@link checkAnnouncedResult}, {@link checkResultPayload}), the choice
 * of what to apply ({@link decideApply}, {@link attestedButMissing}), announcements kept for
 * steps not reached yet ({@link EarlyBuffer}) and the bound on pulls of lost ones
 * ({@link PullLedger}): no clock, no I/O.
 *
 * @example
 * ```ts ignore
 * import { RoundResults } from "./client/results/mod.ts";
 * const results = new RoundResults({ publicKey, transport: { gossip, payloads }, logger,
 *   onChange, randomU64 });
 * results.update(state); // on every coordinator state; gossip delivers to results.receive
 * const { results: chosen, missing } = await results.gather(plan, batches);
 * ```
 *
 * @module
 */
export {
  type ApplyDecision,
  attestedButMissing,
  type ChosenResult,
  decideApply,
} from "./apply_decision.ts";
export { DEFAULT_EARLY_CAPACITY, EarlyBuffer } from "./early_buffer.ts";
export {
  type AnnouncementCheck,
  type AnnouncementRefusal,
  checkAnnouncedResult,
  checkResultPayload,
  expectedResultBytes,
  type PayloadCheck,
  type PayloadRefusal,
} from "./payload_check.ts";
export { DEFAULT_PULL_ATTEMPTS, DEFAULT_PULL_SPACING_MS, PullLedger } from "./pull_ledger.ts";
export {
  type AnnouncedResult,
  type BloomSetup,
  bloomSetup,
  compareBytes,
  emptyWitness,
  type RefusalReason,
  RoundTracker,
  type Verdict,
} from "./round_tracker.ts";
export {
  type GatheredResults,
  type ResultsTransport,
  RoundResults,
  type RoundResultsOptions,
} from "./round_results.ts";
export {
  judgeChain,
  type Judgement,
  judgeReplay,
  labelCopy,
  type ReplayEvidence,
  VERIFY_TOLERANCE,
  type VerifyTolerance,
} from "./verify_check.ts";
export { StateChain, type StateServing } from "./state_chain.ts";
export {
  STATE_FETCH_ATTEMPTS,
  STATE_FETCH_SPACING_MS,
  type VerificationOutcome,
  type VerifierParts,
  verifyResult,
} from "./verifier.ts";
export { VERIFYING_RETAINED_ROUNDS } from "./round_results.ts";
