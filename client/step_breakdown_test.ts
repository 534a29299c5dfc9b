import assert from "node:assert/strict";
import { MAX_PHASE_MS, STEP_PHASES } from "../coordinator/server/mod.ts";
import { stepBreakdown } from "./step_breakdown.ts";

const MOMENTS = {
  roundStart: 1000,
  trainStart: 1020,
  trainEnd: 1820,
  publishEnd: 1850,
  applyQueued: 2400,
  applyStart: 2450,
  applyEnd: 2500,
};

Deno.test("the five parts of a step add up to its wall time at the client", () => {
  const ms = stepBreakdown(MOMENTS);
  assert.deepEqual(ms, { train: 800, encode: 30, exchange: 550, apply: 50, wait: 70 });
  const total = STEP_PHASES.reduce((sum, phase) => sum + ms[phase], 0);
  assert.equal(total, MOMENTS.applyEnd - MOMENTS.roundStart);
});

Deno.test("a clock that went back, or a span over a day, stays a value the decoder accepts", () => {
  const ms = stepBreakdown({ ...MOMENTS, trainStart: 900, applyQueued: 1e12, applyStart: 2450 });
  assert.equal(ms.wait, 0, "train began before the round was seen: no negative wait");
  assert.equal(ms.exchange, MAX_PHASE_MS);
  for (const phase of STEP_PHASES) {
    assert.ok(ms[phase] >= 0 && ms[phase] <= MAX_PHASE_MS && Number.isFinite(ms[phase]), phase);
  }
  assert.equal(stepBreakdown({ ...MOMENTS, applyEnd: NaN }).apply, 0);
});
