import assert from "node:assert/strict";
import { testConfig } from "../../tests/support/coordinator_fixtures.ts";
import { describeFit, fitBudgets, MIN_ROUNDS_PER_EPOCH, ROUND_MARGIN } from "./calibrate.ts";

Deno.test("fitBudgets raises the round, Warmup and epoch times to the measured pace, never lowers", () => {
  const config = testConfig({
    maxRoundTrainTime: 30,
    warmupTime: 15,
    epochTime: 120,
    roundWitnessTime: 2,
  });
  // A busy machine: 8 s a step alone, 3 clients sharing it.
  const slow = fitBudgets(config, { firstStepMs: 20_000, stepMs: 8_000, sequences: 2 }, 3);
  assert.equal(slow.maxRoundTrainTime, Math.ceil(ROUND_MARGIN * 8 * 3) + 5);
  assert.equal(slow.warmupTime, Math.ceil(1.5 * 28 * 3) + 10);
  assert.equal(
    slow.epochTime,
    slow.warmupTime + MIN_ROUNDS_PER_EPOCH * (ROUND_MARGIN * 8 * 3 + 2), // rounds at the pace
  );
  assert.ok(slow.warmupTime < slow.epochTime && slow.maxRoundTrainTime < slow.epochTime);
  // A fast machine keeps the config's own times.
  const fast = fitBudgets(config, { firstStepMs: 900, stepMs: 200, sequences: 2 }, 3);
  assert.deepEqual(fast, { ...config, initMinClients: 3 });
  assert.match(
    describeFit({ firstStepMs: 900, stepMs: 200, sequences: 2 }, 3, config, fast),
    /takes 0\.2 s here .* already allows 30 s per round, 15 s of Warmup and 120 s per epoch; an epoch starts once 3 clients joined$/,
  );
  assert.match(
    describeFit({ firstStepMs: 20_000, stepMs: 8_000, sequences: 2 }, 3, config, slow),
    /takes 8\.0 s here \(the first, building the GPU pipelines, 20\.0 s\); with 3 clients .* now allows 53 s per round/,
  );
});

Deno.test("fitBudgets makes an epoch wait for every client the testnet starts, up to max_clients", () => {
  const cost = { firstStepMs: 900, stepMs: 200, sequences: 2 };
  const config = testConfig({ initMinClients: 1, minClients: 1, maxClients: 4 });
  // The extra wait counts from WaitingForMembers' start: a slow client start outlasts it.
  const three = fitBudgets(config, cost, 3);
  assert.equal(three.initMinClients, 3);
  assert.equal(three.minClients, 1); // a client that dies later does not stop the run
  assert.match(describeFit(cost, 3, config, three), /; an epoch starts once 3 clients joined$/);
  assert.equal(fitBudgets(config, cost, 9).initMinClients, 4);
  // Never lowered.
  assert.equal(fitBudgets(testConfig({ initMinClients: 5 }), cost, 3).initMinClients, 5);
  assert.doesNotMatch(
    describeFit(
      cost,
      3,
      testConfig({ initMinClients: 5 }),
      fitBudgets(testConfig({ initMinClients: 5 }), cost, 3),
    ),
    /an epoch starts/,
  );
});
