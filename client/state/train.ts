/**
 * RoundTrain of height `h` (Psyche's shared/client/src/state/train.rs and
 * shared/modeling/src/distro.rs):
 * 1. apply the consensus results of round `h − 2` (attested by round `h − 1`'s witnesses);
 * 2. if this client was a witness of round `h − 1`, report the trainers it did not see;
 * 3. train the assigned batch (unless the epoch is winding down) and publish the result;
 * 4. announce Finished once trained and round `h − 1`'s payloads are settled;
 * 5. as a witness, report as soon as every Healthy client announced Finished
 *    (opportunistic witnessing), instead of waiting for RoundWitness; once a majority has,
 *    the rest get a bounded wait (client/results/straggler_wait.ts), not the whole round.
 *
 * Pure.
 *
 * @module
 */
import { type RoundView, roundView } from "../round_view.ts";
import {
  healthyPeers,
  planApplies,
  planFinished,
  planModel,
  planTraining,
  witnessIntent,
} from "./common.ts";
import { type Intent, intentKey, type PlanInput, roundKey } from "./intent.ts";
import { planKeepParams, planVerifications } from "./verify.ts";
import { equalBytes } from "../../common/mod.ts";
import { unhealthyTrainers } from "../../coordinator/core/mod.ts";

/**
 * Health checks a witness of round `h − 1` sends in round `h >= 2`: the coordinator's
 * `unhealthyTrainers`, restricted to clients that had a batch in round `h − 2` (the round
 * those witnesses attest), and only when round `h − 2` trained.
 */
export function planHealthChecks(input: PlanInput, view: RoundView): Intent[] {
  const { state, signer, progress } = input;
  if (view.height < 2) return [];
  const prev = roundView(state, view.height - 1, signer);
  if (prev === null || prev.self === null || !prev.self.isWitness) return [];
  const attested = roundView(state, view.height - 2, signer);
  if (attested === null || !attested.training) return [];
  // Indices of round h − 2's assignments name clients of that round's list.
  const assigned = attested.assignments.map((a) => attested.clients[a.clientIndex]);
  const checks = unhealthyTrainers(state).filter((c) =>
    assigned.some((a) => a !== undefined && equalBytes(a.id.signer, c.id.signer))
  );
  if (checks.length === 0) return [];
  const intent: Intent = {
    kind: "SendHealthChecks",
    epoch: state.progress.epoch,
    height: view.height,
    checks,
  };
  return progress.started(intentKey(intent)) ? [] : [intent];
}

/** What to do during RoundTrain. */
export function planRoundTrain(input: PlanInput, view: RoundView): Intent[] {
  if (view.self === null) return [];
  const load = planModel(input);
  if (load !== null) return load;
  const out: Intent[] = [...planApplies(input)];
  out.push(...planKeepParams(input, view));
  out.push(...planHealthChecks(input, view));
  out.push(...planTraining(input, view));
  out.push(...planVerifications(input));
  out.push(...planFinished(input, view));
  const epoch = input.state.progress.epoch;
  const finished = input.progress.done(roundKey("AnnounceFinished", epoch, view.height));
  if (finished && input.facts.witnessWaitOver(view.height, healthyPeers(input.state))) {
    out.push(...witnessIntent(input, view));
  }
  return out;
}
