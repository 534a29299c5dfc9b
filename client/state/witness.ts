/**
 * RoundWitness of height `h` (as Psyche's client, shared/client/src/state/): the round's time is
 * up, so a witness that has not reported yet reports what it has now. A client that is behind still
 * applies, trains and announces (its result is attested by round `h + 1`'s witnesses).
 *
 * Pure.
 *
 * @module
 */
import type { RoundView } from "../round_view.ts";
import { planApplies, planFinished, planModel, planTraining, witnessIntent } from "./common.ts";
import type { Intent, PlanInput } from "./intent.ts";
import { planKeepParams, planVerifications } from "./verify.ts";

/** What to do during RoundWitness. */
export function planRoundWitness(input: PlanInput, view: RoundView): Intent[] {
  if (view.self === null) return [];
  const load = planModel(input);
  if (load !== null) return load;
  const out: Intent[] = [...planApplies(input)];
  out.push(...planKeepParams(input, view));
  out.push(...witnessIntent(input, view));
  out.push(...planTraining(input, view));
  out.push(...planVerifications(input));
  out.push(...planFinished(input, view));
  return out;
}
