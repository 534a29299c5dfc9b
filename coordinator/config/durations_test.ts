import assert from "node:assert/strict";
import fc from "fast-check";
import { parse, stringify } from "smol-toml";
import { parseRunConfig, validateRunConfig } from "./run_config.ts";
import { testConfig, testModel } from "../../tests/support/coordinator_fixtures.ts";
import type { RunConfig } from "./types.ts";
import { runConfigToToml } from "./write.ts";
import { createCoordinator } from "../core/mod.ts";
import { ConfigError, formatIssue, fromMillis } from "../../common/mod.ts";

// deno-lint-ignore no-explicit-any
type Doc = Record<string, any>;

const BASE: RunConfig = {
  runId: "durations",
  runState: "WaitingForMembers",
  config: testConfig({ epochTime: 600 }),
  model: testModel({ coldStartWarmupSteps: 0 }),
  progress: { epoch: 0, step: 1, epochStartDataIndex: 0 },
};

/** The base run as a TOML document with `config` keys overridden. */
function docWith(config: Doc): string {
  const doc = parse(runConfigToToml(BASE)) as Doc;
  Object.assign(doc.config, config);
  return stringify(doc);
}

function issues(text: string): string[] {
  try {
    parseRunConfig(text, "test.toml");
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map(formatIssue);
    throw error;
  }
  assert.fail("expected a ConfigError");
}

Deno.test("durations take whole milliseconds; integers keep meaning whole seconds", () => {
  const run = parseRunConfig(
    docWith({
      warmup_time: 2.5,
      cooldown_time: 0.25,
      max_round_train_time: 1.5,
      round_witness_time: 0.1,
      epoch_time: 600.001,
      waiting_for_members_extra_time: 0.05,
    }),
    "test.toml",
  );
  assert.equal(run.config.roundWitnessTime, 0.1);
  assert.equal(run.config.warmupTime, 2.5);
  assert.equal(run.config.cooldownTime, 0.25);
  assert.equal(run.config.maxRoundTrainTime, 1.5);
  assert.equal(run.config.epochTime, 600.001);
  assert.equal(run.config.waitingForMembersExtraTime, 0.05);
  assert.deepEqual(parseRunConfig(runConfigToToml(run), "again"), run);
  assert.equal(parseRunConfig(docWith({ round_witness_time: 2 }), "t").config.roundWitnessTime, 2);
});

Deno.test("duration errors name the key, the value and what is wrong", () => {
  assert.deepEqual(issues(docWith({ round_witness_time: 0.0005 })), [
    "config.round_witness_time = 0.0005: must be a whole number of milliseconds (at most 3 " +
    "decimal places) (expected seconds (0..1125899906842.623, at most millisecond precision))",
  ]);
  assert.deepEqual(issues(docWith({ round_witness_time: 0 })), [
    "config.round_witness_time = 0: must be > 0",
  ]);
  assert.match(
    issues(docWith({ cooldown_time: -1 }))[0],
    /^config\.cooldown_time = -1: must not be negative/,
  );
  assert.match(
    issues(docWith({ waiting_for_members_extra_time: 255.5 }))[0],
    /^config\.waiting_for_members_extra_time = 255\.5: must be at most 255 seconds/,
  );
  assert.match(
    issues(docWith({ epoch_time: 1e300 }))[0],
    /^config\.epoch_time = 1e\+300: must be at most/,
  );
  assert.match(
    issues(docWith({ max_round_train_time: "0.1" }))[0],
    /= "0\.1": expected seconds .* found a string/,
  );
  assert.match(
    issues(docWith({ warmup_time: 600.5 }))[0],
    /warmup_time = 600\.5: must be less than config\.epoch_time/,
  );
});

Deno.test("values built in code get the same checks, with the TOML key", () => {
  const run: RunConfig = { ...BASE, config: { ...BASE.config, roundWitnessTime: 0.0001 } };
  assert.deepEqual(validateRunConfig(run).map((i) => `${i.path}: ${i.message}`), [
    "config.round_witness_time: must be a whole number of milliseconds (at most 3 decimal " +
    "places) (a duration in seconds)",
  ]);
  assert.throws(
    () => createCoordinator({ runId: "r", config: run.config, model: BASE.model, now: 0 }),
    /config\.roundWitnessTime \(seconds\) must be a whole number of milliseconds.*found 0\.0001/,
  );
  assert.throws(
    () =>
      createCoordinator({
        runId: "r",
        config: { ...BASE.config, roundWitnessTime: 0 },
        model: BASE.model,
        now: 0,
      }),
    /config\.roundWitnessTime \(seconds\) must be > 0, found 0/,
  );
});

Deno.test("the cold-start bound divides fractional durations exactly", () => {
  // (0.7 - 0.1) / 0.2 is 2.9999999999999996 in floats; in milliseconds it is exactly 3.
  const doc = (steps: number) => {
    const d = parse(docWith({ epoch_time: 0.7, warmup_time: 0.1, max_round_train_time: 0.2 }));
    (d as Doc).model.LLM.cold_start_warmup_steps = steps;
    return stringify(d);
  };
  assert.equal(parseRunConfig(doc(3), "t").model.coldStartWarmupSteps, 3);
  assert.match(issues(doc(4))[0], /\(0\.7 - 0\.1\) \/ 0\.2 = 3 \(rounds in one epoch\)/);
  const config = { ...BASE.config, epochTime: 0.7, warmupTime: 0.1, maxRoundTrainTime: 0.2 };
  const model = { ...BASE.model, coldStartWarmupSteps: 3 };
  assert.equal(createCoordinator({ runId: "r", config, model, now: 0 }).config.epochTime, 0.7);
});

Deno.test("property: millisecond durations survive TOML and validation unchanged", () => {
  const ms = (min: number, max: number) => fc.integer({ min, max }).map(fromMillis);
  fc.assert(
    fc.property(
      ms(1, 100_000),
      ms(1, 100_000),
      ms(1, 255_000),
      ms(0, 99_999),
      (roundWitnessTime, cooldownTime, waitingForMembersExtraTime, warmupTime) => {
        const run: RunConfig = {
          ...BASE,
          config: {
            ...BASE.config,
            roundWitnessTime,
            cooldownTime,
            waitingForMembersExtraTime,
            warmupTime,
            maxRoundTrainTime: 0.5,
            epochTime: 100,
          },
        };
        assert.deepEqual(validateRunConfig(run), []);
        assert.deepEqual(parseRunConfig(runConfigToToml(run), "round trip"), run);
      },
    ),
    { numRuns: 100 },
  );
});
