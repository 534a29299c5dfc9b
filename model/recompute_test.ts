import assert from "node:assert/strict";
import { activationPlan } from "./recompute.ts";

Deno.test("activationPlan: without recomputation every layer keeps its own set", () => {
  const plan = activationPlan(3, { recompute: false });
  assert.equal(plan.sets, 3);
  assert.deepEqual([0, 1, 2].map((l) => plan.setOf(l)), [0, 1, 2]);
  assert.deepEqual([0, 1, 2].map((l) => plan.rebuildsBeforeBackward(l)), [false, false, false]);
});

Deno.test("activationPlan: with recomputation one shared set, rebuilt for all but the last layer", () => {
  const plan = activationPlan(3, { recompute: true });
  assert.equal(plan.sets, 1);
  assert.deepEqual([0, 1, 2].map((l) => plan.setOf(l)), [0, 0, 0]);
  // The last layer's activations are still in the set when the backward starts.
  assert.deepEqual([0, 1, 2].map((l) => plan.rebuildsBeforeBackward(l)), [true, true, false]);
  assert.equal(activationPlan(1, { recompute: true }).rebuildsBeforeBackward(0), false);
});

Deno.test("activationPlan: rejects a layer count or layer out of range", () => {
  assert.throws(() => activationPlan(0, { recompute: true }), /numLayers must be >= 1, got 0/);
  const plan = activationPlan(2, { recompute: true });
  assert.throws(() => plan.setOf(2), /layer 2 outside \[0, 2\)/);
  assert.throws(() => plan.rebuildsBeforeBackward(-1), /layer -1 outside/);
});
