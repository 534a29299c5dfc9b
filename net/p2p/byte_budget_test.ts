import assert from "node:assert/strict";
import { RoundByteBudget } from "./byte_budget.ts";

Deno.test("a peer's charges add up per round and stop at the limit", () => {
  const budget = new RoundByteBudget();
  assert.ok(budget.charge("a", { round: 3, bytes: 400, limit: 1000 }));
  assert.ok(budget.charge("a", { round: 3, bytes: 600, limit: 1000 }), "exactly the limit");
  assert.ok(!budget.charge("a", { round: 3, bytes: 1, limit: 1000 }), "one byte past it");
  assert.equal(budget.spent("a", 3), 1000, "a refused charge charges nothing");
  assert.ok(budget.charge("b", { round: 3, bytes: 1000, limit: 1000 }), "peers are separate");
  assert.ok(budget.charge("a", { round: 4, bytes: 1000, limit: 1000 }), "rounds are separate");
  assert.ok(budget.charge("a", { round: 3, bytes: 0, limit: 1000 }), "nothing always fits");
});

Deno.test("forgetBefore drops old rounds only", () => {
  const budget = new RoundByteBudget();
  budget.charge("a", { round: 1, bytes: 10, limit: 10 });
  budget.charge("a", { round: 2, bytes: 10, limit: 10 });
  budget.forgetBefore(2);
  assert.equal(budget.spent("a", 1), 0);
  assert.equal(budget.spent("a", 2), 10);
});

Deno.test("negative or fractional amounts are refused with the field's name", () => {
  const budget = new RoundByteBudget();
  assert.throws(() => budget.charge("a", { round: 1, bytes: -1, limit: 10 }), /bytes must be/);
  assert.throws(() => budget.charge("a", { round: 1.5, bytes: 1, limit: 10 }), /round must be/);
  assert.throws(() => budget.charge("a", { round: 1, bytes: 1, limit: NaN }), /limit must be/);
});
