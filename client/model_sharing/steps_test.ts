import assert from "node:assert/strict";
import { runStepsYielding } from "./steps.ts";
import { runSteps } from "../../common/mod.ts";

/**
 * Steps that pause `n` times. Before each pause a probe timer is set; each step records how many
 * probes had fired by then, which grows only where the event loop was given a turn.
 */
function* probed(n: number, seen: number[]): Generator<void, string> {
  let fired = 0;
  for (let i = 0; i < n; i++) {
    seen.push(fired);
    setTimeout(() => fired++, 0);
    yield;
  }
  seen.push(fired);
  return "done";
}

/** The steps after which the loop had turned: where the count of probes fired grew. */
const turnsAfter = (seen: number[]) =>
  seen.flatMap((n, i) => (i > 0 && n > seen[i - 1] ? [i] : []));

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

Deno.test("runSteps runs every step without giving the event loop a turn", async () => {
  const seen: number[] = [];
  assert.equal(runSteps(probed(5, seen)), "done");
  assert.deepEqual(seen, [0, 0, 0, 0, 0, 0]);
  await settle();
});

Deno.test("runStepsYielding turns the event loop at every pause with sliceMs 0", async () => {
  const seen: number[] = [];
  assert.equal(await runStepsYielding(probed(6, seen), { sliceMs: 0 }), "done");
  assert.deepEqual(turnsAfter(seen), [1, 2, 3, 4, 5, 6]);
  await settle();
});

Deno.test("runStepsYielding turns the event loop at the first pause after each slice", async () => {
  // A clock that moves 10 ms per reading: a 25 ms slice has run out at every third pause.
  let t = 0;
  const now = () => (t += 10);
  const seen: number[] = [];
  assert.equal(await runStepsYielding(probed(12, seen), { sliceMs: 25, now }), "done");
  assert.deepEqual(turnsAfter(seen), [3, 6, 9, 12]);
  await settle();
});
