/**
 * A round's results, from the announcement to the apply: the per-round ledger of what was
 * announced, verified and finished ({@link RoundTracker}), the checks of an announced size and
 * of downloaded bytes ({@link checkAnnouncedResult}, {@link checkResultPayload}), the choice of
 * what to apply ({@link decideApply}, {@link attestedButMissing}), announcements kept for steps
 * not reached yet ({@link EarlyBuffer}) and the bound on pulls of lost ones ({@link PullLedger}).
 *
 * Every file here is pure: no clock, no I/O.
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
