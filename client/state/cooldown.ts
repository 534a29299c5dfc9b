/**
 * Cooldown after the epoch's last round `H` (docs/protocol.md, "The end of an epoch"):
 * apply round `H − 1`'s results with round `H`'s witnesses (an epoch that ended early
 * loses only round `H`), then serve the parameters to the next epoch's joiners (P2P model
 * sharing, which also labels them with their digest; with the run's `snapshotDtype` bf16 every
 * client first rounds them to bf16) and write the checkpoint, so both hold every applied step;
 * a witness of round `H` then reports that digest to the coordinator. With Hub uploads, the
 * Cooldown's elected checkpointers upload the checkpoint (client/checkpoints/), and the first
 * to report it ends the Cooldown.
 *
 * Pure.
 *
 * @module
 */
import { epochIndexOf, roundView } from "../round_view.ts";
import { epochEndPlans } from "./apply_targets.ts";
import { appliesDone, planApplies } from "./common.ts";
import { type Intent, intentKey, type PlanInput } from "./intent.ts";
import { planVerifications } from "./verify.ts";
import { equalBytes } from "../../common/mod.ts";
import {
  CheckpointerSelection,
  type CoordinatorState,
  currentRound,
} from "../../coordinator/core/mod.ts";

/** What to do during Cooldown. */
export function planCooldown(input: PlanInput): Intent[] {
  const { state, signer, progress } = input;
  if (!progress.modelReady) return [];
  if (epochIndexOf(state, signer) < 0) return [];
  const out: Intent[] = [...planApplies(input), ...planVerifications(input)];
  if (!appliesDone(input)) return out;
  const share = shareIntent(state, state.progress.epoch);
  if (!progress.started(intentKey(share))) out.push(share);
  if (progress.done(intentKey(share))) out.push(...cooldownWitness(input));
  out.push(...checkpoint(input, state.progress.epoch));
  return out;
}

/**
 * In the WaitingForMembers after an epoch this client was a member of, the Cooldown work it never
 * did, because it never saw that Cooldown (a backlog of states skipped, a follower too slow): the
 * applies of the epoch's last results, from the rounds the state still holds, then the snapshot
 * that labels (and, for a bf16 run, rounds) the parameters the next epoch starts from. Otherwise
 * it would start that epoch without them and fetch them from its peers; after an outage, where
 * every client missed the Cooldown, nobody could serve them. The checkpoint too, with a folder.
 * Keyed by the ended epoch, so what was done in Cooldown is not done again. The Cooldown witness
 * is past its time.
 */
export function planMissedCooldown(input: PlanInput): Intent[] {
  const { state, signer, progress } = input;
  const ended = state.progress.epoch - 1;
  if (!progress.modelReady || input.diverged || input.lastMemberEpoch !== ended) return [];
  // The state must still hold the ended epoch, trained and listing this client (not an epoch
  // whose Warmup failed since, or a run that has not trained).
  const { clients, exitedClients, startStep } = state.epochState;
  if (state.progress.step <= startStep) return [];
  if (![...clients, ...exitedClients].some((c) => equalBytes(c.id.signer, signer))) return [];
  const plans = epochEndPlans(state);
  const out: Intent[] = planApplies(input, plans, ended);
  if (!appliesDone(input, plans, ended)) return out;
  const share = shareIntent(state, ended);
  if (!progress.started(intentKey(share))) out.push(share);
  out.push(...checkpoint(input, ended));
  return out;
}

/** The snapshot of the parameters the epoch after `epoch` starts from. */
function shareIntent(state: CoordinatorState, epoch: number): Intent {
  return {
    kind: "ShareModel",
    epoch,
    step: state.progress.step,
    snapshotDtype: state.model.snapshotDtype,
  };
}

/**
 * The checkpoint of the parameters the epoch after `epoch` starts from: once, with a folder. In
 * Cooldown, a client that uploads learns whether it is one of the Cooldown's elected
 * checkpointers; a checkpoint written after a missed Cooldown is never uploaded (nobody would
 * take its report any more).
 */
function checkpoint(input: PlanInput, epoch: number): Intent[] {
  const { state, signer } = input;
  if (!input.checkpoints) return [];
  const elect = input.hubUpload === true && state.runState === "Cooldown";
  const checkpointers = elect ? CheckpointerSelection.fromState(state).indices() : [];
  const index = state.epochState.clients.findIndex((c) => equalBytes(c.id.signer, signer));
  const intent: Intent = {
    kind: "Checkpoint",
    epoch,
    step: state.progress.step,
    checkpointers,
    upload: index >= 0 && checkpointers.includes(index),
  };
  return input.progress.started(intentKey(intent)) ? [] : [intent];
}

/** The Cooldown witness of a witness of the epoch's last round, once, after the snapshot. */
function cooldownWitness(input: PlanInput): Intent[] {
  const { state, signer, progress } = input;
  const view = roundView(state, currentRound(state).height, signer);
  if (view === null || view.self === null || !view.self.isWitness) return [];
  const intent: Intent = {
    kind: "SendCooldownWitness",
    epoch: state.progress.epoch,
    step: state.progress.step,
    proof: view.self.witnessProof,
  };
  return progress.started(intentKey(intent)) ? [] : [intent];
}
