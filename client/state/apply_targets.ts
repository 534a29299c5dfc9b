/**
 * Which results rounds a client must have applied by now, in order. Normally one (round
 * `h − 2` in round `h`, round `H − 1` at Cooldown, as `applyPlan` says), plus the round
 * before it when the client skipped a state (the backend's state stream is latest-wins), so
 * a slow client catches up instead of silently diverging.
 *
 * Pure.
 *
 * @module
 */
import {
  type ApplyPlan,
  type CoordinatorState,
  currentRound,
  isTrainingRound,
  roundByHeight,
  roundWitnessQuorum,
} from "../../coordinator/core/mod.ts";

/**
 * The apply plan of round `resultsHeight`'s results (attested by round `resultsHeight + 1`),
 * or null when either round is gone from the ring buffer or the results round did not train.
 */
export function applyPlanFor(state: CoordinatorState, resultsHeight: number): ApplyPlan | null {
  if (resultsHeight < 0) return null;
  const resultsRound = roundByHeight(state, resultsHeight);
  const witnessRound = roundByHeight(state, resultsHeight + 1);
  if (resultsRound === null || witnessRound === null) return null;
  if (!isTrainingRound(state, resultsRound)) return null;
  return { resultsRound, witnessRound, quorum: roundWitnessQuorum(state.config, witnessRound) };
}

/**
 * The plans due in the current state, oldest first: rounds `h − 3` and `h − 2` during
 * RoundTrain/RoundWitness of height `h`; rounds `H − 2` and `H − 1` at Cooldown after round
 * `H`; none otherwise. The newest is exactly `applyPlan(state)`.
 */
export function duePlans(state: CoordinatorState): ApplyPlan[] {
  const height = currentRound(state).height;
  let newest: number;
  switch (state.runState) {
    case "RoundTrain":
    case "RoundWitness":
      newest = height - 2;
      break;
    case "Cooldown":
      newest = height - 1;
      break;
    default:
      return [];
  }
  return plansUpTo(state, newest);
}

/**
 * In WaitingForMembers after an epoch's Cooldown, the plans that Cooldown had due (rounds
 * `H − 2` and `H − 1`, from the rounds the state still holds); none otherwise (a run that has
 * not trained yet, or an epoch that ended in Warmup, holds no training rounds).
 */
export function epochEndPlans(state: CoordinatorState): ApplyPlan[] {
  if (state.runState !== "WaitingForMembers") return [];
  return plansUpTo(state, currentRound(state).height - 1);
}

/** The plans of rounds `newest − 1` and `newest` that exist, oldest first. */
function plansUpTo(state: CoordinatorState, newest: number): ApplyPlan[] {
  const plans: ApplyPlan[] = [];
  for (const h of [newest - 1, newest]) {
    const plan = applyPlanFor(state, h);
    if (plan !== null) plans.push(plan);
  }
  return plans;
}
