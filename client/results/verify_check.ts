/**
 * The verdict on a sampled result (docs/protocol.md, "Verification"), from what the verifier
 * holds once it has the trainer's served states and its own replay of the step: pure decisions,
 * no I/O. The edge (client/results/verifier.ts) fetches, replays and reports.
 *
 * In order, the first that fails decides:
 * 1. **ChainBreak**: the result's input state is neither the zero state nor the output state of
 *    the trainer's previous result (when the verifier holds that result). A trainer cannot slip
 *    a state of its choosing between two results.
 * 2. **StateInconsistent**: a served state does not decode for the model, or the output state's
 *    own result is not exactly the coefficients and signs the trainer published.
 * 3. **ResultMismatch**: more of the published coefficients than the tolerance are missing from
 *    the replay's selection or carry the other sign.
 * 4. **StateMismatch**: the served output state is farther from the replay's than the tolerance,
 *    relative to the step's gradient contribution (`lr·‖g‖`, or 10⁻⁴·‖δ‖ if larger): a gradient
 *    of other data, negated or scaled lands here even when its top-k barely moved.
 *
 * A result whose served state did not produce it (StateInconsistent) and that repeats another
 * result of the round beyond {@link VERIFY_TOLERANCE}`.copyOverlap` is reported as
 * **CopiedResult** instead ({@link labelCopy}). The overlap alone never fails a result, and never
 * names the source a copy: a failed source is consistent with its own state, whoever copied it.
 *
 * The tolerances were calibrated on honest replays (docs/benchmarks.md, "Verification"): on one
 * adapter a replay is bit-identical; lavapipe's Vulkan against its GL backend differed by
 * 1.2–1.7·10⁻⁷ of the gradient step in δ and in no coefficient. The state tolerance, 10⁻², is
 * 10⁵ times that and 10² below the smallest attack measured; the coefficient tolerance, 1%, bounds
 * what an attacker hiding in it can flip to 1% of its own votes.
 *
 * @module
 */
import { equalBytes } from "../../common/mod.ts";
import type { VerificationEvidence, VerificationVerdict } from "../../coordinator/core/mod.ts";
import {
  type ChunkLayout,
  coefficientOverlap,
  compareCoefficients,
  compareStates,
  type DistroResult,
  type DistroState,
  mismatchPpm,
  ownMatchesResult,
  type SparseParam,
} from "../../optimizer/mod.ts";

/** The tolerances of a replay comparison. */
export interface VerifyTolerance {
  /** Most published coefficients a replay may miss or sign differently, in parts per million. */
  readonly coefficientsPpm: number;
  /** Largest state distance relative to the step's gradient contribution. */
  readonly stateRelative: number;
  /** The coefficient overlap with another result of the round above which a failure is a copy. */
  readonly copyOverlap: number;
}

/** The calibrated tolerances (see the module doc). */
export const VERIFY_TOLERANCE: VerifyTolerance = Object.freeze({
  coefficientsPpm: 10_000,
  stateRelative: 0.01,
  copyOverlap: 0.5,
});

/** A verdict and its evidence, as a verification report carries them. */
export interface Judgement {
  readonly verdict: VerificationVerdict;
  readonly evidence: VerificationEvidence;
  /**
   * The measurement, in parts per million: a fail's (coefficients missed or flipped, the state
   * distance relative to the gradient step, or the overlap with the copied result); a pass's
   * largest of the first two, for calibration. Capped at 2³² − 1.
   */
  readonly detail: number;
}

const U32_MAX = 0xffff_ffff;

function ppm(x: number): number {
  return Number.isFinite(x) ? Math.min(U32_MAX, Math.ceil(x * 1e6)) : U32_MAX;
}

function fail(evidence: VerificationEvidence, detail = 0): Judgement {
  return { verdict: "Fail", evidence, detail: Math.min(U32_MAX, detail) };
}

/**
 * Check 1: whether `result`'s input state is where its trainer's chain allows it to start. Null
 * when it is, a ChainBreak otherwise. `previousOutput` is the output digest of the trainer's
 * previous result, or null when the verifier does not hold that result (then only the result's
 * own consistency is checked).
 */
export function judgeChain(
  result: DistroResult,
  previousOutput: Uint8Array | null,
  zeroDigest: Uint8Array,
): Judgement | null {
  if (result.states === undefined) return fail("StateInconsistent");
  const input = result.states.input;
  if (equalBytes(input, zeroDigest)) return null;
  if (previousOutput !== null && !equalBytes(input, previousOutput)) return fail("ChainBreak");
  return null;
}

/** What the verifier holds for check 2 onwards. */
export interface ReplayEvidence {
  /** The published result (decoded payload). */
  readonly result: DistroResult;
  /** The trainer's served output state (decoded), or null when it did not decode. */
  readonly servedOutput: DistroState | null;
  /** The replay of the step from the served input state. */
  readonly replayed: {
    readonly own: readonly SparseParam[];
    readonly state: DistroState;
    readonly gradientStep: number;
  };
  /** The other results of the round (for labelling a copy). */
  readonly others: readonly DistroResult[];
  readonly layouts: readonly ChunkLayout[];
}

/**
 * A StateInconsistent `judgement` of `result` as CopiedResult when `result` repeats one of
 * `others` (the round's other results) beyond the tolerance; any other judgement unchanged.
 */
export function labelCopy(
  judgement: Judgement,
  result: DistroResult,
  others: readonly DistroResult[],
  layouts: readonly ChunkLayout[],
  tolerance: VerifyTolerance = VERIFY_TOLERANCE,
): Judgement {
  if (judgement.evidence !== "StateInconsistent") return judgement;
  let overlap = 0;
  for (const other of others) {
    overlap = Math.max(overlap, coefficientOverlap(result.params, other.params, layouts));
  }
  return overlap > tolerance.copyOverlap ? fail("CopiedResult", ppm(overlap)) : judgement;
}

/** Checks 2 to 4 on a replayed step, a failure labelled by {@link labelCopy}. */
export function judgeReplay(
  evidence: ReplayEvidence,
  tolerance: VerifyTolerance = VERIFY_TOLERANCE,
): Judgement {
  const { result, others, layouts } = evidence;
  return labelCopy(judgeUnlabelled(evidence, tolerance), result, others, layouts, tolerance);
}

function judgeUnlabelled(evidence: ReplayEvidence, tolerance: VerifyTolerance): Judgement {
  const { result, servedOutput, replayed, layouts } = evidence;
  if (servedOutput === null || !ownMatchesResult(servedOutput, result.params, layouts)) {
    return fail("StateInconsistent");
  }
  const coefficients = mismatchPpm(compareCoefficients(result.params, replayed.own, layouts));
  if (coefficients > tolerance.coefficientsPpm) return fail("ResultMismatch", coefficients);
  const states = compareStates(servedOutput, replayed.state, layouts);
  let deltaNorm = 0;
  for (const x of replayed.state.delta) deltaNorm += x * x;
  const scale = Math.max(replayed.gradientStep, 1e-4 * Math.sqrt(deltaNorm), Number.MIN_VALUE);
  const relative = Math.max(states.deltaDistance, states.ownDistance) / scale;
  // The own result's coefficients were checked above (the served ones are the published ones).
  if (!(relative <= tolerance.stateRelative)) return fail("StateMismatch", ppm(relative));
  return { verdict: "Pass", evidence: "None", detail: Math.max(coefficients, ppm(relative)) };
}
