/**
 * Plan pieces shared by the per-state planners: applying due results, training the
 * assigned batch, announcing Finished, and the peers whose announcements a round waits for.
 *
 * Pure.
 *
 * @module
 */
import { type RoundView, stepLearningRate, stepOfHeight } from "../round_view.ts";
import { duePlans } from "./apply_targets.ts";
import {
  type ApplyIntent,
  applyKey,
  type Intent,
  intentKey,
  type PlanInput,
  roundKey,
} from "./intent.ts";
import type { PublicKeyBytes } from "../../common/mod.ts";
import {
  type ApplyPlan,
  type CoordinatorState,
  currentRound,
  roundAssignments,
} from "../../coordinator/core/mod.ts";

/** p2p keys of the epoch's Healthy clients: whose announcements a round waits for. */
export function healthyPeers(state: CoordinatorState): PublicKeyBytes[] {
  return state.epochState.clients.filter((c) => c.state === "Healthy").map((c) => c.id.p2pIdentity);
}

/**
 * Last round height at which a client without a model may still load one mid-epoch. Peers
 * serve the epoch's starting model, and the first results (round 0's) are applied at
 * height 2; a load that starts later has missed applies it can no longer replay.
 */
export const LAST_LOAD_HEIGHT = 2;

/**
 * The model load a round needs before anything else (a client whose Warmup was cut short),
 * or nothing once the model is ready. Returns null when the model is ready. A client that
 * arrives too late in the epoch (e.g. a process restarted mid-epoch while still listed as a
 * member) sits the epoch out rather than train on a model that has diverged from its peers.
 */
export function planModel(input: PlanInput): Intent[] | null {
  if (input.progress.modelReady) return null;
  const { state } = input;
  if (
    (state.runState === "RoundTrain" || state.runState === "RoundWitness") &&
    currentRound(state).height > LAST_LOAD_HEIGHT
  ) return [];
  const load: Intent = { kind: "LoadModel", epoch: state.progress.epoch };
  return input.progress.started(intentKey(load)) ? [] : [load];
}

/**
 * Apply intents due now and not yet started, oldest first: `plans` (the state's due plans by
 * default) of `epoch` (the state's by default).
 */
export function planApplies(
  input: PlanInput,
  plans: ApplyPlan[] = duePlans(input.state),
  epoch = input.state.progress.epoch,
): ApplyIntent[] {
  const { state, progress } = input;
  const out: ApplyIntent[] = [];
  for (const plan of plans) {
    if (progress.started(applyKey(epoch, plan.resultsRound.height))) continue;
    const step = stepOfHeight(state, plan.resultsRound.height);
    out.push({
      kind: "Apply",
      epoch,
      plan,
      step,
      lr: stepLearningRate(state, step),
      batches: roundAssignments(state, plan.resultsRound).map((a) => a.batch),
    });
  }
  return out;
}

/**
 * Whether every apply of `plans` (the state's due plans by default) of `epoch` (the state's by
 * default) completed: training must wait for them.
 */
export function appliesDone(
  input: PlanInput,
  plans: ApplyPlan[] = duePlans(input.state),
  epoch = input.state.progress.epoch,
): boolean {
  return plans.every((p) => input.progress.done(applyKey(epoch, p.resultsRound.height)));
}

/** Whether this client has a batch to train in the round. */
export function needsTraining(view: RoundView): boolean {
  return view.training && view.self !== null && view.self.batch !== null;
}

/**
 * Training of the round, or the load of a missing model first. Training waits for the model
 * and every due apply; nothing when the round does not train this client or training began.
 */
export function planTraining(input: PlanInput, view: RoundView): Intent[] {
  const { state, progress } = input;
  const epoch = state.progress.epoch;
  if (!progress.modelReady || !appliesDone(input)) return [];
  // A verifying run keeps the round's θ first: training and weight decay change it in place.
  const verifying = state.config.verificationPercent > 0;
  if (verifying && !progress.done(roundKey("KeepParams", epoch, view.height))) return [];
  if (!needsTraining(view) || view.self === null || view.self.batch === null) {
    return planDecay(input, view);
  }
  const train: Intent = {
    kind: "Train",
    epoch,
    height: view.height,
    step: view.step,
    batch: view.self.batch,
    proof: view.self.committeeProof,
    lr: stepLearningRate(state, view.step),
    prevLr: stepLearningRate(state, Math.max(0, view.step - 1)),
    resetOptimizer: state.epochState.coldStartEpoch && view.height === 0,
  };
  return progress.started(intentKey(train)) ? [] : [train];
}

/**
 * For a client in a training round without a batch, under a DisTrO optimizer with weight
 * decay: the decay the trainers apply in generate, once per round.
 */
function planDecay(input: PlanInput, view: RoundView): Intent[] {
  const { state, progress } = input;
  const optimizer = state.model.optimizer;
  if (!view.training || view.self === null) return [];
  if (optimizer.kind !== "Distro" || !optimizer.weightDecay) return [];
  const decay: Intent = {
    kind: "DecayWeights",
    epoch: state.progress.epoch,
    height: view.height,
    lr: stepLearningRate(state, view.step),
  };
  return progress.started(intentKey(decay)) ? [] : [decay];
}

/**
 * `Finished` for the round once this client's training is done (or it has none), its due
 * applies are done, and every announced payload of the previous round is settled, or a majority
 * of them is and the rest had their time (client/results/straggler_wait.ts): a trainer whose
 * bytes crawl in does not hold every other client's Finished, and so every witness.
 */
export function planFinished(input: PlanInput, view: RoundView): Intent[] {
  const { state, progress, facts } = input;
  if (view.self === null) return [];
  const epoch = state.progress.epoch;
  const intent: Intent = {
    kind: "AnnounceFinished",
    epoch,
    height: view.height,
    step: view.step,
    proof: view.self.committeeProof,
  };
  if (progress.started(intentKey(intent))) return [];
  const trained = !needsTraining(view) ||
    progress.done(roundKey("Train", epoch, view.height));
  const settled = view.height === 0 || facts.downloadsWaitOver(view.height - 1);
  // Applied too, so the witness report that follows carries the digest of this round's
  // parameters (a round that does not train would otherwise not wait for its apply).
  return trained && settled && appliesDone(input) ? [intent] : [];
}

/** The witness report of the round, if this client holds a seat and has not sent it. */
export function witnessIntent(input: PlanInput, view: RoundView): Intent[] {
  if (view.self === null || !view.self.isWitness) return [];
  const intent: Intent = {
    kind: "SendWitness",
    epoch: input.state.progress.epoch,
    height: view.height,
    step: view.step,
    proof: view.self.witnessProof,
  };
  return input.progress.started(intentKey(intent)) ? [] : [intent];
}
