/**
 * The end of an epoch: Cooldown ends when its timer fires, or earlier, when the first of its
 * elected checkpointers reports the model it uploaded (Psyche's `tick_cooldown` and
 * `checkpoint`, shared/coordinator/src/coordinator.rs, as upstream reworked them: checkpointers
 * elected at Cooldown, the first upload ends the phase).
 *
 * A report is taken only from an elected checkpointer (checkpointer_selection.ts), only during
 * Cooldown, and only once the Cooldown's digest vote has a quorum (params_digest.ts): ending
 * Cooldown tallies that vote, so the step whose parameters the upload holds always has its
 * digest recorded, and a joiner can check the uploaded model against it. Before the quorum a
 * report is refused (the checkpointer sends it again once the vote is in).
 *
 * Same contract as the rest of the machine: mutate in place, or throw before mutating.
 *
 * @module
 */

import { checkpointAfterCooldown, checkpointAfterReport } from "./checkpoint_lifecycle.ts";
import { CheckpointerSelection } from "./checkpointer_selection.ts";
import { CoordinatorError } from "./errors.ts";
import {
  changeState,
  checkNow,
  moveClientsToExited,
  type Outcome,
  stateAfterEpoch,
  withdrawHealthyClients,
} from "./machine_core.ts";
import { currentRound, phaseDigestVote, roundBatchSize } from "./machine_queries.ts";
import { tallyDigestVotes } from "./params_digest.ts";
import type { Checkpoint, CoordinatorState, NodeIdentity } from "./types.ts";
import { dropVerificationTasks } from "./verification.ts";
import { roundWitnessQuorum } from "./witness_quorum.ts";
import { equalBytes } from "../../common/mod.ts";

/**
 * Ends the Cooldown at `now` (its timer fired, or a checkpointer reported): tallies the last
 * round's witnesses' digest votes (the parameters the next epoch starts from), moves the data
 * index and the epoch on, drops the clients that left and the open verification tasks, turns
 * the checkpoint to P2P (checkpoint_lifecycle.ts), and goes to Paused (a pending pause),
 * Finished or WaitingForMembers. The caller checked that the run is in Cooldown.
 */
export function endCooldown(state: CoordinatorState, now: number): Outcome {
  const round = currentRound(state);
  // The last round's witnesses voted for the parameters the next epoch starts from.
  tallyDigestVotes(state, roundWitnessQuorum(state.config, round));
  const { progress, epochState: es } = state;
  progress.epochStartDataIndex = round.dataIndex + roundBatchSize(state, round);
  progress.epoch += 1;
  moveClientsToExited(state, round.height + 1);
  dropVerificationTasks(state);
  state.model.checkpoint = checkpointAfterCooldown(state.model.checkpoint);
  if (state.pendingPause) {
    withdrawHealthyClients(es.clients);
    state.pendingPause = false;
    es.coldStartEpoch = true;
    changeState(state, "Paused", now);
  } else {
    es.coldStartEpoch = false;
    changeState(state, stateAfterEpoch(state), now);
  }
  return { kind: "EpochEnd", success: true };
}

/**
 * Client `index` (who must be `from`, Healthy, and one of this Cooldown's elected checkpointers)
 * uploaded the model to `repo` (a `Hub` or `Gcs` checkpoint): the run's checkpoint now points
 * there (checkpoint_lifecycle.ts `checkpointAfterReport`) and Cooldown ends at once
 * ({@linkcode endCooldown}), so the first checkpointer to finish ends the phase and the others'
 * reports find the run moved on.
 *
 * Throws, in this order: `WrongRunState` when the run is Uninitialized; `InvalidCheckpoint` when
 * `index` is no client or not the sender's; `WrongRunState` outside Cooldown; `InvalidCheckpoint`
 * when the client is not Healthy, not elected, reports a malformed or ill-fitting repo, or the
 * Cooldown's digest vote has no quorum yet.
 */
export function checkpoint(
  state: CoordinatorState,
  from: NodeIdentity,
  index: number,
  repo: Checkpoint,
  now: number,
): Outcome {
  checkNow(now);
  if (state.runState === "Uninitialized") {
    throw new CoordinatorError("WrongRunState", "checkpoint before the run started");
  }
  const client = Number.isSafeInteger(index) ? state.epochState.clients[index] : undefined;
  if (client === undefined) {
    throw new CoordinatorError("InvalidCheckpoint", `no client ${String(index)}`);
  }
  if (!(from?.signer instanceof Uint8Array) || !equalBytes(client.id.signer, from.signer)) {
    throw new CoordinatorError("InvalidCheckpoint", `client ${index} is not the sender`);
  }
  if (state.runState !== "Cooldown") {
    throw new CoordinatorError(
      "WrongRunState",
      `checkpoint report in ${state.runState}: checkpointers report during Cooldown only`,
    );
  }
  if (client.state !== "Healthy") {
    throw new CoordinatorError("InvalidCheckpoint", `client ${index} is ${client.state}`);
  }
  const selection = CheckpointerSelection.fromState(state);
  if (!selection.isCheckpointer(index)) {
    throw new CoordinatorError(
      "InvalidCheckpoint",
      `client ${index} is not an elected checkpointer of epoch ${state.progress.epoch} ` +
        `(elected: ${selection.indices().join(", ")})`,
    );
  }
  const next = checkpointAfterReport(state.model.checkpoint, repo);
  const { consensus, votes, quorum } = phaseDigestVote(state);
  if (consensus === null) {
    throw new CoordinatorError(
      "InvalidCheckpoint",
      `the Cooldown digest vote has no quorum yet (${votes} votes, ${quorum} agreeing ` +
        `needed): a checkpoint ends Cooldown only once the parameters it holds are recorded`,
    );
  }
  state.model.checkpoint = next;
  return endCooldown(state, now);
}
