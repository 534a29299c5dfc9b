/**
 * When an elected checkpointer reports its Hub upload (coordinator/core/machine_cooldown.ts):
 * during the Cooldown it uploaded the checkpoint of, once the coordinator's state shows the
 * Cooldown digest vote with a quorum for the parameters the upload holds. The coordinator takes a
 * report only then (the report ends Cooldown and records that vote), so an earlier one would
 * only be refused; and a checkpointer whose upload holds other parameters than the vote chose
 * never reports it. Once that Cooldown is over (another checkpointer reported first, or its timer
 * fired), the revision stays unreported.
 *
 * Pure: the driver asks again at every new state until the answer is not `wait`.
 *
 * @module
 */
import { type CoordinatorState, phaseDigestVote } from "../../coordinator/core/mod.ts";
import { toHex } from "../../common/mod.ts";

/** An upload waiting to be reported. */
export interface UploadedCheckpoint {
  /** The epoch whose Cooldown wrote it. */
  readonly epoch: number;
  /** The run step whose parameters it holds (`progress.step` in that Cooldown). */
  readonly step: number;
  /** Their digest (hex), as the client's ledger and the coordinator's votes hold it. */
  readonly digest: string;
}

/** What to do with an upload now. */
export type HubReportDecision =
  | { readonly kind: "send" }
  | { readonly kind: "wait"; readonly reason: string }
  | { readonly kind: "skip"; readonly reason: string };

/**
 * Whether to report `upload` given the coordinator's `state` (see the module doc).
 *
 * @example
 * ```ts
 * import { hubReportDecision } from "./hub_report.ts";
 * import { testState } from "../../tests/support/coordinator_fixtures.ts";
 * const state = testState(); // WaitingForMembers of epoch 0
 * const decision = hubReportDecision(state, { epoch: 0, step: 1, digest: "ab".repeat(32) });
 * if (decision.kind !== "skip") throw new Error("no Cooldown: nothing to report to");
 * ```
 */
export function hubReportDecision(
  state: CoordinatorState,
  upload: UploadedCheckpoint,
): HubReportDecision {
  const { epoch, step } = state.progress;
  if (state.runState !== "Cooldown" || epoch !== upload.epoch || step !== upload.step) {
    return {
      kind: "skip",
      reason: `the Cooldown of epoch ${upload.epoch} is over (the run is ${state.runState} in ` +
        `epoch ${epoch}): another checkpointer reported first, or its timer ended it`,
    };
  }
  const { consensus, votes, quorum } = phaseDigestVote(state);
  if (consensus === null) {
    return {
      kind: "wait",
      reason: `the Cooldown digest vote has no quorum yet (${votes} votes, ${quorum} ` +
        `agreeing needed)`,
    };
  }
  const chosen = toHex(consensus);
  if (chosen !== upload.digest) {
    return {
      kind: "skip",
      reason: `the run's Cooldown vote chose parameters ${chosen}, this upload holds ` +
        `${upload.digest}`,
    };
  }
  return { kind: "send" };
}
