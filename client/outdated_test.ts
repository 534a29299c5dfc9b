import assert from "node:assert/strict";
import { movedOn } from "./outdated.ts";
import { runInRound0 } from "./testing/fixtures.ts";

Deno.test("movedOn: another run state, epoch or step is moved on; the same position is not", () => {
  const { driver } = runInRound0(3);
  const planned = structuredClone(driver.state);
  const same = structuredClone(planned);
  assert.equal(movedOn(planned, planned), false);
  assert.equal(movedOn(planned, same), false, "a copy of the same position");
  assert.equal(movedOn(null, same), false);
  assert.equal(movedOn(planned, null), false);
  const witness = structuredClone(planned);
  witness.runState = "RoundWitness";
  assert.equal(movedOn(planned, witness), true);
  const nextStep = structuredClone(planned);
  nextStep.progress.step += 1;
  assert.equal(movedOn(planned, nextStep), true);
  const nextEpoch = structuredClone(planned);
  nextEpoch.progress.epoch += 1;
  assert.equal(movedOn(planned, nextEpoch), true);
});
