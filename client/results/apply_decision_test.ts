import assert from "node:assert/strict";
import { witnessReport } from "../../tests/support/coordinator_fixtures.ts";
import { decideApply } from "./apply_decision.ts";
import { applyPlanFor } from "../state/apply_targets.ts";
import { RoundTracker } from "./round_tracker.ts";
import { roundView } from "../round_view.ts";
import { announcementOf, runInRound0, testBlooms } from "../testing/fixtures.ts";
import {
  currentRound,
  roundSelection,
  witness as witnessImpl,
} from "../../coordinator/core/mod.ts";

Deno.test("decideApply: quorum-backed commitments are chosen, the rest counted untrained", () => {
  const { driver, ids } = runInRound0(3);
  const state = driver.state;
  const view0 = roundView(state, 0, ids[0].signer)!;
  const [a0, a1, a2] = view0.assignments;
  const honest = [a0, a1, a2].map((a) => announcementOf(view0, a.clientIndex));
  const rival = announcementOf(view0, a1.clientIndex, 7); // a2nd commitment for a1's batch
  driver.fullRound(); // round 0 → round 1
  // Round 1's witnesses (all three: quorum 2) saw a0's result; two saw rival for a1; none a2.
  const witnesses = roundSelection(state.config, currentRound(state)).witnessIndices();
  for (const [n, index] of witnesses.entries()) {
    const broadcast = [honest[0].commitment, n < 2 ? rival.commitment : honest[1].commitment];
    witnessImpl(state, ids[index], witnessReport(state, index, ids, broadcast), driver.now);
  }
  driver.witnessTimeout(); // → round 2
  const plan = applyPlanFor(state, 0)!;
  assert.equal(plan.quorum, 2);
  const tracker = new RoundTracker(view0, testBlooms(state));
  for (const m of honest) {
    assert.equal(tracker.acceptResult(ids[m.proof.index].p2pIdentity, m).accepted, true);
  }
  // The rival reached us through another path (its sender equivocated); both are candidates.
  const candidates = (batch: { start: number; end: number }) => {
    const list = tracker.candidates(batch);
    return batch.start === a1.batch.start ? [...list, rival.commitment] : list;
  };
  const decision = decideApply(plan, view0.assignments.map((a) => a.batch).reverse(), candidates);
  assert.equal(decision.resultsHeight, 0);
  assert.deepEqual(decision.chosen.map((c) => c.batch), [a0.batch, a1.batch]);
  assert.deepEqual(decision.chosen[0].commitment, honest[0].commitment);
  assert.deepEqual(decision.chosen[1].commitment, rival.commitment);
  assert.deepEqual(decision.untrained, [a2.batch]);
});

Deno.test("decideApply: no witnesses, everything untrained", () => {
  const { driver, ids } = runInRound0(3);
  const view0 = roundView(driver.state, 0, ids[0].signer)!;

  const plan = {
    resultsRound: view0.round,
    witnessRound: { ...view0.round, witnesses: [] },
    quorum: 2,
  };
  const d = decideApply(plan, view0.assignments.map((a) => a.batch), () => [new Uint8Array(32)]);
  assert.equal(d.chosen.length, 0);
  assert.equal(d.untrained.length, 3);
});
